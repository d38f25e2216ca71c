package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
)

// Metric names of a report's gauges, pushed to a Pushgateway and exported as OpenMetrics (docs/report.md). Dashboards
// and alerts depend on them: renaming one is a breaking change.
const (
	MetricResourceMean     = "meshbench_resource_mean"
	MetricResourceCILow    = "meshbench_resource_ci_low"
	MetricResourceCIHigh   = "meshbench_resource_ci_high"
	MetricPerKRPSMean      = "meshbench_resource_per_krps_mean"
	MetricMeasurementMean  = "meshbench_measurement_mean"
	MetricMeasurementLow   = "meshbench_measurement_ci_low"
	MetricMeasurementHigh  = "meshbench_measurement_ci_high"
	MetricDeltaPercent     = "meshbench_delta_percent"
	MetricDeltaPercentLow  = "meshbench_delta_percent_ci_low"
	MetricDeltaPercentHigh = "meshbench_delta_percent_ci_high"
	MetricDeltaSignificant = "meshbench_delta_significant"
	MetricCasesTotal       = "meshbench_case_total"
	MetricCasesFailed      = "meshbench_case_failed_total"
	MetricCasesSkipped     = "meshbench_case_skipped_total"
	MetricRunInfo          = "meshbench_run_info"
	MetricRunStart         = "meshbench_run_start_timestamp_seconds"
	MetricRunEnd           = "meshbench_run_end_timestamp_seconds"
)

var (
	seriesLabels      = []string{"topology", "mode", "load", "window", "component", "metric", "stat", "unit"}
	measurementLabels = append(append([]string{}, seriesLabels...), "path", "test")
	deltaLabels       = []string{"base", "other", "topology", "load", "window", "component", "metric", "stat", "unit"}
	infoLabels        = []string{"run_id", "tool_version", "kubernetes_version", "istio_version", "data_plane", "profile", "scenario"}
)

// Registry builds the gauges of a report in a fresh registry (pure: no I/O).
func Registry(r report.Report) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.setSeries(r.Summary)
	m.setDeltas(r.Summary.Deltas)
	for _, c := range r.Cases {
		m.casesTotal.Inc()
		switch c.Status {
		case results.StatusFailed:
			m.casesFailed.Inc()
		case results.StatusSkipped:
			m.casesSkipped.Inc()
		}
	}
	m.setRun(r)
	return reg
}

// metrics are the gauges and counters of one push, registered in one registry.
type metrics struct {
	resMean, resLow, resHigh, perK        *prometheus.GaugeVec
	mMean, mLow, mHigh                    *prometheus.GaugeVec
	dPct, dLow, dHigh, dSig               *prometheus.GaugeVec
	info, start, end                      *prometheus.GaugeVec
	casesTotal, casesFailed, casesSkipped prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) metrics {
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	return metrics{
		resMean:      gauge(MetricResourceMean, "Mean over repetitions of a per-window CPU or memory statistic.", seriesLabels),
		resLow:       gauge(MetricResourceCILow, "Lower bound of the confidence interval of meshbench_resource_mean.", seriesLabels),
		resHigh:      gauge(MetricResourceCIHigh, "Upper bound of the confidence interval of meshbench_resource_mean.", seriesLabels),
		perK:         gauge(MetricPerKRPSMean, "Mean CPU or memory per 1000 achieved requests per second.", seriesLabels),
		mMean:        gauge(MetricMeasurementMean, "Mean of a latency, rate or network measurement.", measurementLabels),
		mLow:         gauge(MetricMeasurementLow, "Lower bound of the confidence interval of meshbench_measurement_mean.", measurementLabels),
		mHigh:        gauge(MetricMeasurementHigh, "Upper bound of the confidence interval of meshbench_measurement_mean.", measurementLabels),
		dPct:         gauge(MetricDeltaPercent, "Change from mode base to mode other in percent of the base mean.", deltaLabels),
		dLow:         gauge(MetricDeltaPercentLow, "Lower bound of the Welch confidence interval of meshbench_delta_percent.", deltaLabels),
		dHigh:        gauge(MetricDeltaPercentHigh, "Upper bound of the Welch confidence interval of meshbench_delta_percent.", deltaLabels),
		dSig:         gauge(MetricDeltaSignificant, "1 when the interval of the change excludes 0, else 0.", deltaLabels),
		info:         gauge(MetricRunInfo, "Facts of the run; value 1.", infoLabels),
		start:        gauge(MetricRunStart, "Start of the run, Unix seconds.", nil),
		end:          gauge(MetricRunEnd, "End of the run, Unix seconds (absent when it did not finish).", nil),
		casesTotal:   counter(MetricCasesTotal, "Cases of the run (latest record per case)."),
		casesFailed:  counter(MetricCasesFailed, "Cases of the run that failed."),
		casesSkipped: counter(MetricCasesSkipped, "Cases of the run that were skipped."),
	}
}

