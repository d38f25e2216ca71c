package report

import (
	"github.com/meshbench/meshbench/results"
)

// perKRPSSection: resource cost per 1000 achieved requests per second.
func (r Report) perKRPSSection() (section, bool) {
	s := section{Title: "Cost per 1000 requests per second"}
	type rowKey struct{ topo, load, mode, comp string }
	var order []rowKey
	cells := map[rowKey]map[results.Metric]results.Series{}
	for _, x := range r.Summary.PerKRPS {
		if x.Stat != results.StatAvg || x.Labels != "" {
			continue
		}
		k := rowKey{x.Topology, x.Load, string(x.Mode), string(x.Component)}
		if cells[k] == nil {
			cells[k] = map[results.Metric]results.Series{}
			order = append(order, k)
		}
		cells[k][x.Metric] = x
	}
	if len(order) == 0 {
		return s, false
	}
	s.para("Average usage in the load window divided by the achieved request rate (thousands of rps, from the load generator), per repetition; mean ± half the %s confidence interval.", confPct(r.Summary.Confidence))
	var rows [][]string
	cpuUnit, memUnit := "", ""
	for _, k := range order {
		row := []string{k.topo, k.load, k.mode, k.comp}
		for _, metric := range []results.Metric{results.MetricCPU, results.MetricMemory} {
			x, ok := cells[k][metric]
			if !ok {
				row = append(row, "not measured")
				continue
			}
			if metric == results.MetricCPU {
				cpuUnit = string(x.Unit)
			} else {
				memUnit = string(x.Unit)
			}
			row = append(row, fmtMean(x))
		}
		rows = append(rows, row)
	}
	var notes []string
	if len(r.Summary.Shared) > 0 {
		notes = append(notes, "ztunnel, waypoint and mesh rows divide the whole load-window average, fixed part included, and that cost is shared with whatever else they serve: the part that grows with the load, per 1000 rps, is in the shared components table.")
	}
	s.table(table{ID: "per-krps-table", Notes: notes, Header: []string{"topology", "load (qps)", "mode", "component", "CPU (" + orText(cpuUnit, "?") + ")", "memory (" + orText(memUnit, "?") + ")"},
		Numeric: []bool{false, true, false, false, true, true}, Rows: rows})
	return s, true
}
