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
	s := section{ID: SectionAllocation, Title: "Allocation beside usage"}
	ss := r.Summary.Series
	topos := distinctKeys(ss, isAllocation, func(k results.Key) string { return k.Topology })
	if len(topos) == 0 {
		return s, false
	}
	s.para("What the measured pods asked for, read from their specs when each window was collected (regular containers and native sidecars; one-shot init containers have ended), summed per component: the request is what the scheduler reserves on the nodes (request x pods), whatever the pods use. Used is the window's average usage (mean over repetitions), and used / request how much of the reservation it fills. \"no limit\" means at least one container has none, so the component as a whole is not capped.")
	cpuUnit, memUnit := r.unitOf(string(charts.MetricCPU)), r.unitOf(string(charts.MetricMemory))
	for _, topo := range topos {
		inTopo := func(x results.Series) bool { return isAllocation(x) && x.Topology == topo }
		var rows [][]string
		for _, mode := range distinctKeys(ss, inTopo, func(k results.Key) string { return string(k.Mode) }) {
			inMode := func(x results.Series) bool { return inTopo(x) && string(x.Mode) == mode }
			type wl struct{ window, load string }
			var wls []wl
			for _, x := range ss {
				if inMode(x) && !slices.Contains(wls, wl{x.Window, x.Load}) {
					wls = append(wls, wl{x.Window, x.Load})
				}
			}
			for _, w := range wls {
				inW := func(x results.Series) bool { return inMode(x) && x.Window == w.window && x.Load == w.load }
				comps := distinctKeys(ss, inW, func(k results.Key) string { return string(k.Component) })
				charts.SortComponents(comps)
				key := func(comp, metric, stat, unit string) results.Key {
					return results.Key{Topology: topo, Mode: results.Mode(mode), Load: w.load, Window: w.window, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit)}
				}
				var mesh []string
				for _, comp := range comps {
					rows = append(rows, r.allocationRow(key, orText(mode, "(none)"), windowLabel(w.window, w.load), comp, []string{comp}, cpuUnit, memUnit))
					if slices.Contains(results.MeshParts(), results.Component(comp)) {
						mesh = append(mesh, comp)
					}
				}
				if len(mesh) > 0 {
					// Requests add up like averages do (a reservation holds for the whole window): the mesh row is the sum
					// of its parts' requests beside the mesh usage total.
					rows = append(rows, r.allocationRow(key, orText(mode, "(none)"), windowLabel(w.window, w.load), string(results.ComponentMesh), mesh, cpuUnit, memUnit))
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
			Notes:   []string{"mesh = sidecar + ztunnel + waypoint + istiod: their requests and pods added up (a reservation holds the whole window, so sums are exact), beside the mesh usage total; \"no limit (x)\" names a part without one."},
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

// allocationRow is one row of the allocation table: component name, the pods, requests and limits summed over
// parts (one component, or the mesh's parts), and the usage average of component name beside them.
func (r Report) allocationRow(key func(comp, metric, stat, unit string) results.Key, mode, window, name string, parts []string, cpuUnit, memUnit string) []string {
	pods, podsOK := 0.0, true
	for _, c := range parts {
		x, ok := r.series(key(c, string(results.MetricPods), string(results.StatCount), string(results.UnitPods)))
		pods, podsOK = pods+x.Mean, podsOK && ok
	}
	row := []string{mode, window, name, "?"}
	if podsOK {
		row[3] = fmtCount(pods)
	}
	for _, m := range []struct{ metric, unit string }{{string(charts.MetricCPU), cpuUnit}, {string(charts.MetricMemory), memUnit}} {
		req, reqOK := 0.0, true
		for _, c := range parts {
			x, ok := r.series(key(c, m.metric, string(results.StatRequest), m.unit))
			req, reqOK = req+x.Mean, reqOK && ok
		}
		limit := r.limitCell(key(parts[0], m.metric, string(results.StatLimit), m.unit), key(parts[0], m.metric, string(results.StatNoLimit), string(results.UnitContainers)))
		if len(parts) > 1 {
			limit = r.sumLimits(key, parts, m.metric, m.unit)
		}
		if reqOK {
			row = append(row, charts.FormatValue(req))
		} else {
			row = append(row, "not read")
		}
		row = append(row, limit)
		used, usedOK := r.series(key(name, m.metric, string(charts.StatAvg), m.unit))
		row = append(row, orText(valueIf(used, usedOK), "not measured"))
		switch {
		case reqOK && usedOK && req > 0:
			row = append(row, charts.FormatValue(100*used.Mean/req)+" %")
		case reqOK && usedOK:
			row = append(row, "no request")
		default:
			row = append(row, "n/a")
		}
	}
	return row
}

// sumLimits is the limit of several components together: the sum when each has one, "no limit (part)" when any
// part lacks one in any repetition.
func (r Report) sumLimits(key func(comp, metric, stat, unit string) results.Key, parts []string, metric, unit string) string {
	sum := 0.0
	for _, c := range parts {
		if _, none := r.series(key(c, metric, string(results.StatNoLimit), string(results.UnitContainers))); none {
			return "no limit (" + c + ")"
		}
		x, ok := r.series(key(c, metric, string(results.StatLimit), unit))
		if !ok {
			return "not read"
		}
		sum += x.Mean
	}
	return charts.FormatValue(sum)
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
	s := section{ID: SectionShared, Title: "Shared components: fixed and load-driven cost"}
	if len(r.Summary.Shared) == 0 {
		return s, false
	}
	s.para("A ztunnel serves every ambient pod of its node, a waypoint the namespaces that use it, istiod the whole mesh, istio-cni every pod of its node: their cost is not the app's. Fixed is the idle window's average (app deployed, no load), load-driven the load window's average minus the idle one of the same repetition (fixed + load-driven = the load window's average); mean ± half the %s confidence interval over repetitions.", confPct(r.Summary.Confidence))
	var rows [][]string
	for _, c := range r.Summary.Shared {
		perK := "n/a: no achieved rate"
		if c.IncrementalPerKRPS != nil {
			perK = fmtEstimate(*c.IncrementalPerKRPS) + " " + string(c.IncrementalPerKRPS.Unit)
		}
		rows = append(rows, []string{c.Topology, orText(string(c.Mode), "(none)"), windowLabel(results.WindowLoad, c.Load), string(c.Component),
			string(c.Metric) + " (" + string(c.Unit) + ")", fmtEstimate(c.Fixed), fmtEstimate(c.Incremental), perK, c.Serves})
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
