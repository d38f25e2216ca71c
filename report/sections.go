package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// document builds the report's content in a fixed section order.
func (r Report) document() document {
	d := document{
		Title:  "meshbench report: " + r.Meta.RunID,
		Banner: r.Banner(),
	}
	sc := r.scenario()
	if sc.Name != "" {
		d.Subtitle = "scenario " + sc.Name
		if sc.Description != "" {
			d.Subtitle += ": " + sc.Description
		}
	}
	d.Sections = append(d.Sections, r.factsSection())
	if s, ok := r.headlineSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.resourceSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.comparisonSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.workloadSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.perKRPSSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.sharedSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.allocationSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.latencySection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.capacitySection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.networkSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	if s, ok := r.baselineSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	d.Sections = append(d.Sections, r.casesSection(), r.methodSection())
	return d
}

func (r Report) factsSection() section {
	s := section{ID: SectionFacts, Title: "Run facts"}
	m := r.Meta
	rows := [][]string{
		{"run ID", m.RunID},
		{"command", "meshbench " + orText(m.Command, "run")},
		{"meshbench", fmt.Sprintf("%s (commit %s, %s, built %s)", orText(m.Tool.Version, "unknown"), orText(m.Tool.Commit, "unknown"),
			orText(m.Tool.GoVersion, "unknown Go"), orText(m.Tool.BuildDate, "unknown date"))},
		{"started", fmtTime(m.Start)},
	}
	if m.End != nil {
		took := "took: unknown, see the warnings"
		if d, ok := m.Took(); ok {
			took = "took " + d.Round(time.Second).String()
		}
		rows = append(rows, []string{"ended", fmt.Sprintf("%s (%s)", fmtTime(*m.End), took)})
		if n := len(m.Invocations); n > 1 {
			rows = append(rows, []string{"invocations", invocationsText(m.Invocations)})
		}
		if in := m.Interrupted; in != nil {
			rows = append(rows, []string{"interrupted", fmt.Sprintf("%s at %s", in.Text(), fmtTime(in.At))})
		}
	} else {
		rows = append(rows, []string{"ended", "not recorded: the run was interrupted or is still running; figures cover the finished cases only"})
	}
	c := m.Cluster
	rows = append(rows,
		[]string{"Kubernetes", orText(c.KubernetesVersion, "unknown (not recorded)")},
		[]string{"CNI", orText(c.CNI, "not detected")},
		[]string{"profile", orText(c.Profile, "not recorded")},
	)
	if ist := c.Istio; ist != nil {
		rows = append(rows,
			[]string{"Istio", fmt.Sprintf("%s (revision %s, profile %s)", orText(ist.Version, "unknown version"), orText(ist.Revision, "default"), orText(ist.Profile, "unknown"))},
			[]string{"data plane", dataPlaneText(*ist)},
			[]string{"ambient capable", strconv.FormatBool(ist.AmbientCapable)},
			[]string{"native sidecars", boolPtrText(ist.NativeSidecars)},
			[]string{"proxy image", orText(ist.ProxyImage, "not recorded")},
			[]string{"ztunnel image", orText(ist.ZtunnelImage, "not recorded")},
		)
	} else {
		rows = append(rows, []string{"Istio", "not detected (no mesh installed, or a cni-only run)"})
	}
	if p := m.Prometheus; p != nil {
		spacing := "sample spacing not measured"
		if p.SampleSpacing > 0 {
			spacing = "cAdvisor sample spacing " + p.SampleSpacing.String()
		}
		src := p.Source
		if p.URL != "" {
			src += " " + p.URL
		}
		rows = append(rows, []string{"resource source", fmt.Sprintf("%s, scrape interval %s, %s, rate range %s", src, p.ScrapeInterval, spacing, p.RateRange)})
	} else {
		rows = append(rows, []string{"resource source", "not recorded"})
	}
	sc := r.scenario()
	if sc.App != "" {
		rows = append(rows, []string{"app", sc.App})
	}
	cfg := []string{}
	if sc.Idle != "" || sc.Load != "" {
		cfg = append(cfg, fmt.Sprintf("idle %s, load %s", orText(sc.Idle, "?"), orText(sc.Load, "?")))
	}
	if sc.Reps != "" {
		cfg = append(cfg, sc.Reps+" repetitions")
	}
	if sc.Interleave != "" {
		cfg = append(cfg, "interleave "+sc.Interleave)
	}
	if sc.QPS != "" {
		cfg = append(cfg, "qps "+sc.QPS)
	}
	if sc.Connections != "" {
		cfg = append(cfg, sc.Connections+" connections")
	}
	rows = append(rows, []string{"configured windows", orText(strings.Join(cfg, "; "), "not recorded (no config echo in run.json)")})
	ow := r.observedWindows()
	var obs []string
	for _, k := range []string{results.WindowIdle, results.WindowLoad, results.WindowTest} {
		if ds := ow[k]; len(ds) > 0 {
			var parts []string
			for _, d := range ds {
				parts = append(parts, d.String())
			}
			obs = append(obs, k+" "+strings.Join(parts, "/"))
		}
	}
	rows = append(rows, []string{"measured windows", orText(strings.Join(obs, ", "), "none recorded")})
	rows = append(rows, []string{"nodes", nodesText(c.Nodes)})
	if r.Baseline != nil {
		rows = append(rows, r.baselineFact())
	}
	s.table(table{ID: "facts-table", Header: []string{"fact", "value"}, Rows: rows, Class: "facts"})
	if len(c.Nodes) > 0 {
		// The host column only for runs that recorded the nodes' machine and boot IDs (older runs did not).
		hosts := slices.ContainsFunc(c.Nodes, func(n results.NodeFacts) bool { return n.MachineID != "" })
		header := []string{"node", "kubelet", "kernel", "OS", "runtime", "CPU", "memory"}
		if hosts {
			header = append(header, "host")
		}
		var nrows [][]string
		for _, n := range c.Nodes {
			row := []string{n.Name, orText(n.KubeletVersion, "?"), orText(n.KernelVersion, "?"), orText(n.OSImage, "?"),
				orText(n.ContainerRuntime, "?"), orText(n.CPU, "?"), orText(n.Memory, "?")}
			if hosts {
				row = append(row, hostText(n, c.Nodes))
			}
			nrows = append(nrows, row)
		}
		s.table(table{ID: "nodes-table", Caption: "Nodes (allocatable CPU and memory)", Header: header, Rows: nrows})
	}
	if r.Recomputed {
		s.para("summary.json was missing: the summary was computed from samples.jsonl for this report.")
	}
	return s
}

