package report

import (
	"strconv"

	"github.com/meshbench/meshbench/results"
)

// startupSection: how long the app's pods took to start in each mode, from creation to each phase (results.PodStartup),
// over every pod a switch started; only for runs whose switches started pods (a deploy, a sidecar switch's restart,
// or startup.restartApp).
func (r Report) startupSection() (section, bool) {
	s := section{Title: "Pod startup per mode"}
	byMode := map[results.Mode][]results.PodStartup{}
	var modes []results.Mode
	for _, c := range r.Cases {
		if len(c.PodStartups) == 0 {
			continue
		}
		if _, ok := byMode[c.Mode]; !ok {
			modes = append(modes, c.Mode)
		}
		byMode[c.Mode] = append(byMode[c.Mode], c.PodStartups...)
	}
	if len(modes) == 0 {
		return s, false
	}
	results.SortModes(modes)
	s.para("Seconds from each app pod's creation to each phase of its start, over the pods the mode switches started (every repetition): scheduled, initialized (init containers done: istio-cni's and the injector's), the istio-proxy container running (sidecar), the last application container running and Ready. Kubernetes stamps these in whole seconds. With native sidecars the application starts once the proxy is ready, so containers-started minus proxy-started is the proxy's own start. A mode with no row had no pod start in it: set startup.restartApp to restart the app after every switch.")
	var rows [][]string
	for _, m := range modes {
		ps := byMode[m]
		redirected := 0
		for _, p := range ps {
			if p.Redirected {
				redirected++
			}
		}
		for _, st := range results.StartupDistribution(ps) {
			rows = append(rows, []string{string(m), string(st.Phase), strconv.Itoa(st.N), fmtSeconds(st.Min), fmtSeconds(st.P50), fmtSeconds(st.P90), fmtSeconds(st.Max)})
		}
		if redirected > 0 {
			rows = append(rows, []string{string(m), "redirected by istio-cni", strconv.Itoa(redirected) + " of " + strconv.Itoa(len(ps)), "", "", "", ""})
		}
	}
	s.table(table{ID: "startup", Header: []string{"mode", "phase", "pods", "min (s)", "p50 (s)", "p90 (s)", "max (s)"},
		Numeric: []bool{false, false, true, true, true, true, true}, Rows: rows})
	return s, true
}

// fmtSeconds is a whole-second Kubernetes duration.
func fmtSeconds(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
