package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// latencySection: latency per mode and the latency each mode adds over "none".
func (r Report) latencySection() (section, bool) {
	s := section{Title: "Latency"}
	sels := charts.LatencySelections(r.Summary)
	if len(sels) == 0 {
		return s, false
	}
	for _, sel := range sels {
		stats, modes, unit := r.latencyStatsModes(string(charts.MetricLatency), sel)
		s.heading(fmt.Sprintf("Topology %s, %s", sel.Topology, windowLabel(results.WindowLoad, sel.Load)))
		header := []string{"mode", "achieved qps"}
		numeric := []bool{false, true}
		for _, st := range stats {
			header = append(header, st+" ("+unit+")")
			numeric = append(numeric, true)
		}
		var rows [][]string
		for _, mode := range modes {
			row := []string{mode, r.achievedQPS(sel.Topology, mode, sel.Load)}
			for _, st := range stats {
				x, ok := r.latencySeries(string(charts.MetricLatency), sel.Topology, mode, sel.Load, st)
				if !ok {
					row = append(row, "not measured")
					continue
				}
				row = append(row, fmtMean(x))
			}
			rows = append(rows, row)
		}
		s.table(table{ID: slug("latency", sel.Topology, sel.Load), Caption: "Client-side latency of successful (2xx) requests, mean ± CI half width over repetitions", Header: header, Numeric: numeric, Rows: rows})
		if t, ok := r.errorLatencyTable(sel); ok {
			s.table(t)
		}

		var added [][]string
		hasNone := slices.Contains(modes, "none")
		for _, mode := range modes {
			if mode == "none" {
				continue
			}
			row := []string{mode}
			for _, st := range stats {
				d, ok := r.latencyDelta(sel.Topology, mode, sel.Load, st)
				switch {
				case ok:
					row = append(row, fmtDeltaAbs(d, r.deltaN(d)))
				case !hasNone:
					row = append(row, "n/a: no \"none\" baseline measured")
				default:
					row = append(row, "not measured in both modes")
				}
			}
			added = append(added, row)
		}
		if len(added) > 0 {
			h := append([]string{"mode"}, stats...)
			s.table(table{ID: slug("latency-added", sel.Topology, sel.Load), Caption: "Added latency vs none (difference of means, " + confPct(r.Summary.Confidence) + " CI)", Header: h, Rows: added})
		}
		c := charts.LatencyChart(r.Summary, sel)
		if !c.Empty() {
			s.chart(chartBlock{ID: c.ID, Title: c.Title, File: chartFile(c.ID), SVG: c.SVG()})
		}
	}
	return s, true
}

// metricErrLatency is loadgen's error-latency: the latency of non-2xx answers and connection errors, measured apart
// from "latency" (2xx only), so that fast error answers never lower the latency percentiles.
const metricErrLatency = "error-latency"

// latencyStatsModes lists the stats and modes of metric's load-window series in sel, in display order, and their unit.
func (r Report) latencyStatsModes(metric string, sel charts.LatencySelection) (stats, modes []string, unit string) {
	for _, x := range r.Summary.Series {
		if string(x.Metric) != metric || x.Window != results.WindowLoad || x.Topology != sel.Topology || x.Load != sel.Load || x.Labels != "" || x.Mode == "" {
			continue
		}
		if !slices.Contains(stats, string(x.Stat)) {
			stats = append(stats, string(x.Stat))
		}
		if !slices.Contains(modes, string(x.Mode)) {
			modes = append(modes, string(x.Mode))
		}
		unit = string(x.Unit)
	}
	charts.SortStats(stats)
	charts.SortModes(modes)
	return stats, modes, unit
}

// errorLatencyTable lists the error answers' latency of the modes that had errors in sel.
func (r Report) errorLatencyTable(sel charts.LatencySelection) (table, bool) {
	stats, modes, unit := r.latencyStatsModes(metricErrLatency, sel)
	if len(stats) == 0 {
		return table{}, false
	}
	header, numeric := []string{"mode"}, []bool{false}
	for _, st := range stats {
		header, numeric = append(header, st+" ("+unit+")"), append(numeric, true)
	}
	var rows [][]string
	for _, mode := range modes {
		row := []string{mode}
		for _, st := range stats {
			x, ok := r.latencySeries(metricErrLatency, sel.Topology, mode, sel.Load, st)
			if !ok {
				row = append(row, "not measured")
				continue
			}
			row = append(row, fmtMean(x))
		}
		rows = append(rows, row)
	}
	return table{ID: slug("error-latency", sel.Topology, sel.Load), Header: header, Numeric: numeric, Rows: rows,
		Caption: "Latency of error answers (non-2xx and connection errors), kept out of the table above; only modes that had errors"}, true
}

func (r Report) latencySeries(metric, topo, mode, load, stat string) (results.Series, bool) {
	for _, x := range r.Summary.Series {
		if string(x.Metric) == metric && x.Window == results.WindowLoad && x.Topology == topo && string(x.Mode) == mode &&
			x.Load == load && string(x.Stat) == stat && x.Labels == "" {
			return x, true
		}
	}
	return results.Series{}, false
}

func (r Report) latencyDelta(topo, mode, load, stat string) (results.Delta, bool) {
	for _, d := range r.Summary.Deltas {
		if d.Metric == charts.MetricLatency && d.Base == "none" && string(d.Other) == mode && d.Topology == topo && d.Load == load &&
			string(d.Stat) == stat && d.Labels == "" && d.Window == results.WindowLoad {
			return d, true
		}
	}
	return results.Delta{}, false
}

// loadTargetPart reports whether canonical labels (results.CanonicalLabels) mark one load target's part of the
// run's qps (results.LabelLoadTarget).
func loadTargetPart(labels string) bool {
	return slices.ContainsFunc(strings.Split(labels, ","), func(kv string) bool { return strings.HasPrefix(kv, results.LabelLoadTarget+"=") })
}

// achievedQPS is the load generator's achieved rate (qps, stat value; the requested rate is stat target), mean ± CI
// over repetitions; several series (labelled clients) are listed side by side.
func (r Report) achievedQPS(topo, mode, load string) string {
	var parts []string
	for _, x := range r.Summary.Series {
		if x.Metric == "qps" && x.Stat == charts.StatValue && x.Component == results.ComponentLoadgen && x.Topology == topo &&
			string(x.Mode) == mode && x.Load == load && x.Window == results.WindowLoad && !loadTargetPart(x.Labels) {
			parts = append(parts, fmtMean(x))
		}
	}
	return orText(strings.Join(parts, "; "), "not measured")
}
