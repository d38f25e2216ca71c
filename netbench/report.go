package netbench

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	netcol "github.com/meshbench/meshbench/collectors/net"
	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Row statuses.
const (
	RowOK      = "ok"
	RowPartial = "partial" // some samples failed
	RowFailed  = "failed"
	RowSkipped = "skipped"
)

// Report is what `meshbench cni` prints (-o table|json|yaml|csv).
type Report struct {
	RunID     string      `json:"runID"`
	RunDir    string      `json:"runDir,omitempty"`
	Namespace string      `json:"namespace"`
	Placement Placement   `json:"placement"`
	RRTool    netcol.Tool `json:"rrTool,omitempty"`
	// Confidence of every interval (0.95).
	Confidence float64        `json:"confidence"`
	Facts      Facts          `json:"facts"`
	Rows       []Row          `json:"rows"`
	Resources  []ResourceRow  `json:"resources,omitempty"`
	Pods       []PodPlacement `json:"pods,omitempty"`
	Notes      []string       `json:"notes,omitempty"`
}

// PodPlacement records where a test pod ran (verified after scheduling).
type PodPlacement struct {
	Role        Role   `json:"role"`
	Node        string `json:"node"`
	IP          string `json:"ip"`
	HostNetwork bool   `json:"hostNetwork,omitempty"`
}

// Facts are the cluster facts that explain the numbers.
type Facts struct {
	KubernetesVersion string    `json:"kubernetesVersion,omitempty"`
	CNI               string    `json:"cni,omitempty"`
	CNISource         string    `json:"cniSource,omitempty"`
	ServiceClusterIP  string    `json:"serviceClusterIP,omitempty"`
	MTU               []MTUFact `json:"mtu,omitempty"`
	// Nodes are the nodes the test pods ran on (kernel, runtime, allocatable).
	Nodes []results.NodeFacts `json:"nodes,omitempty"`
}

// MTUFact is the MTU of one interface, read in a pod.
type MTUFact struct {
	Node      string `json:"node"`
	Scope     string `json:"scope"` // pod (eth0 of a pod on the node) | node (default-route interface, from a hostNetwork pod)
	Interface string `json:"interface"`
	MTU       int    `json:"mtu"`
}

// Stat is one metric's mean over samples with its interval.
type Stat struct {
	Name   string            `json:"name"`
	Unit   string            `json:"unit"`
	N      int               `json:"n"`
	Mean   float64           `json:"mean"`
	StdDev float64           `json:"stddev"`
	CI     *results.Interval `json:"ci,omitempty"`
}

