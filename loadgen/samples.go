package loadgen

import (
	"maps"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/results"
)

// The source of the samples a load run produces (component loadgen; metrics results.results.MetricQPS ...), and its label.
const (
	Source = "fortio"
	// TargetLabel carries the target's name on the samples of one target when a run has several; the unlabelled
	// samples are over all targets.
	TargetLabel = results.LabelLoadTarget
)

// Samples turns a load result into flat samples. base carries the run, case, mode, topology, load level and
// repetition; Window is set to the load window (Start..End) and Source, Component, Metric, Stat, Value, Unit are
// filled in. With several targets, every target's own samples follow, labelled TargetLabel=name. It is pure.
func (r Result) Samples(base results.Sample) []results.Sample {
	out := r.samples(base, nil)
	for _, t := range r.Targets {
		out = append(out, t.samples(base, map[string]string{TargetLabel: t.Name})...)
	}
	return out
}

// samples are r's samples (without its targets'), every one carrying extra labels.
func (r Result) samples(base results.Sample, extra map[string]string) []results.Sample {
	base.Window = results.Window{Kind: results.WindowLoad, Start: r.Start, End: r.End}
	base.Source = Source
	base.Component = results.ComponentLoadgen
	base.Labels = nil
	var out []results.Sample
	add := func(metric results.Metric, stat results.Stat, v float64, unit results.Unit, labels map[string]string) {
		s := base
		if len(extra) > 0 {
			labels = maps.Clone(labels)
			if labels == nil {
				labels = map[string]string{}
			}
			maps.Copy(labels, extra)
		}
		s.Metric, s.Stat, s.Value, s.Unit, s.Labels = metric, stat, v, unit, labels
		out = append(out, s)
	}
	add(results.MetricQPS, results.StatValue, r.ActualQPS, results.UnitRPS, nil)
	if r.RequestedQPS > 0 {
		add(results.MetricQPS, results.StatTarget, r.RequestedQPS, results.UnitRPS, nil)
	}
	latency := func(metric results.Metric, h *Histogram) {
		if h.Count() == 0 {
			return
		}
		for _, p := range percentiles() {
			add(metric, results.Stat("p"+strconv.FormatFloat(p, 'f', -1, 64)), ms(h.Percentile(p)), results.UnitMs, nil)
		}
		add(metric, results.StatAvg, ms(h.Mean()), results.UnitMs, nil)
		add(metric, results.StatMin, ms(h.Min()), results.UnitMs, nil)
		add(metric, results.StatMax, ms(h.Max()), results.UnitMs, nil)
	}
	latency(results.MetricLatency, r.Latency)
	latency(results.MetricErrLatency, r.ErrorLatency)
	latency(results.MetricResponseTime, r.ResponseLatency)
	latency(results.MetricErrResponseTime, r.ErrorResponseLatency)
	add(results.MetricRequests, results.StatCount, float64(r.Requests), results.UnitCount, nil)
	add(results.MetricErrors, results.StatCount, float64(r.Errors), results.UnitCount, nil)
	add(results.MetricErrorRate, results.StatValue, r.ErrorRate(), results.UnitPct, nil)
	for _, code := range sortedCodes(r.Codes) {
		add(results.MetricResponses, results.StatCount, float64(r.Codes[code]), results.UnitCount, map[string]string{"code": strconv.Itoa(code)})
	}
	add(results.MetricConnection, results.StatCount, float64(r.Sockets), results.UnitCount, nil)
	add(results.MetricConnection, results.StatTarget, float64(r.Connections), results.UnitCount, nil)
	return out
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