func keyValues(k results.Key) []string {
	return []string{k.Topology, string(k.Mode), k.Load, k.Window, string(k.Component), string(k.Metric), string(k.Stat), string(k.Unit)}
}

// setSeries sets the resource and measurement means with their intervals, and the per-1000-rps means; partitions
// (e.g. per node) stay in series.csv.
func (m metrics) setSeries(sum results.Summary) {
	for _, s := range sum.Series {
		switch {
		case isResourceMetric(string(s.Metric)):
			if s.Labels != "" {
				continue
			}
			lv := keyValues(s.Key)
			m.resMean.WithLabelValues(lv...).Set(s.Mean)
			if s.CI != nil {
				m.resLow.WithLabelValues(lv...).Set(s.CI.Low)
				m.resHigh.WithLabelValues(lv...).Set(s.CI.High)
			}
		default:
			lv := append(keyValues(s.Key), charts.LabelValue(s.Labels, results.CNILabelPath), charts.LabelValue(s.Labels, results.CNILabelTest))
			m.mMean.WithLabelValues(lv...).Set(s.Mean)
			if s.CI != nil {
				m.mLow.WithLabelValues(lv...).Set(s.CI.Low)
				m.mHigh.WithLabelValues(lv...).Set(s.CI.High)
			}
		}
	}
	for _, s := range sum.PerKRPS {
		if s.Labels == "" {
			m.perK.WithLabelValues(keyValues(s.Key)...).Set(s.Mean)
		}
	}
}

// setDeltas sets each unpartitioned delta with a percent: the change, its interval and whether it is significant.
func (m metrics) setDeltas(deltas []results.Delta) {
	for _, d := range deltas {
		if d.Percent == nil || d.Labels != "" {
			continue
		}
		lv := []string{string(d.Base), string(d.Other), d.Topology, d.Load, d.Window, string(d.Component), string(d.Metric), string(d.Stat), string(d.Unit)}
		m.dPct.WithLabelValues(lv...).Set(*d.Percent)
		if d.PercentCI != nil {
			m.dLow.WithLabelValues(lv...).Set(d.PercentCI.Low)
			m.dHigh.WithLabelValues(lv...).Set(d.PercentCI.High)
		}
		sig := 0.0
		if d.Significant {
			sig = 1
		}
		m.dSig.WithLabelValues(lv...).Set(sig)
	}
}

// setRun sets the run's facts, start and end (none when it did not finish).
func (m metrics) setRun(r report.Report) {
	meta := r.Meta
	istioVersion, dataPlane := "", ""
	if meta.Cluster.Istio != nil {
		istioVersion, dataPlane = meta.Cluster.Istio.Version, string(meta.Cluster.Istio.DataPlane)
	}
	m.info.WithLabelValues(meta.RunID, meta.Tool.Version, meta.Cluster.KubernetesVersion, istioVersion, dataPlane, meta.Cluster.Profile, r.ScenarioName()).Set(1)
	m.start.WithLabelValues().Set(float64(meta.Start.Unix()))
	if meta.End != nil {
		m.end.WithLabelValues().Set(float64(meta.End.Unix()))
	}
}

func isResourceMetric(m string) bool {
	return m == string(results.MetricCPU) || m == string(results.MetricMemory)
}
