package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// cniSection is study B's table: rows path x test (results.CNIRows, the table meshbench cni prints), with value,
// CI, unit and tool, the host baseline ratio and band, and a reason for every test that did not produce a value.
func (r Report) cniSection() (section, bool) {
	s := section{Title: "Pod network"}
	rows := results.CNIRows(r.Summary)
	if len(rows) == 0 {
		return s, false
	}
	slices.SortStableFunc(rows, func(a, b results.CNIRow) int {
		if c := compareBy(a.Test, b.Test, charts.SortTests); c != 0 {
			return c
		}
		return compareBy(a.Path, b.Path, charts.SortPaths)
	})
	host := map[string]results.CNIRow{} // test -> the host path's row
	for _, rw := range rows {
		if rw.Path == string(results.CNIPathHost) && rw.N > 0 {
			host[rw.Test] = rw
		}
	}
	var out [][]string
	var notes []string
	missing := map[string]map[string]string{} // test -> path -> reason
	for _, rw := range rows {
		if rw.N == 0 {
			reason := fmt.Sprintf("%s (case %s): %s", rw.Status, orText(rw.CaseID, "not recorded"), orText(rw.Reason, "no reason recorded"))
			notes = append(notes, fmt.Sprintf("Note %d: %s %s not measured: %s", len(notes)+1, rw.Path, rw.Test, reason))
			ref := fmt.Sprintf("see note %d", len(notes))
			out = append(out, []string{rw.Path, rw.Test, string(rw.Metric), "not measured (" + ref + ")", "n/a", string(rw.Unit), "n/a", "n/a", orText(rw.Tool, "n/a"), "0", "n/a"})
			if missing[rw.Test] == nil {
				missing[rw.Test] = map[string]string{}
			}
			missing[rw.Test][rw.Path] = reason
			continue
		}
		base, ok := host[rw.Test]
		ratio, band := vsHost(rw, base, ok)
		detail := rw.Detail()
		if rw.Status == results.CNIRowPartial {
			detail = strings.TrimPrefix(detail+"; ", "; ") + "partial: " + rw.Reason
		}
		out = append(out, []string{rw.Path, rw.Test, string(rw.Metric), charts.FormatValue(rw.Mean), fmtCI(rw.CI), string(rw.Unit), ratio, band,
			orText(rw.Tool, r.toolOf(rw.Path, rw.Test)), strconv.Itoa(rw.N), orText(detail, "none")})
	}
	s.para("The pod network underneath the mesh, measured like the published iperf3 and netperf pod network benchmark (iperf3 TCP and UDP, netperf TCP_RR and TCP_CRR; same node, across nodes, to a ClusterIP Service), with the host-network baseline and colour bands of the Kubernetes CNI benchmarks (examples/study-b-network.yaml reproduces it).")
	s.para("Mean of the test samples with its %s confidence interval; \"vs host\" is the mean relative to the host-network path on the same nodes, coloured green (≥ 95 %%), yellow (≥ 90 %%), orange (≥ 80 %%) or red (< 80 %%). The same table as `meshbench cni` prints.", confPct(r.Summary.Confidence))
	s.table(table{ID: "study-b", Header: []string{"path", "test", "metric", "value", "CI", "unit", "vs host", "band", "tool", "n", "detail"},
		Numeric: []bool{false, false, false, true, true, false, true, false, false, true, false}, Rows: out, Notes: notes})
	// Runs before the source label: the collector the run recorded in run.json was the only source.
	unlabelled := "not recorded"
	if p := r.Meta.Prometheus; p != nil && p.Source != "" {
		unlabelled = p.Source
	}
	rrs := results.CNIResourceRows(r.Summary)
	if t, ok := cniResourceTable(rrs, unlabelled); ok {
		s.table(t)
	}
	if t, ok := cniNodeTotalsTable(results.CNINodeTotals(rrs, r.Meta.Cluster.Nodes), r.Meta.Cluster.Nodes); ok {
		s.table(t)
	}
	for _, sel := range charts.CNISelections(r.Summary) {
		c := charts.CNIChart(r.Summary, sel, missing[sel.Test])
		if !c.Empty() {
			s.chart(chartBlock{ID: c.ID, Title: c.Title, File: chartFile(c.ID), SVG: c.SVG()})
		}
	}
	return s, true
}

// vsHost is a row's mean relative to the host path's of the same test (base; ok false when it has none), and its
// colour band (charts.BandFor).
func vsHost(rw, base results.CNIRow, ok bool) (ratio, band string) {
	switch {
	case rw.Path == string(results.CNIPathHost):
		return "baseline", "baseline"
	case !charts.DirectionHigherIsBetter(rw.Metric):
		return "n/a: lower is better", "n/a"
	case ok:
		f := 1.0
		if base.Unit != rw.Unit {
			f = charts.UnitFactor(base.Unit, rw.Unit)
		}
		if b, rt, ok := charts.BandFor(rw.Mean, base.Mean*f); ok {
			return strconv.FormatFloat(100*rt, 'f', 1, 64) + " %", b.Name
		}
	}
	return "n/a: no host baseline", "n/a"
}

// cniResourceTable is the pod network run's resource use (results.CNIResourceRows): min/avg/max per window, path,
// component and node; a row whose average lies outside [min, max] shows no min or max (results.AvgOutside).
func cniResourceTable(rrs []results.CNIResourceRow, unlabelled string) (table, bool) {
	if len(rrs) == 0 {
		return table{}, false
	}
	var rows [][]string
	sparse := false
	fig := func(v *float64) string {
		if v == nil {
			return "not measured"
		}
		return charts.FormatValue(*v)
	}
	for _, rr := range rrs {
		lo, hi := fig(rr.Min), fig(rr.Max)
		if rr.TooSparse {
			lo, hi, sparse = results.TooSparse, results.TooSparse, true
		}
		node := orText(rr.Node, "-")
		if rr.Series != "" {
			node += " [" + rr.Series + "]"
		}
		comp := string(rr.Component)
		if rr.Pod != "" {
			comp += " pod " + rr.Pod
		}
		rows = append(rows, []string{rr.Window, rr.Path, orText(rr.Test, "-"), comp, node, orText(rr.Source, unlabelled), string(rr.Metric), lo, fig(rr.Avg), hi, string(rr.Unit)})
	}
	t := table{ID: "study-b-resources", Caption: "Resource use of the test pods and test nodes (min / avg / max over the window)",
		Header:  []string{"window", "path", "test", "component", "node", "source", "metric", "min", "avg", "max", "unit"},
		Numeric: []bool{false, false, false, false, false, false, false, true, true, true, false}, Rows: rows,
		Notes: []string{"source: where each figure came from: the resource collector (prometheus, or kubelet-resource without Prometheus; rates over its rate range, so a case shorter than two rate ranges has no CPU from it) or cgroup-1s (the test pods' own cgroups read every second by the meshbench-agent wrapper of each test container; per pod and for the path's pods together)."}}
	if sparse {
		t.Notes = append(t.Notes, results.TooSparseNote)
	}
	return t, true
}

// toolOf names the tool of a path x test from its samples' source, for runs whose samples carry no "tool" label.
func (r Report) toolOf(path, test string) string {
	for _, smp := range r.samples {
		if smp.Component == results.ComponentCNITest && smp.Labels[results.CNILabelPath] == path && smp.Labels[results.CNILabelTest] == test && smp.Source != "" {
			return smp.Source
		}
	}
	return "not recorded"
}