// dataPlaneText says what ran each data-plane component, or the run's one kind for runs recorded before the
// per-component facts.
func dataPlaneText(ist results.IstioFacts) string {
	if len(ist.DataPlanes) > 0 {
		parts := make([]string, 0, len(ist.DataPlanes))
		for _, c := range ist.DataPlanes {
			parts = append(parts, string(c.Component)+": "+orText(c.Description, string(c.Kind)))
		}
		return strings.Join(parts, "; ")
	}
	switch ist.DataPlane {
	case results.DataPlaneStandIn:
		return "test stand-in: figures are not Istio's"
	case "":
		return "not recorded"
	}
	return string(ist.DataPlane)
}

func boolPtrText(b *bool) string {
	if b == nil {
		return "not recorded"
	}
	return strconv.FormatBool(*b)
}

// hostText says which host a node runs on: its own, one shared with other nodes (whose whole-node figures are the
// same machine's), or unknown (no machine or boot ID recorded).
func hostText(n results.NodeFacts, nodes []results.NodeFacts) string {
	switch with := results.SharesHostWith(n.Name, nodes); {
	case len(with) > 0:
		return "one host with " + strings.Join(with, ", ")
	case n.MachineID == "" || n.BootID == "":
		return "unknown"
	}
	return "its own"
}

