package charts

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/results"
)

// rank orders names by one of results' canonical orders, then unknown names alphabetically.
func rank[T ~string](order []T) func(a, b string) int {
	o := results.Order(order)
	return func(a, b string) int { return o(T(a), T(b)) }
}

// SortModes sorts modes canonically (none, sidecar, ambient, waypoint, then others by name).
func SortModes(modes []string) { slices.SortStableFunc(modes, rank(results.Modes)) }

// SortComponents sorts components canonically (app, sidecar, ztunnel, waypoint, istiod, ..., mesh).
func SortComponents(cs []string) { slices.SortStableFunc(cs, rank(results.Components)) }

// sortStats sorts stats as min, p50, ..., p99.9, max.
func sortStats(ss []string) { slices.SortStableFunc(ss, rank(results.Percentiles)) }

// SortPaths sorts CNI paths as host, same-node, cross-node, service.
func SortPaths(ps []string) { slices.SortStableFunc(ps, rank(results.CNIPaths)) }

// SortTests sorts CNI tests as tcp, udp, rr, crr.
func SortTests(ts []string) { slices.SortStableFunc(ts, rank(results.CNITests)) }

// LabelValue returns the value of name in a canonical "k=v,k=v" label string, or "".
func LabelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// distinct collects f(x) for every x, without duplicates, in first-seen order.
func distinct[T any](xs []T, f func(T) string) []string {
	var out []string
	for _, x := range xs {
		if v := f(x); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// firstSeen ranks f(x) by first appearance: topologies keep the order the run measured them in.
func firstSeen[T any](xs []T, f func(T) string) map[string]int {
	rank := map[string]int{}
	for _, x := range xs {
		if _, ok := rank[f(x)]; !ok {
			rank[f(x)] = len(rank)
		}
	}
	return rank
}

// resourceComponents are drawn in resource charts; the benchmark's own pods and proxies (load clients, test pods)
// and whole nodes are not the data plane's cost and would dwarf it.
func resourceComponent(c results.Component) bool {
	return !results.IsBenchmarkComponent(c) && c != results.ComponentNode
}

// ResourceSelection picks one resource chart out of a summary.
type ResourceSelection struct {
	Topology string
	Load     string         // "" for idle windows
	Window   string         // results.WindowIdle | results.WindowLoad
	Metric   results.Metric // cpu | memory
}

// ID is an element id for the selection.
func (r ResourceSelection) ID() string {
	return slug("res", string(r.Metric), r.Topology, r.Window, r.Load)
}

// ResourceSelections lists every resource chart a summary supports: per topology (in the summary's order), idle then
// each load level, cpu then memory.
func ResourceSelections(s results.Summary) []ResourceSelection {
	type tw struct{ topo, window, load string }
	var combos []tw
	for _, se := range s.Series {
		if (se.Metric != results.MetricCPU && se.Metric != results.MetricMemory) || se.Stat != results.StatAvg || !resourceComponent(se.Component) {
			continue
		}
		c := tw{se.Topology, se.Window, se.Load}
		if !slices.Contains(combos, c) {
			combos = append(combos, c)
		}
	}
	topoRank := firstSeen(combos, func(c tw) string { return c.topo })
	slices.SortStableFunc(combos, func(a, b tw) int {
		return cmp.Or(cmp.Compare(topoRank[a.topo], topoRank[b.topo]), cmp.Compare(windowRank(a.window), windowRank(b.window)),
			compareLoads(a.load, b.load))
	})
	var out []ResourceSelection
	for _, c := range combos {
		for _, m := range []results.Metric{results.MetricCPU, results.MetricMemory} {
			out = append(out, ResourceSelection{Topology: c.topo, Load: c.load, Window: c.window, Metric: m})
		}
	}
	return out
}

func windowRank(w string) int {
	switch w {
	case results.WindowIdle:
		return 0
	case results.WindowLoad:
		return 1
	default:
		return 2
	}
}

// compareLoads orders load levels numerically, "max" last.
func compareLoads(a, b string) int {
	na, ea := parseLoad(a)
	nb, eb := parseLoad(b)
	return cmp.Or(cmp.Compare(ea, eb), cmp.Compare(na, nb), cmp.Compare(a, b))
}

func parseLoad(s string) (float64, int) {
	var v float64
	if _, err := fmt.Sscanf(s, "%g", &v); err == nil {
		return v, 1
	}
	if s == "" {
		return 0, 0
	}
	return 0, 2
}

// ResourceChart builds the grouped bars (components x modes, mean of the per-window average with its CI) for sel.
func ResourceChart(s results.Summary, sel ResourceSelection) BarChart {
	var picked []results.Series
	for _, se := range s.Series {
		if se.Topology == sel.Topology && se.Load == sel.Load && se.Window == sel.Window && se.Metric == sel.Metric &&
			se.Stat == results.StatAvg && se.Labels == "" && resourceComponent(se.Component) {
			picked = append(picked, se)
		}
	}
	groups := distinct(picked, func(se results.Series) string { return string(se.Component) })
	SortComponents(groups)
	series := distinct(picked, func(se results.Series) string { return string(se.Mode) })
	SortModes(series)
	unit := ""
	var bars []Bar
	for _, se := range picked {
		unit = string(se.Unit)
		bars = append(bars, Bar{Group: string(se.Component), Series: string(se.Mode), Value: se.Mean, CI: se.CI, N: se.N})
	}
	what := map[results.Metric]string{results.MetricCPU: "CPU", results.MetricMemory: "Memory"}[sel.Metric]
	return BarChart{
		ID:       sel.ID(),
		Title:    fmt.Sprintf("%s per component and mode — %s", what, windowTitle(sel.Window, sel.Load)),
		Subtitle: fmt.Sprintf("topology %s · mean of the window average over repetitions · error bars: %s CI", sel.Topology, confText(s.Confidence)),
		YLabel:   fmt.Sprintf("%s (%s)", what, unit),
		Unit:     unit,
		Groups:   groups,
		Series:   series,
		Bars:     bars,
		Caveats:  results.SummaryDataPlaneNotes(s.DataPlane, s.DataPlanes, modesOf(series)),
	}
}

func windowTitle(window, load string) string {
	switch {
	case window == results.WindowIdle:
		return "idle"
	case load != "":
		return "under load (" + load + " qps)"
	default:
		return window
	}
}

func confText(c float64) string {
	if c <= 0 {
		return "95 %"
	}
	return fmt.Sprintf("%g %%", 100*c)
}

// LatencySelection picks one latency chart.
type LatencySelection struct {
	Topology string
	Load     string
}

// LatencySelections lists the latency charts a summary supports (per topology and load level).
func LatencySelections(s results.Summary) []LatencySelection {
	var out []LatencySelection
	for _, se := range s.Series {
		if se.Metric != results.MetricLatency || se.Window != results.WindowLoad || se.Mode == "" {
			continue
		}
		sel := LatencySelection{Topology: se.Topology, Load: se.Load}
		if !slices.Contains(out, sel) {
			out = append(out, sel)
		}
	}
	topoRank := firstSeen(out, func(s LatencySelection) string { return s.Topology })
	slices.SortStableFunc(out, func(a, b LatencySelection) int {
		return cmp.Or(cmp.Compare(topoRank[a.Topology], topoRank[b.Topology]), compareLoads(a.Load, b.Load))
	})
	return out
}

// LatencyChart builds latency percentiles (groups) per mode (series) for sel: the response time (from when each
// request was due: coordinated omission counted) when the summary has it for sel, as the report's latency tables
// show, else the service time (from when it was sent).
func LatencyChart(s results.Summary, sel LatencySelection) BarChart {
	pick := func(metric results.Metric) []results.Series {
		var picked []results.Series
		for _, se := range s.Series {
			if se.Metric == metric && se.Window == results.WindowLoad && se.Topology == sel.Topology &&
				se.Load == sel.Load && se.Mode != "" && se.Labels == "" && strings.HasPrefix(string(se.Stat), "p") {
				picked = append(picked, se)
			}
		}
		return picked
	}
	title, what := "Response time percentiles per mode", "fortio client response time (from when each request was due)"
	picked := pick(results.MetricResponseTime)
	if len(picked) == 0 {
		title, what = "Request latency percentiles per mode", "fortio client service time (from when each request was sent)"
		picked = pick(results.MetricLatency)
	}
	groups := distinct(picked, func(se results.Series) string { return string(se.Stat) })
	sortStats(groups)
	series := distinct(picked, func(se results.Series) string { return string(se.Mode) })
	SortModes(series)
	unit := ""
	var bars []Bar
	for _, se := range picked {
		unit = string(se.Unit)
		bars = append(bars, Bar{Group: string(se.Stat), Series: string(se.Mode), Value: se.Mean, CI: se.CI, N: se.N})
	}
	return BarChart{
		ID:       slug("lat", sel.Topology, sel.Load),
		Title:    title + " — " + windowTitle(results.WindowLoad, sel.Load),
		Subtitle: fmt.Sprintf("topology %s · %s · error bars: %s CI over repetitions", sel.Topology, what, confText(s.Confidence)),
		YLabel:   "latency (" + unit + ")",
		Unit:     unit,
		Groups:   groups,
		Series:   series,
		Bars:     bars,
		Caveats:  results.SummaryDataPlaneNotes(s.DataPlane, s.DataPlanes, modesOf(series)),
	}
}

// CNISelection picks one network chart: a metric of one test (throughput of tcp, rr of rr, ...).
type CNISelection struct {
	Metric results.Metric
	Test   string
}

// CNISelections lists the network charts a summary supports, tcp, udp, rr, crr.
func CNISelections(s results.Summary) []CNISelection {
	var out []CNISelection
	for _, se := range cniSeries(s) {
		sel := CNISelection{Metric: se.Metric, Test: LabelValue(se.Labels, results.CNILabelTest)}
		if !slices.Contains(out, sel) {
			out = append(out, sel)
		}
	}
	slices.SortStableFunc(out, func(a, b CNISelection) int { return rank(results.CNITests)(a.Test, b.Test) })
	return out
}

func cniSeries(s results.Summary) []results.Series {
	var out []results.Series
	for _, se := range s.Series {
		if se.Component != results.ComponentCNITest || LabelValue(se.Labels, results.CNILabelPath) == "" {
			continue
		}
		if (se.Metric == results.MetricThroughput || se.Metric == results.MetricRR || se.Metric == results.MetricCRR) && (se.Stat == results.StatValue || se.Stat == results.StatAvg) {
			out = append(out, se)
		}
	}
	return out
}

// CNIChart builds the per-path bars for sel against the host path as baseline. Paths with failed or skipped cases
// can be passed in missing (path -> reason) and are drawn as "n/a: reason".
func CNIChart(s results.Summary, sel CNISelection, missing map[string]string) BaselineChart {
	var picked []results.Series
	for _, se := range cniSeries(s) {
		if se.Metric == sel.Metric && LabelValue(se.Labels, results.CNILabelTest) == sel.Test {
			picked = append(picked, se)
		}
	}
	slices.SortStableFunc(picked, func(a, b results.Series) int {
		return rank(results.CNIPaths)(LabelValue(a.Labels, results.CNILabelPath), LabelValue(b.Labels, results.CNILabelPath))
	})
	c := BaselineChart{
		ID:       slug("cni", sel.Test, string(sel.Metric)),
		Title:    fmt.Sprintf("Pod network: %s %s per path", testTitle(sel.Test), metricTitle(sel.Metric)),
		Subtitle: fmt.Sprintf("mean of the test samples · error bars: %s CI · bands relative to the host-network baseline", confText(s.Confidence)),
	}
	unit := ""
	for _, se := range picked {
		if unit == "" {
			unit = string(se.Unit)
		}
	}
	c.Unit = unit
	c.XLabel = metricTitle(sel.Metric) + " (" + unit + ")"
	seen := map[string]bool{}
	for _, se := range picked {
		path := LabelValue(se.Labels, results.CNILabelPath)
		seen[path] = true
		f := UnitFactor(se.Unit, results.Unit(unit))
		bar := hBar{Label: path, Value: se.Mean * f, N: se.N}
		if se.CI != nil {
			bar.CI = &results.Interval{Low: se.CI.Low * f, High: se.CI.High * f}
		}
		if path == string(results.CNIPathHost) {
			c.Baseline = &bar
			c.BaselineLabel = "host (baseline)"
			continue
		}
		c.Bars = append(c.Bars, bar)
	}
	paths := make([]string, 0, len(missing))
	for p := range missing {
		paths = append(paths, p)
	}
	SortPaths(paths)
	for _, p := range paths {
		if seen[p] {
			continue
		}
		if p == string(results.CNIPathHost) {
			c.Baseline = &hBar{Label: p, Missing: missing[p]}
			c.BaselineLabel = "host (baseline)"
			continue
		}
		c.Bars = append(c.Bars, hBar{Label: p, Missing: missing[p]})
	}
	return c
}

func metricTitle(m results.Metric) string {
	switch m {
	case results.MetricRR, results.MetricCRR:
		return "transaction rate"
	}
	return string(m)
}

func testTitle(t string) string {
	switch results.CNITest(t) {
	case results.CNITestTCP:
		return "iperf3 TCP"
	case results.CNITestUDP:
		return "iperf3 UDP"
	case results.CNITestRR:
		return "TCP_RR"
	case results.CNITestCRR:
		return "TCP_CRR"
	}
	return t
}

// DirectionHigherIsBetter reports whether a larger value of metric is better (rates), as opposed to costs and
// latencies.
func DirectionHigherIsBetter(metric results.Metric) bool {
	switch metric {
	case results.MetricThroughput, results.MetricRR, results.MetricCRR, results.MetricQPS:
		return true
	}
	return false
}

// UnitFactor converts bit rates between units (multiply a value in from by it to get to); other units convert only
// to themselves (factor 1).
func UnitFactor(from, to results.Unit) float64 {
	scale := map[results.Unit]float64{results.UnitBps: 1, results.UnitKbps: 1e3, results.UnitMbps: 1e6, results.UnitGbps: 1e9}
	f, okF := scale[from]
	t, okT := scale[to]
	if !okF || !okT {
		return 1
	}
	return f / t
}

// slug joins parts into an element id: lower-case letters, digits and '-'.
func slug(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if p == "" {
			continue
		}
		if i > 0 && b.Len() > 0 {
			b.WriteByte('-')
		}
		for _, r := range strings.ToLower(p) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				b.WriteRune(r)
			default:
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}

// modesOf types mode names.
func modesOf(names []string) []results.Mode {
	out := make([]results.Mode, len(names))
	for i, n := range names {
		out[i] = results.Mode(n)
	}
	return out
}
