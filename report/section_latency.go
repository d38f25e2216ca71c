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
		metric := r.latencyMetric(sel)
		stats, modes, unit := r.latencyStatsModes(metric, sel)
		s.heading(fmt.Sprintf("Topology %s, %s", sel.Topology, windowLabel(results.WindowLoad, sel.Load)))
		header := []string{"mode", "achieved qps"}
		numeric := []bool{false, true}
		for _, st := range stats {
			header = append(header, string(st)+" ("+unit+")")
			numeric = append(numeric, true)
		}
		var rows [][]string
		for _, mode := range modes {
			row := []string{string(mode), r.achievedQPS(sel.Topology, mode, sel.Load)}
			for _, st := range stats {
				x, ok := r.latencySeries(metric, sel.Topology, mode, sel.Load, st)
				if !ok {
					row = append(row, "not measured")
					continue
				}
				row = append(row, fmtMean(x))
			}
			rows = append(rows, row)
		}
		s.table(table{ID: slug("latency", sel.Topology, sel.Load), Caption: latencyCaption(metric), Header: header, Numeric: numeric, Rows: rows})
		if metric == results.MetricResponseTime {
			if t, ok := r.serviceTimeTable(sel); ok {
				s.table(t)
			}
		}
		if t, ok := r.errorLatencyTable(sel); ok {
			s.table(t)
		}

		var added [][]string
		hasNone := slices.Contains(modes, results.ModeNone)
		for _, mode := range modes {
			if mode == results.ModeNone {
				continue
			}
			row := []string{string(mode)}
			for _, st := range stats {
				d, ok := r.latencyDelta(metric, sel.Topology, mode, sel.Load, st)
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
			h := []string{"mode"}
			for _, st := range stats {
				h = append(h, string(st))
			}
			s.table(table{ID: slug("latency-added", sel.Topology, sel.Load), Caption: "Added latency vs none (difference of means, " + confPct(r.Summary.Confidence) + " CI)", Header: h, Rows: added})
		}
		c := charts.LatencyChart(r.Summary, sel)
		if !c.Empty() {
			s.chart(chartBlock{ID: c.ID, Title: c.Title, File: chartFile(c.ID), SVG: c.SVG()})
		}
	}
	return s, true
}

// latencyMetric is what the latency tables of sel show: the response time (from when each request was due) when the
// run recorded it (a fixed rate), else the service time (from when it was sent).
func (r Report) latencyMetric(sel charts.LatencySelection) results.Metric {
	if stats, _, _ := r.latencyStatsModes(results.MetricResponseTime, sel); len(stats) > 0 {
		return results.MetricResponseTime
	}
	return results.MetricLatency
}

// latencyCaption says which latency a table shows.
func latencyCaption(metric results.Metric) string {
	if metric == results.MetricResponseTime {
		return "Client-side response time of successful (2xx) requests, from when each was due at the fixed rate (a stalled proxy delays the requests behind it, and this counts them: coordinated omission corrected), mean ± CI half width over repetitions"
	}
	return "Client-side latency of successful (2xx) requests, from when each was sent (service time), mean ± CI half width over repetitions"
}

// serviceTimeTable is the 2xx service times (from when each request was sent) beside the response times.
func (r Report) serviceTimeTable(sel charts.LatencySelection) (table, bool) {
	t, ok := r.latencyTable(results.MetricLatency, sel)
	t.ID = slug("service-time", sel.Topology, sel.Load)
	t.Caption = "Service time of the same requests, from when each was sent (what the response time adds to it is waiting to be sent)"
	return t, ok
}

// latencyStatsModes lists the stats and modes of metric's load-window series in sel, in display order, and their unit.
func (r Report) latencyStatsModes(metric results.Metric, sel charts.LatencySelection) (stats []results.Stat, modes []results.Mode, unit string) {
	for _, x := range r.Summary.Series {
		if x.Metric != metric || x.Window != results.WindowLoad || x.Topology != sel.Topology || x.Load != sel.Load || x.Labels != "" || x.Mode == "" {
			continue
		}
		if !slices.Contains(stats, x.Stat) {
			stats = append(stats, x.Stat)
		}
		if !slices.Contains(modes, x.Mode) {
			modes = append(modes, x.Mode)
		}
		unit = string(x.Unit)
	}
	results.SortPercentiles(stats)
	results.SortModes(modes)
	return stats, modes, unit
}

// errorLatencyTable lists the error answers' latency of the modes that had errors in sel: loadgen measures it apart
// from the 2xx latency, so that fast error answers never lower the latency percentiles.
func (r Report) errorLatencyTable(sel charts.LatencySelection) (table, bool) {
	t, ok := r.latencyTable(results.MetricErrLatency, sel)
	t.ID = slug("error-latency", sel.Topology, sel.Load)
	t.Caption = "Latency of error answers (non-2xx and connection errors), kept out of the table above; only modes that had errors"
	return t, ok
}

// latencyTable is metric's stats per mode in sel (no id or caption); false when nothing was measured.
func (r Report) latencyTable(metric results.Metric, sel charts.LatencySelection) (table, bool) {
	stats, modes, unit := r.latencyStatsModes(metric, sel)
	if len(stats) == 0 {
		return table{}, false
	}
	header, numeric := []string{"mode"}, []bool{false}
	for _, st := range stats {
		header, numeric = append(header, string(st)+" ("+unit+")"), append(numeric, true)
	}
	var rows [][]string
	for _, mode := range modes {
		row := []string{string(mode)}
		for _, st := range stats {
			x, ok := r.latencySeries(metric, sel.Topology, mode, sel.Load, st)
			if !ok {
				row = append(row, "not measured")
				continue
			}
			row = append(row, fmtMean(x))
		}
		rows = append(rows, row)
	}
	return table{Header: header, Numeric: numeric, Rows: rows}, true
}

func (r Report) latencySeries(metric results.Metric, topo string, mode results.Mode, load string, stat results.Stat) (results.Series, bool) {
	for _, x := range r.Summary.Series {
		if x.Metric == metric && x.Window == results.WindowLoad && x.Topology == topo && x.Mode == mode &&
			x.Load == load && x.Stat == stat && x.Labels == "" {
			return x, true
		}
	}
	return results.Series{}, false
}

func (r Report) latencyDelta(metric results.Metric, topo string, mode results.Mode, load string, stat results.Stat) (results.Delta, bool) {
	for _, d := range r.Summary.Deltas {
		if d.Metric == metric && d.Base == results.ModeNone && d.Other == mode && d.Topology == topo && d.Load == load &&
			d.Stat == stat && d.Labels == "" && d.Window == results.WindowLoad {
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
func (r Report) achievedQPS(topo string, mode results.Mode, load string) string {
	var parts []string
	for _, x := range r.Summary.Series {
		if x.Metric == results.MetricQPS && x.Stat == results.StatValue && x.Component == results.ComponentLoadgen && x.Topology == topo &&
			x.Mode == mode && x.Load == load && x.Window == results.WindowLoad && !loadTargetPart(x.Labels) {
			parts = append(parts, fmtMean(x))
		}
	}
	return orText(strings.Join(parts, "; "), "not measured")
}