// Row is one path x test: the headline mean with its confidence interval, or why there is none.
type Row struct {
	Path   scenario.CNIPath  `json:"path"`
	Test   scenario.CNITest  `json:"test"`
	Tool   netcol.Tool       `json:"tool,omitempty"`
	Status string            `json:"status"`
	Reason string            `json:"reason,omitempty"` // skipped/failed: why; partial: the failures
	Metric string            `json:"metric"`
	Unit   string            `json:"unit"`
	N      int               `json:"n"`
	Mean   float64           `json:"mean"`
	StdDev float64           `json:"stddev"`
	CI     *results.Interval `json:"ci,omitempty"`
	Values []float64         `json:"values,omitempty"`
	// Secondary are the other metrics of the test (loss, jitter, retransmits, latency percentiles, ...).
	Secondary []Stat   `json:"secondary,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Outcome is one sample of a case: a parsed result or the reason it failed.
type Outcome struct {
	N      int
	Result *netcol.Result
	Err    error
}

// BuildRow summarises the samples of one case with results.MeanCI. It is pure.
func BuildRow(c Case, outs []Outcome, confidence float64) Row {
	metric, unit := Headline(c.Test)
	row := Row{Path: c.Path, Test: c.Test, Tool: c.Tool, Metric: metric, Unit: unit}
	if c.SkipReason != "" {
		row.Status, row.Reason = RowSkipped, c.SkipReason
		return row
	}
	var okSamples []results.Sample
	var failures []string
	for _, o := range outs {
		switch {
		case o.Err != nil:
			failures = append(failures, fmt.Sprintf("sample %d: %v", o.N, o.Err))
		case o.Result != nil:
			okSamples = append(okSamples, MeasurementSamples(c, o.N, results.Window{}, *o.Result)...)
			for _, w := range o.Result.Warnings {
				row.Warnings = append(row.Warnings, fmt.Sprintf("sample %d: %s", o.N, w))
			}
		}
	}
	switch {
	case len(outs) == 0:
		row.Status, row.Reason = RowFailed, "no sample ran (interrupted?)"
		return row
	case len(failures) == len(outs):
		row.Status, row.Reason = RowFailed, strings.Join(failures, "; ")
		return row
	case len(failures) > 0:
		row.Status, row.Reason = RowPartial, strings.Join(failures, "; ")
	default:
		row.Status = RowOK
	}
	for _, st := range statsOf(okSamples, confidence) {
		if st.Name == metric+" "+StatValue && st.Unit == unit {
			row.N, row.Mean, row.StdDev, row.CI = st.N, st.Mean, st.StdDev, st.CI
			row.Values = valuesOf(okSamples, metric, StatValue)
			continue
		}
		row.Secondary = append(row.Secondary, st)
	}
	return row
}

// statsOf groups samples by metric+stat (in first-seen order) and computes MeanCI of each.
func statsOf(samples []results.Sample, confidence float64) []Stat {
	var order []string
	vals := map[string][]float64{}
	units := map[string]string{}
	for _, s := range samples {
		k := s.Metric + " " + s.Stat
		if _, ok := vals[k]; !ok {
			order = append(order, k)
			units[k] = s.Unit
		}
		vals[k] = append(vals[k], s.Value)
	}
	out := make([]Stat, 0, len(order))
	for _, k := range order {
		mean, sd, ci := results.MeanCI(vals[k], confidence)
		out = append(out, Stat{Name: k, Unit: units[k], N: len(vals[k]), Mean: mean, StdDev: sd, CI: ci})
	}
	return out
}

func valuesOf(samples []results.Sample, metric, stat string) []float64 {
	var out []float64
	for _, s := range samples {
		if s.Metric == metric && s.Stat == stat {
			out = append(out, s.Value)
		}
	}
	return out
}

// ResourceRow is CPU or memory of one component over the idle window or a case's test window.
type ResourceRow struct {
	Window    string           `json:"window"` // idle | test
	Path      scenario.CNIPath `json:"path"`
	Test      scenario.CNITest `json:"test,omitempty"`   // "" for idle
	Component string           `json:"component"`        // cni-test (the path's pods) | node (one test node)
	Node      string           `json:"node,omitempty"`   // component node: which test node
	Series    string           `json:"series,omitempty"` // component node: the series it came from (prom.NodeSeries*)
	Metric    string           `json:"metric"`           // cpu | memory
	Unit      string           `json:"unit"`
	Min       *float64         `json:"min,omitempty"`
	Avg       *float64         `json:"avg,omitempty"`
	Max       *float64         `json:"max,omitempty"`
	Source    string           `json:"source,omitempty"`
}

// ResourceRows groups resource samples (component cni-test or node, metric cpu or memory) by window, path, test,
// component, node and metric, in first-seen order. It is pure.
func ResourceRows(samples []results.Sample) []ResourceRow {
	type key struct{ window, path, test, comp, node, metric string }
	var order []key
	rows := map[key]*ResourceRow{}
	for _, s := range samples {
		if s.Metric != "cpu" && s.Metric != "memory" {
			continue
		}
		k := key{s.Window.Kind, s.Labels[LabelPath], s.Labels[LabelTest], s.Component, s.Labels[prom.LabelNode], s.Metric}
		r, ok := rows[k]
		if !ok {
			r = &ResourceRow{Window: k.window, Path: scenario.CNIPath(k.path), Test: scenario.CNITest(k.test), Component: k.comp,
				Node: k.node, Series: s.Labels[prom.LabelSeries], Metric: k.metric, Unit: s.Unit, Source: s.Source}
			rows[k] = r
			order = append(order, k)
		}
		v := s.Value
		switch s.Stat {
		case "min":
			r.Min = ptrTo(v)
		case "avg":
			r.Avg = ptrTo(v)
		case "max":
			r.Max = ptrTo(v)
		}
	}
	out := make([]ResourceRow, 0, len(order))
	for _, k := range order {
		out = append(out, *rows[k])
	}
	return out
}

// Table renders the report like study B's table: one row per path x test with the mean, its interval, the unit and
// the tool; skipped and failed rows say why. Then the facts and the resource use.
func (r *Report) Table() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "meshbench cni  run %s  nodes A=%s B=%s", r.RunID, r.Placement.ClientNode, orDash(r.Placement.ServerNode))
	if r.RunDir != "" {
		fmt.Fprintf(&b, "  results %s", r.RunDir)
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tTEST\tVALUE\t95% CI\tUNIT\tTOOL\tN\tDETAIL")
	for _, row := range r.Rows {
		switch row.Status {
		case RowSkipped, RowFailed:
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t%s\t%d\t%s\n", row.Path, row.Test, row.Status, orDash(string(row.Tool)), row.N, oneLine(row.Reason, 160))
		default:
			detail := row.Detail()
			if row.Status == RowPartial {
				detail = "PARTIAL: " + oneLine(row.Reason, 100) + "; " + detail
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", row.Path, row.Test, num(row.Mean), ciText(row.CI), row.Unit, row.Tool, row.N, detail)
		}
	}
	_ = tw.Flush()
	b.WriteString("\n")
	r.writeFacts(&b)
	if len(r.Resources) > 0 {
		b.WriteString("\nresource use (min / avg / max over the window; node = each test node of the path on its own, [from series]):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WINDOW\tPATH\tTEST\tCOMPONENT\tNODE\tMETRIC\tMIN\tAVG\tMAX\tUNIT")
		for _, rr := range r.Resources {
			node := orDash(rr.Node)
			if rr.Series != "" {
				node += " [" + rr.Series + "]"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rr.Window, rr.Path, orDash(string(rr.Test)), rr.Component, node, rr.Metric,
				numPtr(rr.Min), numPtr(rr.Avg), numPtr(rr.Max), rr.Unit)
		}
		_ = tw.Flush()
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

func (r *Report) writeFacts(b *bytes.Buffer) {
	f := r.Facts
	cni := f.CNI
	if cni == "" {
		cni = "unknown"
	}
	fmt.Fprintf(b, "cluster: kubernetes %s, CNI %s (%s)", orDash(f.KubernetesVersion), cni, f.CNISource)
	if f.ServiceClusterIP != "" {
		fmt.Fprintf(b, ", Service ClusterIP %s", f.ServiceClusterIP)
	}
	b.WriteString("\n")
	if len(f.MTU) > 0 {
		var parts []string
		for _, m := range f.MTU {
			parts = append(parts, fmt.Sprintf("%s %s %s=%d", m.Node, m.Scope, m.Interface, m.MTU))
		}
		fmt.Fprintf(b, "mtu: %s\n", strings.Join(parts, ", "))
	}
	for _, n := range f.Nodes {
		fmt.Fprintf(b, "node %s: %s, kernel %s, %s, %s CPU, %s memory\n", n.Name, n.InternalIP, n.KernelVersion, n.ContainerRuntime, n.CPU, n.Memory)
	}
	if len(r.Pods) > 0 {
		var parts []string
		for _, p := range r.Pods {
			parts = append(parts, fmt.Sprintf("%s@%s(%s)", p.Role, p.Node, p.IP))
		}
		fmt.Fprintf(b, "pods: %s\n", strings.Join(parts, " "))
	}
}

// Detail is the secondary metrics in a few words.
func (row Row) Detail() string {
	get := func(name string) (Stat, bool) {
		i := slices.IndexFunc(row.Secondary, func(s Stat) bool { return s.Name == name })
		if i < 0 {
			return Stat{}, false
		}
		return row.Secondary[i], true
	}
	var parts []string
	addf := func(name, format string) {
		if s, ok := get(name); ok {
			v := num(s.Mean)
			if s.Unit == UnitCount {
				v = strconv.FormatFloat(s.Mean, 'f', 0, 64)
			}
			parts = append(parts, fmt.Sprintf(format, v))
		}
	}
	switch row.Test {
	case scenario.CNITestTCP:
		addf(MetricRetransmits+" "+StatValue, "retransmits %s")
		addf(MetricRTT+" avg", "rtt %s ms")
	case scenario.CNITestUDP:
		addf(MetricLoss+" "+StatValue, "loss %s %%")
		addf(MetricJitter+" "+StatValue, "jitter %s ms")
		addf(MetricSent+" "+StatValue, "sent %s Mbit/s")
	default:
		addf(MetricLatency+" p50", "p50 %s ms")
		addf(MetricLatency+" p99", "p99 %s ms")
		addf(MetricLatency+" p99.9", "p99.9 %s ms")
		if s, ok := get(MetricErrors + " " + StatValue); ok && s.Mean > 0 {
			parts = append(parts, fmt.Sprintf("errors %s/sample", num(s.Mean)))
		}
	}
	if len(row.Warnings) > 0 {
		parts = append(parts, fmt.Sprintf("%d warning(s)", len(row.Warnings)))
	}
	return strings.Join(parts, ", ")
}

// CSV renders one line per row (and the headline statistics only).
func (r *Report) CSV() (string, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"path", "test", "tool", "status", "metric", "unit", "n", "mean", "stddev", "ci_low", "ci_high", "detail", "reason"})
	for _, row := range r.Rows {
		lo, hi := "", ""
		if row.CI != nil {
			lo, hi = strconv.FormatFloat(row.CI.Low, 'g', 6, 64), strconv.FormatFloat(row.CI.High, 'g', 6, 64)
		}
		mean, sd := "", ""
		if row.N > 0 {
			mean, sd = strconv.FormatFloat(row.Mean, 'g', 6, 64), strconv.FormatFloat(row.StdDev, 'g', 6, 64)
		}
		if err := w.Write([]string{string(row.Path), string(row.Test), string(row.Tool), row.Status, row.Metric, row.Unit,
			strconv.Itoa(row.N), mean, sd, lo, hi, row.Detail(), row.Reason}); err != nil {
			return "", err
		}
	}
	w.Flush()
	return b.String(), w.Error()
}

// num prints 4 significant digits without exponent for the usual ranges.
func num(v float64) string {
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

func numPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return num(*v)
}

func ciText(ci *results.Interval) string {
	if ci == nil {
		return "n<2"
	}
	return "[" + num(ci.Low) + ", " + num(ci.High) + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
