package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gonum.org/v1/gonum/stat"

	"github.com/meshbench/meshbench/results"
)

// CurveSchema names the JSON layout of Curve. v2 measures every size in Method.Repetitions windows (Point.Repetitions);
// v1 had one window per size, its figures on the point itself. capacity.ParseIstiodCurve reads both.
const CurveSchema = "meshbench.dev/istiod-curve/v2"

// NotReal says what the curve does not contain. It is written into every curve.
var NotReal = []string{
	"no proxy is connected to istiod: the pods are kwok fakes without containers, so istio-proxy never runs and the xDS push cost to connected proxies (config generation per proxy, sending, ACKs) is absent; pilot_xds (connected proxies) shows it",
	"istiod's cost here is the service registry and injection side: watching and indexing Namespaces, Services, EndpointSlices and Pods, computing push contexts on changes, and the injector mutating every pod at creation (before the window)",
	"the pods' IPs are kwok's (the fake nodes' 10.244.100+.0/24 CIDRs): endpoints are real API objects but nothing answers on them",
	"the window starts after a settle time with no churn: the figures are a steady state, not the cost of rollouts",
}

// Stat3 is a statistic over a window.
type Stat3 struct {
	Min float64 `json:"min"`
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
}

// Repetition is one measurement window at a size: what istiod used in it.
type Repetition struct {
	Repetition    int            `json:"repetition"` // 1, 2, ...
	Window        results.Window `json:"window"`
	CPUMillicores Stat3          `json:"cpuMillicores"`
	MemoryMiB     Stat3          `json:"memoryMiB"`
	// Istiod are istiod's own metrics: gauges at the window's end, counters as their increase over the window.
	Istiod   map[string]float64 `json:"istiod,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
}

// Point is one size of the sweep and what istiod used at it.
type Point struct {
	Pods       int `json:"pods"`
	Services   int `json:"services"`
	Namespaces int `json:"namespaces"`
	// Endpoints are the ready endpoints in the EndpointSlices of the tool's Services.
	Endpoints int `json:"endpoints"`
	// Injected is how many of the pods carry istio-proxy (the real injector's work); InjectedSample names one.
	Injected       int    `json:"injected"`
	InjectedSample string `json:"injectedSample,omitempty"`
	// FakeNodes and OtherPodsOnFakeNodes (DaemonSet pods that tolerate every taint, e.g. ztunnel).
	FakeNodes            int     `json:"fakeNodes"`
	OtherPodsOnFakeNodes int     `json:"otherPodsOnFakeNodes"`
	ReadySeconds         float64 `json:"readySeconds"`
	// CPUMillicores and MemoryMiB summarise the repetitions (Summarize): the lowest minimum, the mean of the
	// averages, the highest maximum. A fit uses the repetitions themselves.
	CPUMillicores Stat3        `json:"cpuMillicores"`
	MemoryMiB     Stat3        `json:"memoryMiB"`
	Repetitions   []Repetition `json:"repetitions"`
	// IstiodRestarts is istiod's container restarts after the size's last window.
	IstiodRestarts int32    `json:"istiodRestarts"`
	Warnings       []string `json:"warnings,omitempty"`
}

// Curve is the output.
type Curve struct {
	Schema   string    `json:"schema"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	RunID    string    `json:"runID"`
	// Complete is false while the sweep runs or when it stopped early (Error says why).
	Complete bool     `json:"complete"`
	Error    string   `json:"error,omitempty"`
	Method   Method   `json:"method"`
	Istiod   Istiod   `json:"istiod"`
	NotReal  []string `json:"notReal"`
	Points   []Point  `json:"points"`
}

