package report

import (
	"math"
	"slices"
	"strconv"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// isAllocation is a series of the requests, limits or pod count the collector read from the pod specs.
func isAllocation(s results.Series) bool {
	return s.Labels == "" && (s.Window == results.WindowIdle || s.Window == results.WindowLoad) &&
		(((s.Metric == charts.MetricCPU || s.Metric == charts.MetricMemory) &&
			(s.Stat == results.StatRequest || s.Stat == results.StatLimit || s.Stat == results.StatNoLimit)) ||
			(s.Metric == results.MetricPods && s.Stat == results.StatCount))
}

// allocationSection shows allocation beside usage: per topology, mode, window and component, the pods, what their
// containers request (what the scheduler reserves: requests x pods) and their limits, next to the average usage of
// the same window. Reservation often decides the cost (a node is full when its requests are, not its usage).
func (r Report) allocationSection() (section, bool) {
	s := section{ID: "allocation", Title: "Allocation beside usage"}
	ss := r.Summary.Series
	topos := distinctKeys(ss, isAllocation, func(k results.Key) string { return k.Topology })
	if len(topos) == 0 {
		return s, false
	}
	s.para("What the measured pods asked for, read from their specs when each window was collected (regular containers and native sidecars; one-shot init containers have ended), summed per component: the request is what the scheduler reserves on the nodes (request x pods), whatever the pods use. Used is the window's average usage (mean over repetitions), and used / request how much of the reservation it fills. \"no limit\" means at least one container has none, so the component as a whole is not capped.")
	cpuUnit, memUnit := r.unitOf(charts.MetricCPU), r.unitOf(charts.MetricMemory)
	for _, topo := range topos {
		inTopo := func(x results.Series) bool { return isAllocation(x) && x.Topology == topo }
		var rows [][]string
		for _, mode := range distinctKeys(ss, inTopo, func(k results.Key) string { return k.Mode }) {
			inMode := func(x results.Series) bool { return inTopo(x) && x.Mode == mode }
			type wl struct{ window, load string }
			var wls []wl
			for _, x := range ss {
				if inMode(x) && !slices.Contains(wls, wl{x.Window, x.Load}) {
					wls = append(wls, wl{x.Window, x.Load})
				}
			}
			for _, w := range wls {
				inW := func(x results.Series) bool { return inMode(x) && x.Window == w.window && x.Load == w.load }
				comps := distinctKeys(ss, inW, func(k results.Key) string { return k.Component })
				charts.SortComponents(comps)
				for _, comp := range comps {
					key := func(metric, stat, unit string) results.Key {
						return results.Key{Topology: topo, Mode: mode, Load: w.load, Window: w.window, Component: comp, Metric: metric, Stat: stat, Unit: unit}
					}
					pods := "?"
					if x, ok := r.series(key(results.MetricPods, results.StatCount, results.UnitPods)); ok {
						pods = fmtCount(x.Mean)
					}
					row := []string{orText(mode, "(none)"), windowLabel(w.window, w.load), comp, pods}
					for _, m := range []struct{ metric, unit string }{{charts.MetricCPU, cpuUnit}, {charts.MetricMemory, memUnit}} {
						req, okReq := r.series(key(m.metric, results.StatRequest, m.unit))
						row = append(row, orText(valueIf(req, okReq), "not read"), r.limitCell(key(m.metric, results.StatLimit, m.unit), key(m.metric, results.StatNoLimit, results.UnitContainers)))
						used, okUsed := r.series(key(m.metric, charts.StatAvg, m.unit))
						row = append(row, orText(valueIf(used, okUsed), "not measured"))
						switch {
						case okReq && okUsed && req.Mean > 0:
							row = append(row, charts.FormatValue(100*used.Mean/req.Mean)+" %")
						case okReq && okUsed:
							row = append(row, "no request")
						default:
							row = append(row, "n/a")
						}
					}
					rows = append(rows, row)
				}
			}
		}
		s.heading("Topology " + topo)
		s.table(table{
			ID:      "allocation-" + slug(topo),
			Caption: "CPU in " + cpuUnit + ", memory in " + memUnit + ", summed over the component's pods",
			Header: []string{"mode", "window", "component", "pods", "CPU request", "CPU limit", "CPU used", "CPU used / request",
				"memory request", "memory limit", "memory used", "memory used / request"},
			Numeric: []bool{false, false, false, true, true, true, true, true, true, true, true, true},
			Rows:    rows,
		})
	}
	return s, true
}

func valueIf(x results.Series, ok bool) string {
	if !ok {
		return ""
	}
	return charts.FormatValue(x.Mean)
}

// limitCell is the component's limit, or "no limit" (with how many containers have none) when any container has
// none; a component whose repetitions disagree says so rather than show either.
func (r Report) limitCell(limit, noLimit results.Key) string {
	l, okL := r.series(limit)
	n, okN := r.series(noLimit)
	switch {
	case okL && okN:
		return "no limit in " + strconv.Itoa(n.N) + " of " + strconv.Itoa(n.N+l.N) + " repetitions"
	case okN:
		if n.Mean == 1 {
			return "no limit (1 container)"
		}
		return "no limit (" + fmtCount(n.Mean) + " containers)"
	case okL:
		return charts.FormatValue(l.Mean)
	}
	return "not read"
}

// sharedSection splits each shared component's average into what it costs with the app deployed and idle, and what
// the run's load added: neither is the app's cost alone, since one instance serves more than the app.
func (r Report) sharedSection() (section, bool) {
	s := section{ID: "shared", Title: "Shared components: fixed and load-driven cost"}
	if len(r.Summary.Shared) == 0 {
		return s, false
	}
	s.para("A ztunnel serves every ambient pod of its node, a waypoint the namespaces that use it, istiod the whole mesh, istio-cni every pod of its node: their cost is not the app's. Fixed is the idle window's average (app deployed, no load), load-driven the load window's average minus the idle one of the same repetition (fixed + load-driven = the load window's average); mean ± half the %s confidence interval over repetitions.", confPct(r.Summary.Confidence))
	var rows [][]string
	for _, c := range r.Summary.Shared {
		perK := "n/a: no achieved rate"
		if c.IncrementalPerKRPS != nil {
			perK = fmtEstimate(*c.IncrementalPerKRPS) + " " + c.IncrementalPerKRPS.Unit
		}
		rows = append(rows, []string{c.Topology, orText(c.Mode, "(none)"), windowLabel(results.WindowLoad, c.Load), c.Component,
			c.Metric + " (" + c.Unit + ")", fmtEstimate(c.Fixed), fmtEstimate(c.Incremental), perK, c.Serves})
	}
	s.table(table{ID: "shared-table",
		Header:  []string{"topology", "mode", "window", "component", "metric", "fixed (idle)", "load-driven", "load-driven per 1000 rps", "one instance serves"},
		Numeric: []bool{false, false, false, false, false, true, true, true, false}, Rows: rows})
	return s, true
}

// fmtEstimate renders an estimate like fmtMean renders a series.
func fmtEstimate(e results.Estimate) string {
	return fmtMean(results.Series{N: e.N, Mean: e.Mean, CI: e.CI})
}

// fmtCount renders a count: whole numbers without decimals (a mean over repetitions may not be one).
func fmtCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return charts.FormatValue(v)
}
