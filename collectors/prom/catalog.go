package prom

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/results"
)

// Query is one catalog entry: how to compute one statistic of one metric for one component over a window.
//
// Series is rendered once per namespace selector and the results are joined with " or " (pod names are unique only
// within a namespace); Outer wraps the union. Placeholders: $sel (a label selector with braces), $match (the same
// matchers without braces, for templates that add their own: {mode!~"idle",$match}), $rate (rate range),
// $window (window length), $step (subquery step), $fresh (the rate range: how old a gauge sample may be and still count),
// $avgwindow and $avgseconds (the range of the CPU average, see Params.AvgWindow), $series (the union).
type Query struct {
	Name   string  `json:"name"`   // e.g. cpu-min
	Metric string  `json:"metric"` // cpu | memory
	Stat   string  `json:"stat"`   // min | max | avg
	Unit   string  `json:"unit"`   // unit of the sample value
	Scale  float64 `json:"scale"`  // multiplies the PromQL result into Unit
	Series string  `json:"series"`
	Outer  string  `json:"outer"`
}

// Units of the samples.
const (
	UnitMillicores = "millicores"
	UnitMiB        = "MiB"
)

// Catalog is the query set: one query per metric and statistic. CPU comes from cAdvisor's
// container_cpu_usage_seconds_total (cores, scaled to millicores), memory from container_memory_working_set_bytes
// (not usage_bytes, which counts page cache; scaled to MiB).
func Catalog() []Query {
	// last_over_time over $fresh (the rate range), not the bare gauge: cAdvisor stamps its samples, so Prometheus
	// never marks the series of a stopped container stale and a bare selector returns its last value for the whole
	// lookback delta (5 min): a container restarted in a pod that keeps its name was counted twice. The rate range,
	// not one or two steps: cAdvisor's dynamic housekeeping spaces samples unevenly (10-15 s on a kubelet with the
	// default interval), and a live series must never drop out of a subquery point; a stopped one is gone one rate
	// range later, which the runner's lead-in before every window already waits out.
	return catalogOf("container_cpu_usage_seconds_total$sel", "last_over_time(container_memory_working_set_bytes$sel[$fresh])")
}

// catalogOf is the query set over a CPU counter (a selector template, in core-seconds) and a memory gauge expression
// (a template, in bytes, already fresh-filtered).
func catalogOf(cpuCounter, memGauge string) []Query {
	const (
		toMilli = 1000
		toMiB   = 1.0 / (1 << 20)
	)
	cpuRate := "rate(" + cpuCounter + "[$rate])"
	cpuIncr := "increase(" + cpuCounter + "[$avgwindow])"
	return []Query{
		// min/max of a rate: subquery at one scrape interval of the component's summed rate (range >= 4 scrapes).
		{Name: "cpu-min", Metric: results.MetricCPU, Stat: "min", Unit: UnitMillicores, Scale: toMilli, Series: cpuRate, Outer: "min_over_time(sum($series)[$window:$step])"},
		{Name: "cpu-max", Metric: results.MetricCPU, Stat: "max", Unit: UnitMillicores, Scale: toMilli, Series: cpuRate, Outer: "max_over_time(sum($series)[$window:$step])"},
		// average: increase over the whole window / window. avg_over_time of a smoothed rate is biased (it averages
		// over [start-rate, end]).
		{Name: "cpu-avg", Metric: results.MetricCPU, Stat: "avg", Unit: UnitMillicores, Scale: toMilli, Series: cpuIncr, Outer: "sum($series) / $avgseconds"},
		// memory: min/max/avg over a subquery of the component's sum (max of a sum is not the sum of maxes).
		{Name: "memory-min", Metric: results.MetricMemory, Stat: "min", Unit: UnitMiB, Scale: toMiB, Series: memGauge, Outer: "min_over_time(sum($series)[$window:$step])"},
		{Name: "memory-max", Metric: results.MetricMemory, Stat: "max", Unit: UnitMiB, Scale: toMiB, Series: memGauge, Outer: "max_over_time(sum($series)[$window:$step])"},
		{Name: "memory-avg", Metric: results.MetricMemory, Stat: "avg", Unit: UnitMiB, Scale: toMiB, Series: memGauge, Outer: "avg_over_time(sum($series)[$window:$step])"},
	}
}

// Params are the values a query is rendered with.
type Params struct {
	Selectors []string      // one selector (braces included) per namespace
	Rate      time.Duration // rate range, >= 4 scrape intervals
	Window    time.Duration // whole seconds
	Step      time.Duration // subquery step: the scrape interval, whole seconds
	// AvgWindow is the range of the CPU average, ending at the window's end; 0 means Window. The collector widens
	// it to the rate range for windows shorter than that: increase() over a window holding one or two sparse samples
	// is noise, and the runner keeps the measured condition for a rate range before every window.
	AvgWindow time.Duration
}

// Render expands a query. It is pure.
func (q Query) Render(p Params) (string, error) {
	if len(p.Selectors) == 0 {
		return "", fmt.Errorf("render %s: no series selectors", q.Name)
	}
	if p.AvgWindow == 0 {
		p.AvgWindow = p.Window
	}
	for _, d := range []time.Duration{p.Rate, p.Window, p.Step, p.AvgWindow} {
		if d <= 0 || d%time.Second != 0 {
			return "", fmt.Errorf("render %s: durations must be whole seconds > 0 (rate %s, window %s, step %s)", q.Name, p.Rate, p.Window, p.Step)
		}
	}
	secs := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }
	parts := make([]string, len(p.Selectors))
	for i, sel := range p.Selectors {
		parts[i] = strings.NewReplacer("$sel", sel, "$match", strings.TrimSuffix(strings.TrimPrefix(sel, "{"), "}"), "$rate", secs(p.Rate), "$window", secs(p.Window), "$avgwindow", secs(p.AvgWindow),
			"$fresh", secs(p.Rate)).Replace(q.Series)
	}
	return strings.NewReplacer(
		"$series", strings.Join(parts, " or "),
		"$window", secs(p.Window),
		"$step", secs(p.Step),
		"$avgseconds", strconv.FormatInt(int64(p.AvgWindow/time.Second), 10),
	).Replace(q.Outer), nil
}

// Container matchers used by the component definitions.
const (
	matchProxy    = `container="istio-proxy"`
	matchNotProxy = `container!="istio-proxy"`
)
