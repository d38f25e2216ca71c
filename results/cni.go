package results

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The pod network table (meshbench cni, and the report's "Pod network" section) is computed here, once, from a
// Summary: its Series of component cni-test (labels path, test, tool) and its Cases. cni prints it after a run,
// the report renders it from summary.json; neither computes means of its own.

// Labels, metrics and the stat of the pod network samples (cni writes them).
const (
	CNILabelPath = "path"
	CNILabelTest = "test"
	CNILabelTool = "tool"
	// CNILabelSource names where a resource sample of a cni run came from: the resource collector's own source
	// (prometheus, or kubelet-resource without Prometheus) or CNISourceCgroup. It keeps the sources' series apart in
	// the summary (the Series key holds the labels, not Sample.Source).
	CNILabelSource = "source"
	// CNILabelPod is set on the cgroup-1s figures of one test pod; the path total has none.
	CNILabelPod = "pod"

	CNIStatValue = "value"
)

// CNISourceCgroup is the resource source of the cni test pods that needs no Prometheus: every test container runs
// under `meshbench-agent cgroups`, which reads the container's own cgroup every second (internal/cgroupstat), so
// cases shorter than the collector's rate range still get CPU figures.
const CNISourceCgroup = "cgroup-1s"

// CNI row statuses.
const (
	CNIRowOK      = "ok"
	CNIRowPartial = "partial" // some samples failed
	CNIRowFailed  = "failed"
	CNIRowSkipped = "skipped"
)

// CNIHeadline is the metric and unit a pod network test's table cell shows.
func CNIHeadline(test string) (Metric, Unit) {
	switch test {
	case "tcp":
		return "throughput", "Gbit/s"
	case "udp":
		return "throughput", "Mbit/s"
	case "crr":
		return "crr", "tps"
	default:
		return "rr", "tps"
	}
}

// ParseCNICaseID splits a pod network case ID into path and test. It accepts the recorded form "<path>/<test>"
// (meshbench cni's cases.jsonl), the plan form of earlier versions "<path>.<test>", and a "cni/" prefix (runs that
// hold mesh and network cases). ok is false for anything else (mesh case IDs, "idle").
func ParseCNICaseID(id string) (path, test string, ok bool) {
	id = strings.TrimPrefix(id, "cni/")
	if p, t, found := strings.Cut(id, "/"); found && p != "" && t != "" && !strings.Contains(t, "/") {
		return p, t, true
	}
	if p, t, found := strings.Cut(id, "."); found && p != "" && t != "" && !strings.Contains(t, ".") && isCNITest(t) {
		return p, t, true
	}
	return "", "", false
}

func isCNITest(t string) bool { return t == "tcp" || t == "udp" || t == "rr" || t == "crr" }

// CNIStat is one metric of a test over its samples.
type CNIStat struct {
	Name   string    `json:"name"` // "<metric> <stat>", e.g. "loss value", "latency p99"
	Unit   Unit      `json:"unit"`
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	StdDev float64   `json:"stddev"`
	CI     *Interval `json:"ci,omitempty"`
}

// CNIRow is one path x test: the headline mean with its confidence interval, or why there is none.
type CNIRow struct {
	Path   string    `json:"path"`
	Test   string    `json:"test"`
	Tool   string    `json:"tool,omitempty"`
	Status string    `json:"status"`
	Reason string    `json:"reason,omitempty"` // skipped/failed: why; partial: the failures
	Metric Metric    `json:"metric"`
	Unit   Unit      `json:"unit"`
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	StdDev float64   `json:"stddev"`
	CI     *Interval `json:"ci,omitempty"`
	Values []float64 `json:"values,omitempty"`
	// Secondary are the other metrics of the test (loss, jitter, retransmits, latency percentiles, ...).
	Secondary []CNIStat `json:"secondary,omitempty"`
	Warnings  []string  `json:"warnings,omitempty"`
	// CaseID is the recorded case (empty when the summary holds series without a case record).
	CaseID string `json:"caseID,omitempty"`
}

// CNIRows is the pod network table of a summary: one row per path x test, in the order the cases were recorded
// (series without a case record last, in series order). A failed or skipped case gives a row with its reason and no
// figure. It is pure.
func CNIRows(sum Summary) []CNIRow {
	type pt struct{ path, test string }
	var order []pt
	rows := map[pt]*CNIRow{}
	get := func(path, test string) *CNIRow {
		k := pt{path, test}
		if r, ok := rows[k]; ok {
			return r
		}
		metric, unit := CNIHeadline(test)
		r := &CNIRow{Path: path, Test: test, Metric: metric, Unit: unit, Status: CNIRowOK}
		rows[k], order = r, append(order, k)
		return r
	}
	for _, c := range sum.Cases {
		if c.Mode != "" {
			continue
		}
		path, test := c.Facts[FactCNIPath], c.Facts[FactCNITest]
		if path == "" || test == "" {
			var ok bool
			if path, test, ok = ParseCNICaseID(c.CaseID); !ok {
				continue
			}
		}
		r := get(path, test)
		r.CaseID, r.Tool = c.CaseID, c.Facts[FactCNITool]
		switch {
		case c.Status == StatusSkipped:
			r.Status, r.Reason = CNIRowSkipped, orNoReason(c.Reason)
		case c.Status != StatusOK:
			r.Status, r.Reason = CNIRowFailed, orNoReason(c.Reason)
		case c.Partial != "":
			r.Status, r.Reason = CNIRowPartial, c.Partial
		case c.Reason != "":
			r.Reason = c.Reason
		}
		r.Warnings = slices.Clone(c.SampleWarnings)
	}
	measured := map[pt]bool{}
	for _, x := range sum.Series {
		if x.Component != ComponentCNITest || x.Metric == "cpu" || x.Metric == "memory" {
			continue
		}
		labels := ParseLabels(x.Labels)
		path, test := labels[CNILabelPath], labels[CNILabelTest]
		if path == "" || test == "" {
			continue
		}
		r := get(path, test)
		if r.Status == CNIRowFailed || r.Status == CNIRowSkipped {
			continue // Summarize leaves such cases' samples out; a row never shows a figure and a failure at once
		}
		if t := labels[CNILabelTool]; t != "" {
			r.Tool = t
		}
		if x.Metric == r.Metric && x.Stat == CNIStatValue && !measured[pt{path, test}] {
			measured[pt{path, test}] = true
			r.Unit, r.N, r.Mean, r.StdDev, r.CI, r.Values = x.Unit, x.N, x.Mean, x.StdDev, x.CI, slices.Clone(x.Values)
			continue
		}
		r.Secondary = append(r.Secondary, CNIStat{Name: string(x.Metric) + " " + string(x.Stat), Unit: x.Unit, N: x.N, Mean: x.Mean, StdDev: x.StdDev, CI: x.CI})
	}
	out := make([]CNIRow, 0, len(order))
	for _, k := range order {
		r := rows[k]
		if (r.Status == CNIRowOK || r.Status == CNIRowPartial) && !measured[k] {
			r.Status = CNIRowFailed
			r.Reason = strings.TrimPrefix(strings.TrimPrefix(r.Reason+"; ", "; ")+"no "+string(r.Metric)+" sample recorded", "; ")
		}
		out = append(out, *r)
	}
	return out
}

func orNoReason(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}

// Detail is the secondary metrics in a few words.
func (r CNIRow) Detail() string {
	get := func(name string) (CNIStat, bool) {
		i := slices.IndexFunc(r.Secondary, func(s CNIStat) bool { return s.Name == name })
		if i < 0 {
			return CNIStat{}, false
		}
		return r.Secondary[i], true
	}
	var parts []string
	addf := func(name, format string) {
		if s, ok := get(name); ok {
			v := FormatNumber(s.Mean)
			if s.Unit == "count" {
				v = strconv.FormatFloat(s.Mean, 'f', 0, 64)
			}
			parts = append(parts, fmt.Sprintf(format, v))
		}
	}
	switch r.Test {
	case "tcp":
		addf("retransmits value", "retransmits %s")
		addf("rtt avg", "rtt %s ms")
	case "udp":
		addf("loss value", "loss %s %%")
		addf("jitter value", "jitter %s ms")
		addf("sent value", "sent %s Mbit/s")
	default:
		addf("latency p50", "p50 %s ms")
		addf("latency p99", "p99 %s ms")
		addf("latency p99.9", "p99.9 %s ms")
		if s, ok := get("errors value"); ok && s.Mean > 0 {
			parts = append(parts, fmt.Sprintf("errors %s/sample", FormatNumber(s.Mean)))
		}
	}
	if len(r.Warnings) > 0 {
		parts = append(parts, fmt.Sprintf("%d warning(s)", len(r.Warnings)))
	}
	return strings.Join(parts, ", ")
}

// CNIResourceRow is CPU or memory of one component over the idle window or a case's test window: the means of the
// summary's min, avg and max series.
type CNIResourceRow struct {
	Window    string    `json:"window"` // idle | test
	Path      string    `json:"path"`
	Test      string    `json:"test,omitempty"`   // "" for idle
	Component Component `json:"component"`        // cni-test (the path's pods) | node (one test node)
	Node      string    `json:"node,omitempty"`   // component node: which test node
	Series    string    `json:"series,omitempty"` // component node: the series it came from
	// Source is the sample's source label (prometheus, kubelet-resource, cgroup-1s); "" in runs before the label.
	Source string   `json:"source,omitempty"`
	Pod    string   `json:"pod,omitempty"` // source cgroup-1s: one test pod; "" for the path's pods together
	Metric Metric   `json:"metric"`        // cpu | memory
	Unit   Unit     `json:"unit"`
	Min    *float64 `json:"min,omitempty"`
	Avg    *float64 `json:"avg,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	// TooSparse is set when the average lies outside [min, max]: min and max are not figures (see AvgOutside).
	TooSparse bool `json:"tooSparse,omitempty"`
}

// Label keys of node resource samples (collectors/prom writes them).
const (
	labelNode   = "node"
	labelSeries = "series"
)

// CNIResourceRows groups the summary's cpu and memory series of components cni-test and node by window, path, test,
// component, node and metric, in series order. It is pure.
func CNIResourceRows(sum Summary) []CNIResourceRow {
	type key struct {
		window, path, test string
		comp               Component
		node, source, pod  string
		metric             Metric
	}
	var order []key
	rows := map[key]*CNIResourceRow{}
	for _, x := range sum.Series {
		if (x.Component != ComponentCNITest && x.Component != ComponentNode) || (x.Metric != MetricCPU && x.Metric != MetricMemory) || x.Mode != "" {
			continue
		}
		l := ParseLabels(x.Labels)
		if l[CNILabelPath] == "" {
			continue
		}
		k := key{x.Window, l[CNILabelPath], l[CNILabelTest], x.Component, l[labelNode], l[CNILabelSource], l[CNILabelPod], x.Metric}
		r, ok := rows[k]
		if !ok {
			r = &CNIResourceRow{Window: k.window, Path: k.path, Test: k.test, Component: k.comp, Node: k.node, Series: l[labelSeries],
				Source: k.source, Pod: k.pod, Metric: k.metric, Unit: x.Unit}
			rows[k], order = r, append(order, k)
		}
		v := x.Mean
		switch x.Stat {
		case "min":
			r.Min = &v
		case "avg":
			r.Avg = &v
		case "max":
			r.Max = &v
		}
	}
	out := make([]CNIResourceRow, 0, len(order))
	for _, k := range order {
		r := rows[k]
		r.TooSparse = r.Min != nil && r.Avg != nil && r.Max != nil && AvgOutside(*r.Avg, *r.Min, *r.Max)
		out = append(out, *r)
	}
	return out
}

// AvgOutside reports whether avg lies outside [lo, hi] by more than rounding (1e-9 relative). Consistent data cannot
// give that: the counter was sampled too sparsely for min and max, which must then not be shown (avg stands).
func AvgOutside(avg, lo, hi float64) bool {
	eps := 1e-9 * max(math.Abs(lo), math.Abs(hi), math.Abs(avg))
	return avg < lo-eps || avg > hi+eps
}

// TooSparse is what a table shows instead of a min or max that AvgOutside rejects; TooSparseNote explains it.
const (
	TooSparse     = "n/a: too sparse"
	TooSparseNote = "n/a: too sparse: the average lies outside [min, max], which consistent data cannot give: the usage counter was sampled too sparsely for min and max over this window (lengthen the window, or shorten the kubelet's cAdvisor housekeeping interval). The average covers the whole window and is shown."
)

// ParseLabels is the inverse of CanonicalLabels.
func ParseLabels(canonical string) map[string]string {
	out := map[string]string{}
	if canonical == "" {
		return out
	}
	var k, cur strings.Builder
	inKey := true
	flush := func() {
		if inKey {
			out[cur.String()] = ""
		} else {
			out[k.String()] = cur.String()
		}
		k.Reset()
		cur.Reset()
		inKey = true
	}
	for i := 0; i < len(canonical); i++ {
		c := canonical[i]
		switch {
		case c == '\\' && i+1 < len(canonical):
			i++
			cur.WriteByte(canonical[i])
		case c == '=' && inKey:
			k.WriteString(cur.String())
			cur.Reset()
			inKey = false
		case c == ',':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// FormatNumber prints 4 significant digits without exponent for the usual ranges (the pod network table's figures).
func FormatNumber(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "NaN"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0:
		return "0"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// CNINodeTotal is the whole-node CPU or memory average of a window (idle, or a case's test window) added up over the
// test nodes of its path, each host counted once (SumNodes): Nodes name every node it covers, Counted the ones added.
type CNINodeTotal struct {
	Window  string   `json:"window"`
	Path    string   `json:"path"` // "all" for the idle window's nodes of every path
	Test    string   `json:"test,omitempty"`
	Metric  Metric   `json:"metric"`
	Unit    Unit     `json:"unit"`
	Avg     float64  `json:"avg"`
	Nodes   []string `json:"nodes"`
	Counted []string `json:"counted"`
	Notes   []string `json:"notes,omitempty"`
}

// CNINodeTotals adds the node rows' averages (component node of CNIResourceRows) per window, path, test and metric,
// in row order, counting each host of nodes once. Only averages add up (maxima of different nodes fall at different
// moments). A group whose rows disagree on the unit gets no total. It is pure.
func CNINodeTotals(rows []CNIResourceRow, nodes []NodeFacts) []CNINodeTotal {
	type key struct {
		window, path, test string
		metric             Metric
	}
	var order []key
	figures := map[key]map[string]float64{}
	units := map[key]Unit{}
	mixed := map[key]bool{}
	for _, r := range rows {
		if r.Component != ComponentNode || r.Node == "" || r.Avg == nil {
			continue
		}
		k := key{r.Window, r.Path, r.Test, r.Metric}
		if figures[k] == nil {
			figures[k], units[k], order = map[string]float64{}, r.Unit, append(order, k)
		}
		if units[k] != r.Unit {
			mixed[k] = true
		}
		figures[k][r.Node] = *r.Avg
	}
	var out []CNINodeTotal
	for _, k := range order {
		if mixed[k] {
			continue
		}
		t := SumNodes(figures[k], nodes)
		out = append(out, CNINodeTotal{Window: k.window, Path: k.path, Test: k.test, Metric: k.metric, Unit: units[k], Avg: t.Value,
			Nodes: t.Nodes, Counted: t.Counted, Notes: t.Notes})
	}
	return out
}
