package report

import (
	"slices"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// workloadSection: each of the app's workloads per mode in the load windows: its app and sidecar CPU, its memory
// (app + sidecar) and what the mesh changes of its total against mode none, so a team sees which of its services pays
// most for the sidecar. The workloads are ranked by their sidecars' CPU in sidecar mode (results.SidecarCosts), the
// others after them in the summary's order. Only with per-workload figures (runs recorded before them have none).
func (r Report) workloadSection() (section, bool) {
	s := section{ID: SectionWorkloads, Title: "Per workload"}
	type group struct{ topo, load string }
	type cell struct{ topo, load, mode, workload, component, metric string }
	var groups []group
	var modes []string
	workloads := map[group][]string{}
	cells := map[cell]results.Series{}
	units := map[string]string{}
	for _, x := range r.Summary.Workloads {
		if x.Stat != charts.StatAvg || x.Window != results.WindowLoad || (x.Metric != charts.MetricCPU && x.Metric != charts.MetricMemory) {
			continue
		}
		g := group{x.Topology, x.Load}
		wl := results.ParseLabels(x.Labels)[results.LabelWorkload]
		if _, ok := workloads[g]; !ok {
			groups = append(groups, g)
		}
		if !slices.Contains(workloads[g], wl) {
			workloads[g] = append(workloads[g], wl)
		}
		if !slices.Contains(modes, string(x.Mode)) {
			modes = append(modes, string(x.Mode))
		}
		cells[cell{x.Topology, x.Load, string(x.Mode), wl, string(x.Component), string(x.Metric)}] = x
		units[string(x.Metric)] = string(x.Unit)
	}
	if len(groups) == 0 {
		return s, false
	}
	// The most expensive sidecars first, the workloads without a sidecar figure after them in the summary's order.
	ranked := results.SidecarCosts(r.Summary)
	for _, g := range groups {
		var order []string
		for _, c := range ranked {
			if c.Topology == g.topo && c.Load == g.load {
				order = append(order, c.Workload)
			}
		}
		for _, w := range workloads[g] {
			if !slices.Contains(order, w) {
				order = append(order, w)
			}
		}
		workloads[g] = order
	}
	deltas := map[cell]results.Delta{}
	hasNone := false
	for _, d := range r.Summary.WorkloadDeltas {
		if d.Base != "none" || d.Component != results.ComponentWorkloadTotal || d.Stat != charts.StatAvg || d.Window != results.WindowLoad {
			continue
		}
		hasNone = true
		deltas[cell{d.Topology, d.Load, string(d.Other), results.ParseLabels(d.Labels)[results.LabelWorkload], string(d.Component), string(d.Metric)}] = d
	}
	cpuUnit, memUnit := orText(units[string(charts.MetricCPU)], "?"), orText(units[string(charts.MetricMemory)], "?")
	s.para("Average usage of each workload's pods in the load window, mean ± half the %s confidence interval over the repetitions: the application containers, their istio-proxy sidecars (sidecar mode only) and the memory of both. These split the app and sidecar rows of the other tables, which they do not add to; the load clients' proxies are the benchmark's ("+string(results.ComponentLoadgenProxy)+"), in no workload and no total. Ranked by sidecar CPU in sidecar mode.", confPct(r.Summary.Confidence))
	header := []string{"workload", "mode", "app CPU (" + cpuUnit + ")", "sidecar CPU (" + cpuUnit + ")", "memory (" + memUnit + ")"}
	numeric := []bool{false, false, true, true, true}
	if hasNone {
		header = append(header, "CPU vs none", "memory vs none")
		numeric = append(numeric, true, true)
	}
	for _, g := range groups {
		var rows [][]string
		for _, wl := range workloads[g] {
			for _, mode := range modes {
				get := func(component, metric string) (results.Series, bool) {
					x, ok := cells[cell{g.topo, g.load, mode, wl, component, metric}]
					return x, ok
				}
				app, okApp := get(string(results.ComponentAppByWorkload), string(charts.MetricCPU))
				side, okSide := get(string(results.ComponentSidecarByWorkload), string(charts.MetricCPU))
				mem, okMem := get(string(results.ComponentWorkloadTotal), string(charts.MetricMemory))
				if !okApp && !okSide && !okMem {
					continue
				}
				row := []string{wl, mode, "not measured", "none", "not measured"}
				if okApp {
					row[2] = fmtMean(app)
				}
				if okSide {
					row[3] = fmtMean(side)
				}
				if okMem {
					row[4] = fmtMean(mem)
				}
				if hasNone {
					for _, metric := range []string{string(charts.MetricCPU), string(charts.MetricMemory)} {
						if mode == "none" {
							row = append(row, "baseline")
							continue
						}
						d, ok := deltas[cell{g.topo, g.load, mode, wl, string(results.ComponentWorkloadTotal), metric}]
						if !ok {
							row = append(row, "n/a")
							continue
						}
						change, verdict := deltaPctParts(d, r.workloadDeltaN(d))
						row = append(row, change+" "+verdict)
					}
				}
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			continue
		}
		var notes []string
		if hasNone {
			notes = append(notes, "vs none: the workload's total (app + sidecar) against its app in mode none, in percent, with the interval of the change (Welch); every per-workload delta is in deltas.csv (table workloads).")
		}
		s.heading(g.topo + ", " + windowLabel(results.WindowLoad, g.load))
		s.table(table{ID: slug("workloads", g.topo, g.load), Header: header, Numeric: numeric, Rows: rows, Notes: notes})
	}
	return s, true
}

// workloadDeltaN is deltaN for a per-workload delta (its series are in Summary.Workloads).
func (r Report) workloadDeltaN(d results.Delta) int {
	n := -1
	for _, s := range r.Summary.Workloads {
		k := s.Key
		if k.Mode != d.Base && k.Mode != d.Other {
			continue
		}
		k.Mode = ""
		if k == d.Key && (n < 0 || s.N < n) {
			n = s.N
		}
	}
	return max(n, 0)
}
