package report

import (
	"slices"
	"strconv"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// isAllocation is a series of the requests, limits or pod count the collector read from the pod specs.
func isAllocation(s results.Series) bool {
	return s.Labels == "" && (s.Window == results.WindowIdle || s.Window == results.WindowLoad) &&
		(((s.Metric == results.MetricCPU || s.Metric == results.MetricMemory) &&
			(s.Stat == results.StatRequest || s.Stat == results.StatLimit || s.Stat == results.StatNoLimit)) ||
			(s.Metric == results.MetricPods && s.Stat == results.StatCount))
}

// allocationSection shows allocation beside usage: per topology, mode, window and component, the pods, what their
// containers request (what the scheduler reserves: requests x pods) and their limits, next to the average usage of
// the same window. Reservation often decides the cost (a node is full when its requests are, not its usage).
func (r Report) allocationSection() (section, bool) {
	s := section{Title: "Allocation beside usage"}
	ss := r.Summary.Series
	topos := distinctKeys(ss, isAllocation, func(k results.Key) string { return k.Topology })
	if len(topos) == 0 {
		return s, false
	}
	s.para("What the measured pods asked for, read from their specs when each window was collected (regular containers and native sidecars; one-shot init containers have ended), summed per component: the request is what the scheduler reserves on the nodes (request x pods), whatever the pods use. Used is the window's average usage (mean over repetitions), and used / request how much of the reservation it fills. \"no limit\" means at least one container has none, so the component as a whole is not capped.")
	cpuUnit, memUnit := r.unitOf(string(results.MetricCPU)), r.unitOf(string(results.MetricMemory))
	for _, topo := range topos {
		inTopo := func(x results.Series) bool { return isAllocation(x) && x.Topology == topo }
		var rows [][]string
		for _, cw := range componentWindows(ss, inTopo) {
			key := func(comp, metric, stat, unit string) results.Key {
				return results.Key{Topology: topo, Mode: results.Mode(cw.mode), Load: cw.load, Window: cw.window, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit)}
			}
			mode, window := orText(cw.mode, "(none)"), windowLabel(cw.window, cw.load)
			var mesh []string
			for _, comp := range cw.comps {
				rows = append(rows, r.allocationRow(key, mode, window, comp, []string{comp}, cpuUnit, memUnit))
				if slices.Contains(results.MeshParts(), results.Component(comp)) {
					mesh = append(mesh, comp)
				}
			}
			if len(mesh) > 0 {
				// Requests add up like averages do (a reservation holds for the whole window): the mesh row is the sum
				// of its parts' requests beside the mesh usage total.
				rows = append(rows, r.allocationRow(key, mode, window, string(results.ComponentMesh), mesh, cpuUnit, memUnit))
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
	for _, m := range []struct{ metric, unit string }{{string(results.MetricCPU), cpuUnit}, {string(results.MetricMemory), memUnit}} {
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
		used, usedOK := r.series(key(name, m.metric, string(results.StatAvg), m.unit))
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
