package report

import (
	"slices"
	"strconv"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// resourcesSection is study A's table: per topology and mode, min/max/avg CPU and memory per component, idle and under
// load, with the mesh total, then the whole-node totals of the test nodes (each host once), followed by the charts.
func (r Report) resourcesSection() (section, bool) {
	s := section{Title: "Resource usage per component"}
	topos := distinctKeys(r.Summary.Series, isResource, func(k results.Key) string { return k.Topology })
	if len(topos) == 0 {
		return s, false
	}
	s.para("Min, max and average CPU and memory of every component over fixed idle and load windows, per data-plane mode: the measurement of the published Istio ambient vs sidecar comparison on Bank of Anthos (Grafana min/max/avg over 10-minute windows, one namespace and eight namespaces; examples/study-a-*.yaml reproduce it).")
	s.para("Each figure is the mean over repetitions of the per-window statistic (min, max or average of the component's usage over the window); avg is shown ± the half width of its %s confidence interval. n is the number of repetitions behind the average.", confPct(r.Summary.Confidence))
	cpuUnit, memUnit := r.unitOf(string(results.MetricCPU)), r.unitOf(string(results.MetricMemory))
	nodeTotals := results.ModeNodeTotals(r.Summary, r.Meta.Cluster.Nodes)
	for _, topo := range topos {
		s.heading("Topology " + topo)
		s.table(r.resourceTable(topo, cpuUnit, memUnit))
		if nt, ok := modeNodeTotalsTable(topo, nodeTotals, r.Meta.Cluster.Nodes); ok {
			s.table(nt)
		}
		if bt, ok := r.benchmarkTable(topo, cpuUnit, memUnit); ok {
			s.table(bt)
		}
		for _, sel := range charts.ResourceSelections(r.Summary) {
			if sel.Topology != topo {
				continue
			}
			c := charts.ResourceChart(r.Summary, sel)
			if !c.Empty() {
				s.chart(chartBlock{ID: c.ID, Title: c.Title, File: chartFile(c.ID), SVG: c.SVG()})
			}
		}
	}
	return s, true
}

// resourceTable is one topology's table: a row per mode, window and component in the summary's order (components in
// charts' order).
func (r Report) resourceTable(topo, cpuUnit, memUnit string) table {
	inTopo := func(x results.Series) bool { return isResource(x) && x.Topology == topo }
	var rows [][]string
	meshRows, sparseRows := false, false
	for _, cw := range componentWindows(r.Summary.Series, inTopo) {
		for _, comp := range cw.comps {
			k := results.Key{Topology: topo, Mode: results.Mode(cw.mode), Load: cw.load, Window: cw.window, Component: results.Component(comp)}
			row, sparse, meshNA := r.resourceRow(k, cpuUnit, memUnit)
			rows = append(rows, row)
			sparseRows, meshRows = sparseRows || sparse, meshRows || meshNA
		}
	}
	t := table{
		ID:      "study-a-" + slug(topo),
		Caption: "CPU in " + cpuUnit + ", memory in " + memUnit,
		Header:  []string{"mode", "window", "component", "CPU min", "CPU max", "CPU avg", "memory min", "memory max", "memory avg", "n"},
		Numeric: []bool{false, false, false, true, true, true, true, true, true, true},
		Rows:    rows,
	}
	if sparseRows {
		t.Notes = append(t.Notes, results.TooSparseNote)
	}
	if meshRows {
		t.Notes = append(t.Notes, "mesh = sidecar + ztunnel + waypoint + istiod. Only averages add up over a window; the peak of a sum is not the sum of the peaks, so the mesh rows have no min or max (n/a: avg only).")
	}
	return t
}

// resourceRow is the row of the component k names (its metric, stat and unit unset): min, max and avg of CPU and of
// memory, and the repetitions behind the averages. sparse: min and max were too sparse to show; meshNA: the mesh
// total has no min or max.
func (r Report) resourceRow(k results.Key, cpuUnit, memUnit string) (row []string, sparse, meshNA bool) {
	row = []string{orText(string(k.Mode), "(none)"), windowLabel(k.Window, k.Load), string(k.Component)}
	n := 0
	for _, m := range []struct {
		metric results.Metric
		unit   string
	}{{results.MetricCPU, cpuUnit}, {results.MetricMemory, memUnit}} {
		key := func(stat results.Stat) results.Key {
			x := k
			x.Metric, x.Stat, x.Unit = m.metric, stat, results.Unit(m.unit)
			return x
		}
		impossible := r.avgOutside(key)
		sparse = sparse || impossible
		for _, stat := range []results.Stat{results.StatMin, results.StatMax, results.StatAvg} {
			x, ok := r.series(key(stat))
			switch {
			case ok && stat == results.StatAvg:
				row = append(row, fmtMean(x))
				n = max(n, x.N)
			case ok && impossible:
				row = append(row, results.TooSparse)
			case ok:
				row = append(row, charts.FormatValue(x.Mean))
			case k.Component == results.ComponentMesh:
				row = append(row, "n/a: avg only")
				meshNA = true
			default:
				row = append(row, "not measured")
			}
		}
	}
	return append(row, strconv.Itoa(n)), sparse, meshNA
}

// avgOutside reports an average outside [min, max]: impossible for consistent data (means over repetitions keep the
// order), so the counter samples were too sparse for min and max. The average covers the whole window and stands;
// min and max are not shown as figures.
func (r Report) avgOutside(key func(stat results.Stat) results.Key) bool {
	lo, okLo := r.series(key(results.StatMin))
	hi, okHi := r.series(key(results.StatMax))
	av, okAv := r.series(key(results.StatAvg))
	return okLo && okHi && okAv && results.AvgOutside(av.Mean, lo.Mean, hi.Mean)
}

// benchmarkTable is the average CPU and memory of the benchmark's own pods in a topology (load clients and their
// proxies: results.IsBenchmarkComponent) per mode and window: beside the app's table, never in it or in a mesh
// total, since they are not the app's cost. ok is false when the run recorded no such figure.
func (r Report) benchmarkTable(topo, cpuUnit, memUnit string) (table, bool) {
	own := func(x results.Series) bool {
		return isUsage(x) && results.IsBenchmarkComponent(x.Component) && x.Topology == topo && x.Stat == results.StatAvg
	}
	type row struct{ mode, window, load, component string }
	var keys []row
	for _, x := range r.Summary.Series {
		if k := (row{string(x.Mode), x.Window, x.Load, string(x.Component)}); own(x) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return table{}, false
	}
	var rows [][]string
	for _, k := range keys {
		out := []string{orText(k.mode, "(none)"), windowLabel(k.window, k.load), k.component}
		n := 0
		for _, m := range []struct {
			metric results.Metric
			unit   string
		}{{results.MetricCPU, cpuUnit}, {results.MetricMemory, memUnit}} {
			x, ok := r.series(results.Key{Topology: topo, Mode: results.Mode(k.mode), Load: k.load, Window: k.window, Component: results.Component(k.component),
				Metric: m.metric, Stat: results.StatAvg, Unit: results.Unit(m.unit)})
			if !ok {
				out = append(out, "not measured")
				continue
			}
			out, n = append(out, fmtMean(x)), max(n, x.N)
		}
		rows = append(rows, append(out, strconv.Itoa(n)))
	}
	return table{
		ID:      "study-a-" + slug(topo) + "-benchmark",
		Caption: "The benchmark's own pods: CPU in " + cpuUnit + ", memory in " + memUnit + " (averages)",
		Header:  []string{"mode", "window", "component", "CPU avg", "memory avg", "n"},
		Numeric: []bool{false, false, false, true, true, true},
		Rows:    rows,
		Notes: []string{string(results.ComponentLoadgen) + " is the load clients' own containers; " + string(results.ComponentLoadgenProxy) +
			" their proxies: their istio-proxy sidecars in sidecar mode, and in the ambient modes the ztunnels of nodes that run load clients but no app or waypoint pod (a ztunnel serving both stays in ztunnel, and a collector warning says so). " +
			"The clients are in the mesh so that their requests take the app's data path, but neither figure is the app's or the mesh's cost: they are in no row of the table above and in no mesh total."},
	}, true
}