func nodesText(nodes []results.NodeFacts) string {
	if len(nodes) == 0 {
		return "not recorded"
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return fmt.Sprintf("%d (%s)", len(nodes), strings.Join(names, ", "))
}

// headlineSection states study A's comparison in one sentence per topology and metric: the mesh total under load,
// each ambient mode against sidecar.
func (r Report) headlineSection() (section, bool) {
	s := section{ID: SectionHeadlines, Title: "Headlines"}
	var items []string
	for _, d := range r.Summary.Deltas {
		if d.Component != results.ComponentMesh || d.Stat != charts.StatAvg || d.Window != results.WindowLoad || d.Labels != "" ||
			d.Base != "sidecar" || (d.Metric != charts.MetricCPU && d.Metric != charts.MetricMemory) {
			continue
		}
		items = append(items, fmt.Sprintf("%s vs %s, topology %s, %s: mesh %s %s → %s %s, %s%s", d.Other, d.Base, d.Topology,
			windowLabel(d.Window, d.Load), d.Metric, charts.FormatValue(d.BaseMean), charts.FormatValue(d.OtherMean), d.Unit, fmtDeltaPct(d, r.deltaN(d)),
			r.headlineCaveat(string(d.Base), string(d.Other))))
	}
	for _, d := range r.Summary.Deltas {
		if d.Metric != charts.MetricLatency || d.Base != "none" || d.Stat != "p99" || d.Labels != "" {
			continue
		}
		items = append(items, fmt.Sprintf("%s adds %s to p99 latency (topology %s, %s)%s", d.Other, fmtDeltaAbs(d, r.deltaN(d)), d.Topology,
			windowLabel(d.Window, d.Load), r.headlineCaveat(string(d.Other))))
	}
	items = append(r.baselineHeadlines(), items...)
	if len(items) == 0 {
		return s, false
	}
	s.para("Mesh = sidecars, or ztunnel + waypoints, plus istiod (sum of window averages). Intervals are %s confidence intervals of the difference (Welch).", confPct(r.Summary.Confidence))
	s.list(items)
	return s, true
}

// componentCaveats are the data-plane caveats of one component's figures (none for Istio's own, or for app and
// istiod, which are never stand-ins).
func (r Report) componentCaveats(comp string) []string {
	ist := r.Meta.Cluster.Istio
	if ist == nil {
		return nil
	}
	if len(ist.DataPlanes) == 0 {
		if ist.DataPlane == results.DataPlaneStandIn && slices.Contains([]string{string(results.ComponentSidecar), string(results.ComponentZtunnel), string(results.ComponentWaypoint)}, comp) {
			return results.SummaryDataPlaneNotes(ist.DataPlane, nil, nil)
		}
		return nil
	}
	return results.DataPlaneNotes(ist.DataPlanes, []results.Component{results.Component(comp)})
}

// headlineCaveat is what a headline comparing modes says of itself when a data-plane component of those modes is
// not Istio's own: " [built on a test stand-in: ztunnel; on upstream Envoy, a lower bound: sidecar]" ("" when every
// component is Istio's).
func (r Report) headlineCaveat(modes ...string) string {
	var standIn, upstream []string
	for _, m := range modes {
		for _, comp := range results.DataPlaneComponentsOfMode(results.Mode(m)) {
			switch r.DataPlaneOf(string(comp)).Kind {
			case results.DataPlaneStandIn:
				if !slices.Contains(standIn, string(comp)) {
					standIn = append(standIn, string(comp))
				}
			case results.DataPlaneUpstreamEnvoy:
				if !slices.Contains(upstream, string(comp)) {
					upstream = append(upstream, string(comp))
				}
			}
		}
	}
	var parts []string
	if len(standIn) > 0 {
		parts = append(parts, "built on a test stand-in, not Istio's cost: "+strings.Join(standIn, ", "))
	}
	if len(upstream) > 0 {
		parts = append(parts, "upstream Envoy, a lower bound of Istio's: "+strings.Join(upstream, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, "; ") + "]"
}

func confPct(c float64) string {
	if c == 0 {
		c = results.DefaultConfidence
	}
	return strconv.FormatFloat(100*c, 'f', -1, 64) + " %"
}

// resourceSection is study A's table: per topology and mode, min/max/avg CPU and memory per component, idle and under
// load, with the mesh total, then the whole-node totals of the test nodes (each host once), followed by the charts.
func (r Report) resourceSection() (section, bool) {
	s := section{ID: SectionResources, Title: "Resource usage per component"}
	ss := r.Summary.Series
	topos := distinctKeys(ss, isResource, func(k results.Key) string { return k.Topology })
	if len(topos) == 0 {
		return s, false
	}
	s.para("Min, max and average CPU and memory of every component over fixed idle and load windows, per data-plane mode: the measurement of the published Istio ambient vs sidecar comparison on Bank of Anthos (Grafana min/max/avg over 10-minute windows, one namespace and eight namespaces; examples/study-a-*.yaml reproduce it).")
	s.para("Each figure is the mean over repetitions of the per-window statistic (min, max or average of the component's usage over the window); avg is shown ± the half width of its %s confidence interval. n is the number of repetitions behind the average.", confPct(r.Summary.Confidence))
	cpuUnit, memUnit := r.unitOf(string(charts.MetricCPU)), r.unitOf(string(charts.MetricMemory))
	nodeTotals := results.ModeNodeTotals(r.Summary, r.Meta.Cluster.Nodes)
	for _, topo := range topos {
		inTopo := func(x results.Series) bool { return isResource(x) && x.Topology == topo }
		var rows [][]string
		meshRows, sparseRows := false, false
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
				for _, comp := range comps {
					row := []string{orText(mode, "(none)"), windowLabel(w.window, w.load), comp}
					n := 0
					for _, metric := range []string{string(charts.MetricCPU), string(charts.MetricMemory)} {
						unit := cpuUnit
						if metric == string(charts.MetricMemory) {
							unit = memUnit
						}
						key := func(stat string) results.Key {
							return results.Key{Topology: topo, Mode: results.Mode(mode), Load: w.load, Window: w.window, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit)}
						}
						// An average outside [min, max] is impossible for consistent data (means over repetitions keep
						// the order): the counter samples were too sparse for min/max. The average covers the whole
						// window and stands; min and max are not shown as figures.
						impossible := false
						if lo, okLo := r.series(key("min")); okLo {
							if hi, okHi := r.series(key("max")); okHi {
								if av, okAv := r.series(key("avg")); okAv {
									impossible = results.AvgOutside(av.Mean, lo.Mean, hi.Mean)
								}
							}
						}
						if impossible {
							sparseRows = true
						}
						for _, stat := range []string{"min", "max", "avg"} {
							x, ok := r.series(key(stat))
							switch {
							case ok && stat == "avg":
								row = append(row, fmtMean(x))
								n = max(n, x.N)
							case ok && impossible:
								row = append(row, results.TooSparse)
							case ok:
								row = append(row, charts.FormatValue(x.Mean))
							case comp == string(results.ComponentMesh):
								row = append(row, "n/a: avg only")
								meshRows = true
							default:
								row = append(row, "not measured")
							}
						}
					}
					rows = append(rows, append(row, strconv.Itoa(n)))
				}
			}
		}
		t := table{
			ID:      "study-a-" + slug(topo),
			Caption: "CPU in " + cpuUnit + ", memory in " + memUnit,
			Header:  []string{"mode", "window", "component", "CPU min", "CPU max", "CPU avg", "memory min", "memory max", "memory avg", "n"},
			Numeric: []bool{false, false, false, true, true, true, true, true, true, true},
			Rows:    rows,
		}
		if sparseRows {
			t.Notes = append(t.Notes, results.TooSparseNote)
		}
		if meshRows {
			t.Notes = append(t.Notes, "mesh = sidecar + ztunnel + waypoint + istiod. Only averages add up over a window; the peak of a sum is not the sum of the peaks, so the mesh rows have no min or max (n/a: avg only).")
		}
		s.heading("Topology " + topo)
		s.table(t)
		if nt, ok := modeNodeTotalsTable(topo, nodeTotals, r.Meta.Cluster.Nodes); ok {
			s.table(nt)
		}
		if bt, ok := r.benchmarkTable(topo, cpuUnit, memUnit); ok {
			s.table(bt)
		}
		for _, sel := range charts.ResourceSelections(r.Summary) {
			if sel.Topology != topo {
				continue
			}
			c := charts.ResourceChart(r.Summary, sel)
			if !c.Empty() {
				s.chart(chartBlock{ID: c.ID, Title: c.Title, File: "charts/" + c.ID + ".svg", SVG: c.SVG()})
			}
		}
	}
	return s, true
}

