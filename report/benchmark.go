package report

import (
	"slices"
	"strconv"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// benchmarkTable is what the benchmark's own pods cost in a topology (results.IsBenchmarkComponent: the load
// clients and their proxies), per mode and window: average CPU and memory beside the app's table, never in it or in
// a mesh total. The load clients are in the mesh so that their requests take the app's data path; their proxies are
// not the app's cost. ok is false when the run recorded no such figure.
func (r Report) benchmarkTable(topo, cpuUnit, memUnit string) (table, bool) {
	own := func(x results.Series) bool {
		return isUsage(x) && results.IsBenchmarkComponent(x.Component) && x.Topology == topo && x.Stat == charts.StatAvg
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
		for _, m := range []struct{ metric, unit string }{{string(charts.MetricCPU), cpuUnit}, {string(charts.MetricMemory), memUnit}} {
			x, ok := r.series(results.Key{Topology: topo, Mode: results.Mode(k.mode), Load: k.load, Window: k.window, Component: results.Component(k.component), Metric: results.Metric(m.metric), Stat: charts.StatAvg, Unit: results.Unit(m.unit)})
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