// Method is how the points were measured.
type Method struct {
	Steps                []int   `json:"steps"`
	PodsPerService       int     `json:"podsPerService"`
	ServicesPerNamespace int     `json:"servicesPerNamespace"`
	MaxNamespaces        int     `json:"maxNamespaces"`
	PodsPerNode          int     `json:"podsPerNode"`
	SettleSeconds        float64 `json:"settleSeconds"`
	WindowSeconds        float64 `json:"windowSeconds"`
	Repetitions          int     `json:"repetitions"`    // windows per size
	SpacingSeconds       float64 `json:"spacingSeconds"` // between a size's windows
	Kwok                 string  `json:"kwok"`
	KubernetesVersion    string  `json:"kubernetesVersion,omitempty"`
	Prometheus           string  `json:"prometheus"`
	ScrapeSeconds        float64 `json:"scrapeSeconds"`
	SampleSpacingSeconds float64 `json:"sampleSpacingSeconds"`
	RateRangeSeconds     float64 `json:"rateRangeSeconds"`
	CPU                  string  `json:"cpu"`
	Memory               string  `json:"memory"`
}

// Istiod is the measured control plane as it ran.
type Istiod struct {
	Namespace string            `json:"namespace"`
	Pod       string            `json:"pod"`
	Node      string            `json:"node,omitempty"`
	Image     string            `json:"image,omitempty"`
	Requests  map[string]string `json:"requests,omitempty"`
	Limits    map[string]string `json:"limits,omitempty"`
}

// StatsFrom picks istiod's CPU and memory statistics out of a window's samples. It is pure; a missing statistic is
// an error naming it (a point without its figures is no point).
func StatsFrom(samples []results.Sample) (cpu, mem Stat3, err error) {
	found := map[string]bool{}
	for _, s := range samples {
		if s.Component != results.ComponentIstiod {
			continue
		}
		var t *Stat3
		switch s.Metric {
		case results.MetricCPU:
			t = &cpu
		case results.MetricMemory:
			t = &mem
		default:
			continue
		}
		switch s.Stat {
		case "min":
			t.Min = s.Value
		case "avg":
			t.Avg = s.Value
		case "max":
			t.Max = s.Value
		default:
			continue
		}
		found[string(s.Metric)+" "+string(s.Stat)] = true
	}
	var missing []string
	for _, m := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
		for _, st := range []string{"min", "avg", "max"} {
			if !found[m+" "+st] {
				missing = append(missing, m+" "+st)
			}
		}
	}
	if len(missing) > 0 {
		return cpu, mem, fmt.Errorf("istiod figures missing from prometheus: %s", strings.Join(missing, ", "))
	}
	return cpu, mem, nil
}

// IstiodGauges and IstiodCounters are the istiod metrics a point records (pilot's monitoring port, /metrics).
var (
	IstiodGauges   = []string{"pilot_services", "pilot_xds", "pilot_virt_services", "go_goroutines", "go_memstats_heap_inuse_bytes"}
	IstiodCounters = []string{"pilot_xds_pushes", "pilot_k8s_reg_events", "pilot_push_triggers", "pilot_k8s_cfg_events"}
)

// ParseMetrics sums every series of the wanted families in a Prometheus text exposition. It is pure. A family that
// is absent is absent from the map (istiod registers some only on first use).
func ParseMetrics(r io.Reader, wanted []string) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse istiod metrics: %w", err)
	}
	out := map[string]float64{}
	for _, name := range wanted {
		f, ok := fams[name]
		if !ok {
			continue
		}
		sum := 0.0
		for _, m := range f.GetMetric() {
			sum += metricValue(m)
		}
		out[name] = sum
	}
	return out, nil
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// IstiodFigures joins two scrapes: gauges as at the end, counters as their increase (a counter that went down means
// istiod restarted: its end value is then the increase since the restart).
func IstiodFigures(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, g := range IstiodGauges {
		if v, ok := after[g]; ok {
			out[g] = v
		}
	}
	for _, c := range IstiodCounters {
		a, ok := after[c]
		if !ok {
			continue
		}
		d := a - before[c]
		if d < 0 {
			d = a
		}
		out[c+"_increase"] = d
	}
	return out
}

