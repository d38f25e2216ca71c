package report

import "github.com/meshbench/meshbench/results"

// sharedSection splits each shared component's average into what it costs with the app deployed and idle, and what
// the run's load added: neither is the app's cost alone, since one instance serves more than the app.
func (r Report) sharedSection() (section, bool) {
	s := section{Title: "Shared components: fixed and load-driven cost"}
	if len(r.Summary.Shared) == 0 {
		return s, false
	}
	s.para("A ztunnel serves every ambient pod of its node, a waypoint the namespaces that use it, istiod the whole mesh, istio-cni every pod of its node: their cost is not the app's. Fixed is the idle window's average (app deployed, no load), load-driven the load window's average minus the idle one of the same repetition (fixed + load-driven = the load window's average); mean ± half the %s confidence interval over repetitions.", confPct(r.Summary.Confidence))
	var rows [][]string
	for _, c := range r.Summary.Shared {
		perK := "n/a: no achieved rate"
		if c.IncrementalPerKRPS != nil {
			perK = fmtEstimate(*c.IncrementalPerKRPS) + " " + string(c.IncrementalPerKRPS.Unit)
		}
		rows = append(rows, []string{c.Topology, orText(string(c.Mode), "(none)"), windowLabel(results.WindowLoad, c.Load), string(c.Component),
			string(c.Metric) + " (" + string(c.Unit) + ")", fmtEstimate(c.Fixed), fmtEstimate(c.Incremental), perK, c.Serves})
	}
	s.table(table{ID: "shared-table",
		Header:  []string{"topology", "mode", "window", "component", "metric", "fixed (idle)", "load-driven", "load-driven per 1000 rps", "one instance serves"},
		Numeric: []bool{false, false, false, false, false, true, true, true, false}, Rows: rows})
	return s, true
}
