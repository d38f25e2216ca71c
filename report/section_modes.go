package report

import (
	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// modesSection: percent change between modes with CI, for the mesh total and the app; one table for CPU and one
// for memory.
func (r Report) modesSection() (section, bool) {
	s := section{Title: "Change between modes"}
	byMetric := map[string][][]string{}
	for _, d := range r.Summary.Deltas {
		if d.Stat != results.StatAvg || d.Labels != "" || (d.Metric != results.MetricCPU && d.Metric != results.MetricMemory) ||
			(d.Component != results.ComponentMesh && d.Component != results.ComponentApp) {
			continue
		}
		change, verdict := deltaPctParts(d, r.deltaN(d))
		byMetric[string(d.Metric)] = append(byMetric[string(d.Metric)], []string{d.Topology, windowLabel(d.Window, d.Load), string(d.Component),
			string(d.Other) + " vs " + string(d.Base), charts.FormatValue(d.BaseMean), charts.FormatValue(d.OtherMean), change, verdict})
	}
	if len(byMetric) == 0 {
		return s, false
	}
	s.para("Other mode minus base mode, in percent of the base mean, with the %s confidence interval of the change (Welch); significant means the interval excludes 0. Every component and the per-1000-rps comparisons are in deltas.csv.", confPct(r.Summary.Confidence))
	for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
		rows := byMetric[metric]
		if len(rows) == 0 {
			continue
		}
		unit := r.unitOf(metric)
		title := map[string]string{string(results.MetricCPU): "CPU", string(results.MetricMemory): "Memory"}[metric]
		s.heading(title + " (" + unit + ")")
		s.table(table{ID: "mode-deltas-" + metric, Header: []string{"topology", "window", "component", "comparison", "base", "other", "change [CI]", "verdict"},
			Numeric: []bool{false, false, false, false, true, true, true, false}, Rows: rows})
	}
	return s, true
}