// unitOf is the unit the summary uses for a resource metric (the first seen).
func (r Report) unitOf(metric string) string {
	for _, x := range r.Summary.Series {
		if string(x.Metric) == metric && isResource(x) {
			return string(x.Unit)
		}
	}
	return "?"
}

// comparisonSection: percent change between modes with CI, for the mesh total and the app; one table for CPU and one
// for memory.
func (r Report) comparisonSection() (section, bool) {
	s := section{ID: SectionModes, Title: "Change between modes"}
	byMetric := map[string][][]string{}
	for _, d := range r.Summary.Deltas {
		if d.Stat != charts.StatAvg || d.Labels != "" || (d.Metric != charts.MetricCPU && d.Metric != charts.MetricMemory) ||
			(d.Component != results.ComponentMesh && d.Component != results.ComponentApp) {
			continue
		}
		change, verdict := deltaPctParts(d, r.deltaN(d))
		byMetric[string(d.Metric)] = append(byMetric[string(d.Metric)], []string{d.Topology, windowLabel(d.Window, d.Load), string(d.Component),
			string(d.Other + " vs " + d.Base), charts.FormatValue(d.BaseMean), charts.FormatValue(d.OtherMean), change, verdict})
	}
	if len(byMetric) == 0 {
		return s, false
	}
	s.para("Other mode minus base mode, in percent of the base mean, with the %s confidence interval of the change (Welch); significant means the interval excludes 0. Every component and the per-1000-rps comparisons are in deltas.csv.", confPct(r.Summary.Confidence))
	for _, metric := range []string{string(charts.MetricCPU), string(charts.MetricMemory)} {
		rows := byMetric[metric]
		if len(rows) == 0 {
			continue
		}
		unit := r.unitOf(metric)
		title := map[string]string{string(charts.MetricCPU): "CPU", string(charts.MetricMemory): "Memory"}[metric]
		s.heading(title + " (" + unit + ")")
		s.table(table{ID: "mode-deltas-" + metric, Header: []string{"topology", "window", "component", "comparison", "base", "other", "change [CI]", "verdict"},
			Numeric: []bool{false, false, false, false, true, true, true, false}, Rows: rows})
	}
	return s, true
}

// deltaPctParts splits a delta into "−68.8 % [−70.1, −67.5]" and its verdict; n is deltaN (below
// results.MinIntervalN repetitions there is no interval and no verdict).
func deltaPctParts(d results.Delta, n int) (change, verdict string) {
	switch {
	case d.Percent == nil:
		return signed(d.Diff) + " " + string(d.Unit) + " (base is 0, no percent)", "n/a: no percent"
	case d.PercentCI == nil || n < results.MinIntervalN:
		return signed(*d.Percent) + " %", "n/a: " + noInterval(n)
	}
	change = signed(*d.Percent) + " % [" + signed(d.PercentCI.Low) + ", " + signed(d.PercentCI.High) + "]"
	if d.Significant {
		return change, "significant"
	}
	return change, "not significant"
}

