package prom

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/results"
)

// Signal is one catalog entry: the series one metric of one component is summed from, fetched raw (a range
// selector, never a PromQL aggregate) so that min, max and avg come from the same samples. Each term's Series is
// rendered per selector with $sel (a selector with braces) or $match (its matchers without them).
type Signal struct {
	Name   string         `json:"name"`   // cpu | memory
	Metric results.Metric `json:"metric"` // results.MetricCPU | results.MetricMemory
	Kind   string         `json:"kind"`   // KindCounter | KindGauge
	Unit   results.Unit   `json:"unit"`   // unit of the figures
	Scale  float64        `json:"scale"`  // multiplies the sample values into Unit (per second for a counter)
	Terms  []Term         `json:"terms"`
}

// Term is one summand of a signal: a series selector template and its sign (node-exporter's memory in use is
// MemTotal - MemAvailable).
type Term struct {
	Series string  `json:"series"`
	Sign   float64 `json:"sign"`
}

// Kinds of signals.
const (
	KindCounter = "counter" // a cumulative counter: rates between interpolated edges, resets handled
	KindGauge   = "gauge"   // a gauge: the time average of the interpolated samples
)

// Catalog is the signal set: CPU from cAdvisor's container_cpu_usage_seconds_total (core-seconds, scaled to
// millicores), memory from container_memory_working_set_bytes (not usage_bytes, which counts page cache; scaled to
// MiB).
func Catalog() []Signal {
	return catalogOf([]Term{{Series: "container_cpu_usage_seconds_total$sel", Sign: 1}},
		[]Term{{Series: "container_memory_working_set_bytes$sel", Sign: 1}})
}

// catalogOf is the signal set over CPU counter terms (in core-seconds) and memory gauge terms (in bytes).
func catalogOf(cpu, mem []Term) []Signal {
	const (
		toMilli = 1000
		toMiB   = 1.0 / (1 << 20)
	)
	return []Signal{
		{Name: "cpu", Metric: results.MetricCPU, Kind: KindCounter, Unit: results.UnitMillicores, Scale: toMilli, Terms: cpu},
		{Name: "memory", Metric: results.MetricMemory, Kind: KindGauge, Unit: results.UnitMiB, Scale: toMiB, Terms: mem},
	}
}

// Params are the values a signal is fetched and summarised with.
type Params struct {
	Selectors []string      // selectors (braces included) whose series are summed: a pod set's one, a node's groups
	Rate      time.Duration // range of the CPU rate points of min/max, >= 4 sample spacings
	Window    time.Duration // the window's length (to the millisecond)
	Step      time.Duration // spacing of the rate points: the sample spacing, whole seconds
	Guard     time.Duration // how far beyond the window its samples are its own (Interval.Guard)
}

// after is how far beyond a window's end its samples are fetched: the sample after the end, and past the guard far
// enough to tell a series clipped there from one that ended inside the window (docs/measurement.md).
func (p Params) after() time.Duration { return max(2*p.Step, p.Guard+p.Step) }

// Span is the range selector's evaluation time at and range rng for a window ending at end: the window (at least
// one rate range), a rate range and a step before it, and after() past its end (docs/measurement.md).
func (p Params) Span(end time.Time) (at time.Time, rng time.Duration) {
	return end.Add(p.after()), max(p.Window, p.Rate) + p.Rate + p.Step + p.after()
}

// Render expands a signal into its range selectors, one per term and selector, with the sign of each.
// It is pure.
func (s Signal) Render(p Params) ([]string, []float64, error) {
	if len(p.Selectors) == 0 {
		return nil, nil, fmt.Errorf("render %s: no series selectors", s.Name)
	}
	if p.Rate <= 0 || p.Rate%time.Second != 0 || p.Step <= 0 || p.Step%time.Second != 0 || p.Window <= 0 {
		return nil, nil, fmt.Errorf("render %s: rate range and step must be whole seconds > 0, the window > 0 (rate %s, window %s, step %s)", s.Name, p.Rate, p.Window, p.Step)
	}
	_, rng := p.Span(time.Time{})
	suffix := "[" + strconv.FormatInt(int64(ceilSecond(rng)/time.Second), 10) + "s]"
	var exprs []string
	var signs []float64
	for _, t := range s.Terms {
		for _, sel := range p.Selectors {
			exprs = append(exprs, expandSel(t.Series, strings.TrimSuffix(strings.TrimPrefix(sel, "{"), "}"))+suffix)
			signs = append(signs, t.Sign)
		}
	}
	return exprs, signs, nil
}

// expandSel fills a template's selector placeholders with matchers (without braces; "" for none).
func expandSel(tmpl, inner string) string {
	if inner == "" {
		return strings.NewReplacer(",$match", "", "$sel", "").Replace(tmpl)
	}
	return strings.NewReplacer("$match", inner, "$sel", "{"+inner+"}").Replace(tmpl)
}

// Container matchers used by the component definitions.
const (
	matchProxy    = `container="istio-proxy"`
	matchNotProxy = `container!="istio-proxy"`
)
