package loadgen

import (
	"maps"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/results"
)

// Metrics of the samples a load run produces (component loadgen, source fortio).
const (
	Source           = "fortio"
	MetricQPS        = "qps"           // achieved requests per second (stat value), and the requested rate (stat target)
	MetricLatency    = "latency"       // ms, 2xx requests only; stats p50 p75 p90 p99 p99.9 avg min max
	MetricErrLatency = "error-latency" // ms, the other requests (when there are any); the same stats
	MetricRequests   = "requests"      // count of completed requests in the measured phase
	MetricErrors     = "errors"        // count of non-2xx responses and connection errors
	MetricErrorRate  = "error-rate"    // errors / requests, %
	MetricResponses  = "responses"     // count per HTTP status (label code)
	MetricConnection = "connections"   // sockets opened (stat count) and connections asked for (stat target)
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
	add := func(metric, stat string, v float64, unit string, labels map[string]string) {
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
	add(MetricQPS, "value", r.ActualQPS, "rps", nil)
	if r.RequestedQPS > 0 {
		add(MetricQPS, "target", r.RequestedQPS, "rps", nil)
	}
	latency := func(metric string, h *Histogram) {
		if h.Count() == 0 {
			return
		}
		for _, p := range Percentiles() {
			add(metric, "p"+strconv.FormatFloat(p, 'f', -1, 64), ms(h.Percentile(p)), "ms", nil)
		}
		add(metric, "avg", ms(h.Mean()), "ms", nil)
		add(metric, "min", ms(h.Min()), "ms", nil)
		add(metric, "max", ms(h.Max()), "ms", nil)
	}
	latency(MetricLatency, r.Latency)
	latency(MetricErrLatency, r.ErrorLatency)
	add(MetricRequests, "count", float64(r.Requests), "count", nil)
	add(MetricErrors, "count", float64(r.Errors), "count", nil)
	add(MetricErrorRate, "value", r.ErrorRate(), "%", nil)
	for _, code := range sortedCodes(r.Codes) {
		add(MetricResponses, "count", float64(r.Codes[code]), "count", map[string]string{"code": strconv.Itoa(code)})
	}
	add(MetricConnection, "count", float64(r.Sockets), "count", nil)
	add(MetricConnection, "target", float64(r.Connections), "count", nil)
	return out
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