// Summarize is a size's figures over its repetitions: the lowest minimum, the mean of the averages (every window
// is as long as the others), the highest maximum. Pure; no repetitions give zeros.
func Summarize(reps []Repetition) (cpu, mem Stat3) {
	if len(reps) == 0 {
		return cpu, mem
	}
	cpu, mem = reps[0].CPUMillicores, reps[0].MemoryMiB
	var ca, ma float64
	for _, r := range reps {
		cpu.Min, cpu.Max = min(cpu.Min, r.CPUMillicores.Min), max(cpu.Max, r.CPUMillicores.Max)
		mem.Min, mem.Max = min(mem.Min, r.MemoryMiB.Min), max(mem.Max, r.MemoryMiB.Max)
		ca += r.CPUMillicores.Avg
		ma += r.MemoryMiB.Avg
	}
	n := float64(len(reps))
	cpu.Avg, mem.Avg = ca/n, ma/n
	return cpu, mem
}

// spread is the sample standard deviation of the repetitions' averages (NaN with fewer than 2).
func spread(reps []Repetition, avg func(Repetition) float64) float64 {
	xs := make([]float64, len(reps))
	for i, r := range reps {
		xs[i] = avg(r)
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	return stat.StdDev(xs, nil)
}

// Table renders the curve as Markdown: one row per size over its repetitions, then one row per window. It is pure.
func Table(c Curve) string {
	var b strings.Builder
	b.WriteString("| pods | services | namespaces | endpoints | injected | windows | istiod CPU m (min / avg / max) | CPU avg sd between windows | istiod memory MiB (min / avg / max) | memory avg sd between windows |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---|---:|---|---:|\n")
	for _, p := range c.Points {
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %.1f / %.1f / %.1f | %s | %.1f / %.1f / %.1f | %s |\n",
			p.Pods, p.Services, p.Namespaces, p.Endpoints, p.Injected, len(p.Repetitions),
			p.CPUMillicores.Min, p.CPUMillicores.Avg, p.CPUMillicores.Max, sd(spread(p.Repetitions, func(r Repetition) float64 { return r.CPUMillicores.Avg })),
			p.MemoryMiB.Min, p.MemoryMiB.Avg, p.MemoryMiB.Max, sd(spread(p.Repetitions, func(r Repetition) float64 { return r.MemoryMiB.Avg })))
	}
	b.WriteString("\n| pods | window | istiod CPU m (min / avg / max) | istiod memory MiB (min / avg / max) | xDS pushes in window | k8s registry events in window | connected proxies |\n")
	b.WriteString("|---:|---:|---|---|---:|---:|---:|\n")
	for _, p := range c.Points {
		for _, r := range p.Repetitions {
			fmt.Fprintf(&b, "| %d | %d | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %s | %s | %s |\n", p.Pods, r.Repetition,
				r.CPUMillicores.Min, r.CPUMillicores.Avg, r.CPUMillicores.Max, r.MemoryMiB.Min, r.MemoryMiB.Avg, r.MemoryMiB.Max,
				figure(r.Istiod, "pilot_xds_pushes_increase"), figure(r.Istiod, "pilot_k8s_reg_events_increase"), figure(r.Istiod, "pilot_xds"))
		}
	}
	return b.String()
}

func sd(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func figure(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

// Marshal is the curve as indented JSON with sorted keys in maps (encoding/json sorts them).
func Marshal(c Curve) ([]byte, error) {
	c.Points = slices.Clone(c.Points)
	for i := range c.Points {
		c.Points[i].Repetitions = slices.Clone(c.Points[i].Repetitions)
		for j := range c.Points[i].Repetitions {
			c.Points[i].Repetitions[j].Istiod = maps.Clone(c.Points[i].Repetitions[j].Istiod)
		}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal curve: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteCurve writes istiod-curve.json and istiod-curve.md into dir (through a temporary file, so a reader never sees
// half a curve).
func WriteCurve(dir string, c Curve) error {
	b, err := Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	for name, data := range map[string][]byte{"istiod-curve.json": b, "istiod-curve.md": []byte(Table(c))} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
