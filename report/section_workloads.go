package report

import (
	"slices"

	"github.com/meshbench/meshbench/results"
)

// workloadsSection: each of the app's workloads per mode in the load windows: its app and sidecar CPU, its memory
// (app + sidecar) and what the mesh changes of its total against mode none, so a team sees which of its services pays
// most for the sidecar. Only with per-workload figures (runs recorded before them have none).
func (r Report) workloadsSection() (section, bool) {
	s := section{Title: "Per workload"}
	w := r.workloadFigures()
	if len(w.groups) == 0 {
		return s, false
	}
	cpuUnit, memUnit := orText(string(w.units[results.MetricCPU]), "?"), orText(string(w.units[results.MetricMemory]), "?")
	s.para("Average usage of each workload's pods in the load window, mean ± half the %s confidence interval over the repetitions: the application containers, their istio-proxy sidecars (sidecar mode only) and the memory of both. These split the app and sidecar rows of the other tables, which they do not add to; the load clients' proxies are the benchmark's ("+string(results.ComponentLoadgenProxy)+"), in no workload and no total. Ranked by sidecar CPU in sidecar mode.", confPct(r.Summary.Confidence))
	header := []string{"workload", "mode", "app CPU (" + cpuUnit + ")", "sidecar CPU (" + cpuUnit + ")", "memory (" + memUnit + ")"}
	numeric := []bool{false, false, true, true, true}
	var notes []string
	if w.hasNone {
		header = append(header, "CPU vs none", "memory vs none")
		numeric = append(numeric, true, true)
		notes = append(notes, "vs none: the workload's total (app + sidecar) against its app in mode none, in percent, with the interval of the change (Welch); every per-workload delta is in deltas.csv (table workloads).")
	}
	for _, g := range w.groups {
		var rows [][]string
		for _, wl := range w.workloads[g] {
			for _, mode := range w.modes {
				if row, ok := r.workloadRow(w, workloadCell{g.topo, g.load, mode, wl, "", ""}); ok {
					rows = append(rows, row)
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		s.heading(g.topo + ", " + windowLabel(results.WindowLoad, g.load))
		s.table(table{ID: slug("workloads", g.topo, g.load), Header: header, Numeric: numeric, Rows: rows, Notes: slices.Clone(notes)})
	}
	return s, true
}

// workloadGroup is one table of the section: a topology and load level.
type workloadGroup struct{ topo, load string }

// workloadCell names one per-workload figure.
type workloadCell struct {
	topo, load string
	mode       results.Mode
	workload   string
	component  results.Component
	metric     results.Metric
}

// workloadFigures are the per-workload averages of the load windows, arranged for the section's tables.
type workloadFigures struct {
	groups    []workloadGroup
	modes     []results.Mode
	workloads map[workloadGroup][]string // ranked: results.SidecarCosts first, the others in the summary's order
	cells     map[workloadCell]results.Series
	units     map[results.Metric]results.Unit
	deltas    map[workloadCell]results.Delta
	hasNone   bool // the run has deltas against mode none
}

// workloadFigures collects the load windows' average CPU and memory per workload, then ranks the workloads of each
// group by their sidecars' CPU in sidecar mode (results.SidecarCosts), the others after them in the summary's order.
func (r Report) workloadFigures() workloadFigures {
	w := workloadFigures{workloads: map[workloadGroup][]string{}, cells: map[workloadCell]results.Series{}, units: map[results.Metric]results.Unit{},
		deltas: map[workloadCell]results.Delta{}}
	for _, x := range r.Summary.Workloads {
		if x.Stat != results.StatAvg || x.Window != results.WindowLoad || (x.Metric != results.MetricCPU && x.Metric != results.MetricMemory) {
			continue
		}
		g := workloadGroup{x.Topology, x.Load}
		wl := results.ParseLabels(x.Labels)[results.LabelWorkload]
		if _, ok := w.workloads[g]; !ok {
			w.groups = append(w.groups, g)
		}
		if !slices.Contains(w.workloads[g], wl) {
			w.workloads[g] = append(w.workloads[g], wl)
		}
		if !slices.Contains(w.modes, x.Mode) {
			w.modes = append(w.modes, x.Mode)
		}
		w.cells[workloadCell{x.Topology, x.Load, x.Mode, wl, x.Component, x.Metric}] = x
		w.units[x.Metric] = x.Unit
	}
	ranked := results.SidecarCosts(r.Summary)
	for _, g := range w.groups {
		var order []string
		for _, c := range ranked {
			if c.Topology == g.topo && c.Load == g.load {
				order = append(order, c.Workload)
			}
		}
		for _, wl := range w.workloads[g] {
			if !slices.Contains(order, wl) {
				order = append(order, wl)
			}
		}
		w.workloads[g] = order
	}
	for _, d := range r.Summary.WorkloadDeltas {
		if d.Base != results.ModeNone || d.Component != results.ComponentWorkloadTotal || d.Stat != results.StatAvg || d.Window != results.WindowLoad {
			continue
		}
		w.hasNone = true
		w.deltas[workloadCell{d.Topology, d.Load, d.Other, results.ParseLabels(d.Labels)[results.LabelWorkload], d.Component, d.Metric}] = d
	}
	return w
}

// workloadRow is one workload's row in one mode (at names them; its component and metric are unset); ok is false
// when the mode has none of its figures.
func (r Report) workloadRow(w workloadFigures, at workloadCell) (row []string, ok bool) {
	get := func(component results.Component, metric results.Metric) (results.Series, bool) {
		c := at
		c.component, c.metric = component, metric
		x, ok := w.cells[c]
		return x, ok
	}
	app, okApp := get(results.ComponentAppByWorkload, results.MetricCPU)
	side, okSide := get(results.ComponentSidecarByWorkload, results.MetricCPU)
	mem, okMem := get(results.ComponentWorkloadTotal, results.MetricMemory)
	if !okApp && !okSide && !okMem {
		return nil, false
	}
	row = []string{at.workload, string(at.mode), "not measured", "none", "not measured"}
	if okApp {
		row[2] = fmtMean(app)
	}
	if okSide {
		row[3] = fmtMean(side)
	}
	if okMem {
		row[4] = fmtMean(mem)
	}
	if !w.hasNone {
		return row, true
	}
	for _, metric := range []results.Metric{results.MetricCPU, results.MetricMemory} {
		if at.mode == results.ModeNone {
			row = append(row, "baseline")
			continue
		}
		c := at
		c.component, c.metric = results.ComponentWorkloadTotal, metric
		d, ok := w.deltas[c]
		if !ok {
			row = append(row, "n/a")
			continue
		}
		change, verdict := deltaPctParts(d, r.workloadDeltaN(d))
		row = append(row, change+" "+verdict)
	}
	return row, true
}

// workloadDeltaN is deltaN for a per-workload delta (its series are in Summary.Workloads).
func (r Report) workloadDeltaN(d results.Delta) int { return minN(r.Summary.Workloads, d) }