// perKRPSSection: resource cost per 1000 achieved requests per second.
func (r Report) perKRPSSection() (section, bool) {
	s := section{ID: SectionPerKRPS, Title: "Cost per 1000 requests per second"}
	type rowKey struct{ topo, load, mode, comp string }
	var order []rowKey
	cells := map[rowKey]map[string]results.Series{}
	for _, x := range r.Summary.PerKRPS {
		if x.Stat != charts.StatAvg || x.Labels != "" {
			continue
		}
		k := rowKey{x.Topology, x.Load, string(x.Mode), string(x.Component)}
		if cells[k] == nil {
			cells[k] = map[string]results.Series{}
			order = append(order, k)
		}
		cells[k][string(x.Metric)] = x
	}
	if len(order) == 0 {
		return s, false
	}
	s.para("Average usage in the load window divided by the achieved request rate (thousands of rps, from the load generator), per repetition; mean ± half the %s confidence interval.", confPct(r.Summary.Confidence))
	var rows [][]string
	cpuUnit, memUnit := "", ""
	for _, k := range order {
		row := []string{k.topo, k.load, k.mode, k.comp}
		for _, metric := range []string{string(charts.MetricCPU), string(charts.MetricMemory)} {
			x, ok := cells[k][metric]
			if !ok {
				row = append(row, "not measured")
				continue
			}
			if metric == string(charts.MetricCPU) {
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

// latencySection: latency per mode and the latency each mode adds over "none".
func (r Report) latencySection() (section, bool) {
	s := section{ID: SectionLatency, Title: "Latency"}
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
			s.chart(chartBlock{ID: c.ID, Title: c.Title, File: "charts/" + c.ID + ".svg", SVG: c.SVG()})
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

// achievedQPS is the load generator's achieved rate (qps, stat value; the requested rate is stat target), mean ± CI
// over repetitions; several series (labelled clients) are listed side by side.
// loadTargetPart reports whether canonical labels (results.CanonicalLabels) mark one load target's part of the
// run's qps (results.LabelLoadTarget).
func loadTargetPart(labels string) bool {
	return slices.ContainsFunc(strings.Split(labels, ","), func(kv string) bool { return strings.HasPrefix(kv, results.LabelLoadTarget+"=") })
}

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

// networkSection is study B's table: rows path x test (results.CNIRows, the table meshbench cni prints), with value,
// CI, unit and tool, the host baseline ratio and band, and a reason for every test that did not produce a value.
func (r Report) networkSection() (section, bool) {
	s := section{ID: SectionNetwork, Title: "Pod network"}
	rows := results.CNIRows(r.Summary)
	if len(rows) == 0 {
		return s, false
	}
	slices.SortStableFunc(rows, func(a, b results.CNIRow) int {
		if c := compareBy(a.Test, b.Test, charts.SortTests); c != 0 {
			return c
		}
		return compareBy(a.Path, b.Path, charts.SortPaths)
	})
	host := map[string]results.CNIRow{} // test -> the host path's row
	for _, rw := range rows {
		if rw.Path == charts.PathHost && rw.N > 0 {
			host[rw.Test] = rw
		}
	}
	var out [][]string
	var notes []string
	missing := map[string]map[string]string{} // test -> path -> reason
	for _, rw := range rows {
		if rw.N == 0 {
			reason := fmt.Sprintf("%s (case %s): %s", rw.Status, orText(rw.CaseID, "not recorded"), orText(rw.Reason, "no reason recorded"))
			notes = append(notes, fmt.Sprintf("Note %d: %s %s not measured: %s", len(notes)+1, rw.Path, rw.Test, reason))
			ref := fmt.Sprintf("see note %d", len(notes))
			out = append(out, []string{rw.Path, rw.Test, string(rw.Metric), "not measured (" + ref + ")", "n/a", string(rw.Unit), "n/a", "n/a", orText(rw.Tool, "n/a"), "0", "n/a"})
			if missing[rw.Test] == nil {
				missing[rw.Test] = map[string]string{}
			}
			missing[rw.Test][rw.Path] = reason
			continue
		}
		ratio, band := "n/a: no host baseline", "n/a"
		switch base, ok := host[rw.Test]; {
		case rw.Path == charts.PathHost:
			ratio, band = "baseline", "baseline"
		case !charts.DirectionHigherIsBetter(rw.Metric):
			ratio, band = "n/a: lower is better", "n/a"
		case ok:
			f := 1.0
			if base.Unit != rw.Unit {
				f = charts.UnitFactor(base.Unit, rw.Unit)
			}
			if b, rt, ok := charts.BandFor(rw.Mean, base.Mean*f); ok {
				ratio, band = strconv.FormatFloat(100*rt, 'f', 1, 64)+" %", b.Name
			}
		}
		detail := rw.Detail()
		if rw.Status == results.CNIRowPartial {
			detail = strings.TrimPrefix(detail+"; ", "; ") + "partial: " + rw.Reason
		}
		out = append(out, []string{rw.Path, rw.Test, string(rw.Metric), charts.FormatValue(rw.Mean), fmtCI(rw.CI), string(rw.Unit), ratio, band,
			orText(rw.Tool, r.toolOf(rw.Path, rw.Test)), strconv.Itoa(rw.N), orText(detail, "none")})
	}
	s.para("The pod network underneath the mesh, measured like the published iperf3 and netperf pod network benchmark (iperf3 TCP and UDP, netperf TCP_RR and TCP_CRR; same node, across nodes, to a ClusterIP Service), with the host-network baseline and colour bands of the Kubernetes CNI benchmarks (examples/study-b-network.yaml reproduces it).")
	s.para("Mean of the test samples with its %s confidence interval; \"vs host\" is the mean relative to the host-network path on the same nodes, coloured green (≥ 95 %%), yellow (≥ 90 %%), orange (≥ 80 %%) or red (< 80 %%). The same table as `meshbench cni` prints.", confPct(r.Summary.Confidence))
	s.table(table{ID: "study-b", Header: []string{"path", "test", "metric", "value", "CI", "unit", "vs host", "band", "tool", "n", "detail"},
		Numeric: []bool{false, false, false, true, true, false, true, false, false, true, false}, Rows: out, Notes: notes})
	// Runs before the source label: the collector the run recorded in run.json was the only source.
	unlabelled := "not recorded"
	if p := r.Meta.Prometheus; p != nil && p.Source != "" {
		unlabelled = p.Source
	}
	rrs := results.CNIResourceRows(r.Summary)
	if t, ok := cniResourceTable(rrs, unlabelled); ok {
		s.table(t)
	}
	if t, ok := cniNodeTotalsTable(results.CNINodeTotals(rrs, r.Meta.Cluster.Nodes), r.Meta.Cluster.Nodes); ok {
		s.table(t)
	}
	for _, sel := range charts.CNISelections(r.Summary) {
		c := charts.CNIChart(r.Summary, sel, missing[sel.Test])
		if !c.Empty() {
			s.chart(chartBlock{ID: c.ID, Title: c.Title, File: "charts/" + c.ID + ".svg", SVG: c.SVG()})
		}
	}
	return s, true
}

// cniResourceTable is the pod network run's resource use (results.CNIResourceRows): min/avg/max per window, path,
// component and node; a row whose average lies outside [min, max] shows no min or max (results.AvgOutside).
func cniResourceTable(rrs []results.CNIResourceRow, unlabelled string) (table, bool) {
	if len(rrs) == 0 {
		return table{}, false
	}
	var rows [][]string
	sparse := false
	fig := func(v *float64) string {
		if v == nil {
			return "not measured"
		}
		return charts.FormatValue(*v)
	}
	for _, rr := range rrs {
		lo, hi := fig(rr.Min), fig(rr.Max)
		if rr.TooSparse {
			lo, hi, sparse = results.TooSparse, results.TooSparse, true
		}
		node := orText(rr.Node, "-")
		if rr.Series != "" {
			node += " [" + rr.Series + "]"
		}
		comp := string(rr.Component)
		if rr.Pod != "" {
			comp += " pod " + rr.Pod
		}
		rows = append(rows, []string{rr.Window, rr.Path, orText(rr.Test, "-"), string(comp), node, orText(rr.Source, unlabelled), string(rr.Metric), lo, fig(rr.Avg), hi, string(rr.Unit)})
	}
	t := table{ID: "study-b-resources", Caption: "Resource use of the test pods and test nodes (min / avg / max over the window)",
		Header:  []string{"window", "path", "test", "component", "node", "source", "metric", "min", "avg", "max", "unit"},
		Numeric: []bool{false, false, false, false, false, false, false, true, true, true, false}, Rows: rows,
		Notes: []string{"source: where each figure came from: the resource collector (prometheus, or kubelet-resource without Prometheus; rates over its rate range, so a case shorter than two rate ranges has no CPU from it) or cgroup-1s (the test pods' own cgroups read every second by the meshbench-agent wrapper of each test container; per pod and for the path's pods together)."}}
	if sparse {
		t.Notes = append(t.Notes, results.TooSparseNote)
	}
	return t, true
}

// cniNodeTotalsTable adds up the test nodes' averages per window, path and test (results.CNINodeTotals): each total
// names the nodes it covers and the ones counted, one per host, with hostNotes.
func cniNodeTotalsTable(totals []results.CNINodeTotal, nodes []results.NodeFacts) (table, bool) {
	if len(totals) == 0 {
		return table{}, false
	}
	var rows [][]string
	var covered, notes [][]string
	for _, t := range totals {
		rows = append(rows, []string{t.Window, t.Path, orText(t.Test, "-"), string(t.Metric), charts.FormatValue(t.Avg), string(t.Unit),
			strings.Join(t.Nodes, ", "), strings.Join(t.Counted, ", ")})
		covered, notes = append(covered, t.Nodes), append(notes, t.Notes)
	}
	return table{ID: "study-b-node-totals", Caption: "Whole-node totals: the test nodes' averages added up, each host counted once",
		Header:  []string{"window", "path", "test", "metric", "avg", "unit", "nodes", "counted"},
		Numeric: []bool{false, false, false, false, true, false, false, false}, Rows: rows, Notes: hostNotes(covered, notes, nodes)}, true
}

// modeNodeTotalsTable is a mesh run's whole-node totals of one topology (results.ModeNodeTotals): per mode, window
// and metric the test nodes' averages added up, each host once, with hostNotes.
func modeNodeTotalsTable(topo string, totals []results.ModeNodeTotal, nodes []results.NodeFacts) (table, bool) {
	var rows [][]string
	var covered, notes [][]string
	for _, t := range totals {
		if t.Topology != topo {
			continue
		}
		rows = append(rows, []string{orText(string(t.Mode), "(none)"), windowLabel(t.Window, t.Load), string(t.Metric), charts.FormatValue(t.Avg), string(t.Unit),
			strings.Join(t.Nodes, ", "), strings.Join(t.Counted, ", ")})
		covered, notes = append(covered, t.Nodes), append(notes, t.Notes)
	}
	if len(rows) == 0 {
		return table{}, false
	}
	return table{ID: "study-a-" + slug(topo) + "-node-totals", Caption: "Whole-node totals: the test nodes' averages added up, each host counted once",
		Header:  []string{"mode", "window", "metric", "avg", "unit", "nodes", "counted"},
		Numeric: []bool{false, false, false, true, false, false, false}, Rows: rows, Notes: hostNotes(covered, notes, nodes)}, true
}

// hostNotes are the notes of a node totals table: the totals' own (which nodes share a host, once each), and, when a
// total adds up several nodes whose machine and boot IDs the run did not record, that they count as machines of
// their own.
func hostNotes(covered, totalNotes [][]string, nodes []results.NodeFacts) []string {
	ids := map[string]bool{}
	for _, n := range nodes {
		ids[n.Name] = n.MachineID != "" && n.BootID != ""
	}
	var notes, unknown []string
	for i := range covered {
		for _, n := range totalNotes[i] {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
		if len(covered[i]) < 2 {
			continue
		}
		for _, n := range covered[i] {
			if !ids[n] && !slices.Contains(unknown, n) {
				unknown = append(unknown, n)
			}
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		notes = append(notes, fmt.Sprintf("The run did not record the machine and boot IDs of %s (recorded before meshbench read them, or not reported): each is counted as a machine of its own; nodes on one host (a local cluster) would be counted once per node.",
			strings.Join(unknown, ", ")))
	}
	return notes
}

func compareBy(a, b string, sorter func([]string)) int {
	if a == b {
		return 0
	}
	xs := []string{a, b}
	sorter(xs)
	if xs[0] == a {
		return -1
	}
	return 1
}

// toolOf names the tool of a path x test from its samples' source, for runs whose samples carry no "tool" label.
func (r Report) toolOf(path, test string) string {
	for _, smp := range r.Samples {
		if smp.Component == results.ComponentCNITest && smp.Labels[charts.LabelPath] == path && smp.Labels[charts.LabelTest] == test && smp.Source != "" {
			return smp.Source
		}
	}
	return "not recorded"
}

// casesSection lists every failed or skipped case with its reason, and a count of the rest.
func (r Report) casesSection() section {
	s := section{ID: SectionCases, Title: "Failed and skipped cases"}
	counts := map[string]int{}
	var rows [][]string
	for _, c := range r.Cases {
		counts[string(c.Status)]++
		if c.Status == results.StatusOK {
			continue
		}
		load := orText(c.Load, "idle only")
		if c.Mode == "" {
			load = "n/a (cni)"
		}
		rows = append(rows, []string{c.CaseID, string(c.Status), orText(string(c.Mode), "n/a (cni)"), orText(c.Topology, "n/a (cni)"), load,
			strconv.Itoa(c.Repetition), orText(c.Reason, "no reason recorded (a bug: report it)")})
	}
	if in := r.Meta.Interrupted; in != nil {
		// Counting the recorded cases alone would read as a complete run ("1 cases: 1 ok ... No case failed").
		s.para("The run was %s; %d cases recorded: %d ok, %d failed, %d skipped. Samples of failed and skipped cases are left out of every figure.",
			in.Text(), len(r.Cases), counts[string(results.StatusOK)], counts[string(results.StatusFailed)], counts[string(results.StatusSkipped)])
	} else {
		s.para("%d cases: %d ok, %d failed, %d skipped. Samples of failed and skipped cases are left out of every figure.",
			len(r.Cases), counts[string(results.StatusOK)], counts[string(results.StatusFailed)], counts[string(results.StatusSkipped)])
	}
	switch {
	case len(rows) > 0:
		s.table(table{ID: "failed-cases", Header: []string{"case", "status", "mode", "topology", "load", "repetition", "reason"}, Rows: rows})
	case r.Meta.Interrupted != nil:
		s.para("No recorded case failed or was skipped.")
	default:
		s.para("No case failed or was skipped.")
	}
	if in := r.Meta.Interrupted; in != nil && len(in.NotRun) > 0 {
		s.heading("Cases not run")
		notRun := make([][]string, 0, len(in.NotRun))
		for _, id := range in.NotRun {
			why := "not reached"
			if id == in.Case && in.Phase != "" {
				why = "interrupted in " + in.Phase + ": not recorded"
			}
			notRun = append(notRun, []string{id, why})
		}
		s.table(table{ID: "not-run-cases", Header: []string{"case", "state"}, Rows: notRun})
		if r.Meta.Command == "" || r.Meta.Command == "run" {
			s.para("meshbench run --resume RUN_DIR runs them and keeps the recorded cases.")
		}
	}
	return s
}

// invocationsText describes the meshbench processes of a resumed run: how many, and each span with its outcome.
func invocationsText(invs []results.Invocation) string {
	parts := make([]string, 0, len(invs))
	for _, inv := range invs {
		span := fmtTime(inv.Start) + " to "
		if inv.End != nil {
			span += fmtTime(*inv.End) + " (" + inv.End.Sub(inv.Start).Round(time.Second).String() + ")"
		} else {
			span += "not recorded"
		}
		out := orText(inv.Outcome, "running")
		if inv.Signal != "" {
			out += ", " + inv.Signal
		}
		parts = append(parts, span+" "+out)
	}
	return fmt.Sprintf("%d (the first run and %d --resume; took counts only these spans): %s", len(invs), len(invs)-1, strings.Join(parts, "; "))
}

func (r Report) methodSection() section {
	s := section{ID: SectionMethod, Title: "Method and warnings"}
	s.list([]string{
		"Resource figures come from the per-window min, max and average of each component's CPU (millicores) and memory (MiB) as the recorded source measured them over fixed windows.",
		"Means are over repetitions; intervals are Student t " + confPct(r.Summary.Confidence) + " confidence intervals of the mean; differences between modes use Welch's interval (unequal variances).",
		"Files next to this report: series.csv (every statistic), deltas.csv (every comparison, per-1000-rps included), cases.csv (every case with status and reason), charts/*.svg.",
	})
	if shared := r.sharedComponents(); len(shared) > 0 {
		s.heading("Shared components")
		s.list(shared)
	}
	if warnings := append(slices.Clone(r.Warnings), r.baselineWarnings()...); len(warnings) > 0 {
		s.heading("Warnings")
		s.list(warnings)
	} else {
		s.para("No warnings were recorded while reading and summarising the run.")
	}
	return s
}

// sharedComponents explains, for each shared Istio component the run measured, what its figures cover: they are part
// of the mesh total, but one instance serves more than this app.
func (r Report) sharedComponents() []string {
	seen := map[string]bool{}
	for _, sm := range r.Samples {
		seen[string(sm.Component)] = true
	}
	rev := ""
	if ist := r.Meta.Cluster.Istio; ist != nil && ist.Revision != "" {
		rev = " (revision " + ist.Revision + ")"
	}
	var out []string
	if seen[string(results.ComponentZtunnel)] {
		out = append(out, "ztunnel runs one per node and carries every ambient pod of its node, not only this app's: only the ztunnels on the nodes running the app and its waypoints are counted, and only in the ambient modes (those of nodes that run load clients only are the benchmark's, "+string(results.ComponentLoadgenProxy)+"). Its figure is shared; on a busy node it includes other workloads' traffic, and on a node with a load client that client's outbound proxying.")
	}
	if seen[string(results.ComponentIstioCNI)] {
		out = append(out, "istio-cni runs one per node and enrols every ambient pod of its node: counted on the test nodes (those of the app, its waypoints and its load clients) and in the ambient modes only; it is in no total.")
	}
	if seen[string(results.ComponentIstiod)] {
		out = append(out, "istiod"+rev+" is the control plane of the whole mesh: counted in every mode with a mesh; its cost grows with every proxy and service in the mesh, not only this app's.")
	}
	if len(out) > 0 {
		out = append(out, "Waypoints are the run's own (found by the gateway-name of the Gateways it created), never other apps' waypoints. The mesh total adds sidecars, ztunnel, waypoints and istiod, so it includes the shared parts above.")
	}
	return out
}

func slug(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('-')
		}
		for _, c := range strings.ToLower(p) {
			if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
				b.WriteRune(c)
			} else {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}
