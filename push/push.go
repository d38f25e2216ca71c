package push

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	pgpush "github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
)

// Metric names pushed to a Pushgateway (see the package documentation for their labels). Dashboards and alerts depend
// on them: renaming one is a breaking change.
const (
	metricResourceMean     = "meshbench_resource_mean"
	metricResourceCILow    = "meshbench_resource_ci_low"
	metricResourceCIHigh   = "meshbench_resource_ci_high"
	metricPerKRPSMean      = "meshbench_resource_per_krps_mean"
	metricMeasurementMean  = "meshbench_measurement_mean"
	metricMeasurementLow   = "meshbench_measurement_ci_low"
	metricMeasurementHigh  = "meshbench_measurement_ci_high"
	metricDeltaPercent     = "meshbench_delta_percent"
	metricDeltaPercentLow  = "meshbench_delta_percent_ci_low"
	metricDeltaPercentHigh = "meshbench_delta_percent_ci_high"
	metricDeltaSignificant = "meshbench_delta_significant"
	metricCasesTotal       = "meshbench_case_total"
	metricCasesFailed      = "meshbench_case_failed_total"
	metricCasesSkipped     = "meshbench_case_skipped_total"
	metricRunInfo          = "meshbench_run_info"
	metricRunStart         = "meshbench_run_start_timestamp_seconds"
	metricRunEnd           = "meshbench_run_end_timestamp_seconds"
)

var (
	seriesLabels      = []string{"topology", "mode", "load", "window", "component", "metric", "stat", "unit"}
	measurementLabels = append(append([]string{}, seriesLabels...), "path", "test")
	deltaLabels       = []string{"base", "other", "topology", "load", "window", "component", "metric", "stat", "unit"}
	infoLabels        = []string{"run_id", "tool_version", "kubernetes_version", "istio_version", "data_plane", "profile", "scenario"}
)

// Options says where to push.
type Options struct {
	URL      string          // Pushgateway base URL, e.g. http://pushgateway.monitoring:9091
	Job      string          // grouping key job; "" = "meshbench"
	Instance string          // grouping key instance; "" = the scenario name, else "default"
	Timeout  time.Duration   // per push; 0 = 30s
	Client   pgpush.HTTPDoer // nil = http.Client with Timeout (and Insecure)
	// Insecure turns off TLS verification of the Pushgateway (report --push-insecure). Verification is on unless
	// this is set; the CLI prints a warning when it is.
	Insecure bool
}

// RedactURL is u with a password in its user info replaced by "xxxxx" (url.URL.Redacted), for messages: a
// Pushgateway URL may carry basic-auth credentials and errors and logs must not. Text that does not parse is
// replaced as a whole.
func RedactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return pu.Redacted()
}

// splitCredentials parses u and removes its user info, which pgpush would otherwise put into its error messages
// (prometheus/client_golang prometheus/push/push.go, v1.25.0: "unexpected status code %d while pushing to %s" with
// the full URL); the credentials go to pgpush's BasicAuth instead.
func splitCredentials(u string) (bare string, user *url.Userinfo, err error) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", nil, errors.New("push: the Pushgateway URL does not parse") // not echoed: it may hold a password
	}
	if pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "" {
		return "", nil, fmt.Errorf("push: Pushgateway URL %q: want http:// or https://host[:port]", pu.Redacted())
	}
	user, pu.User = pu.User, nil
	return pu.String(), user, nil
}

// registry builds the gauges of a report in a fresh registry (pure: no I/O).
func registry(r report.Report) *prometheus.Registry {
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
		resMean:      gauge(metricResourceMean, "Mean over repetitions of a per-window CPU or memory statistic.", seriesLabels),
		resLow:       gauge(metricResourceCILow, "Lower bound of the confidence interval of meshbench_resource_mean.", seriesLabels),
		resHigh:      gauge(metricResourceCIHigh, "Upper bound of the confidence interval of meshbench_resource_mean.", seriesLabels),
		perK:         gauge(metricPerKRPSMean, "Mean CPU or memory per 1000 achieved requests per second.", seriesLabels),
		mMean:        gauge(metricMeasurementMean, "Mean of a latency, rate or network measurement.", measurementLabels),
		mLow:         gauge(metricMeasurementLow, "Lower bound of the confidence interval of meshbench_measurement_mean.", measurementLabels),
		mHigh:        gauge(metricMeasurementHigh, "Upper bound of the confidence interval of meshbench_measurement_mean.", measurementLabels),
		dPct:         gauge(metricDeltaPercent, "Change from mode base to mode other in percent of the base mean.", deltaLabels),
		dLow:         gauge(metricDeltaPercentLow, "Lower bound of the Welch confidence interval of meshbench_delta_percent.", deltaLabels),
		dHigh:        gauge(metricDeltaPercentHigh, "Upper bound of the Welch confidence interval of meshbench_delta_percent.", deltaLabels),
		dSig:         gauge(metricDeltaSignificant, "1 when the interval of the change excludes 0, else 0.", deltaLabels),
		info:         gauge(metricRunInfo, "Facts of the run; value 1.", infoLabels),
		start:        gauge(metricRunStart, "Start of the run, Unix seconds.", nil),
		end:          gauge(metricRunEnd, "End of the run, Unix seconds (absent when it did not finish).", nil),
		casesTotal:   counter(metricCasesTotal, "Cases of the run (latest record per case)."),
		casesFailed:  counter(metricCasesFailed, "Cases of the run that failed."),
		casesSkipped: counter(metricCasesSkipped, "Cases of the run that were skipped."),
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

// Push replaces the metrics of the grouping key {job, instance} on the Pushgateway with the report's (HTTP PUT), in
// the text exposition format.
func Push(ctx context.Context, r report.Report, opts Options) error {
	if opts.URL == "" {
		return errors.New("push: no Pushgateway URL")
	}
	job := orText(opts.Job, "meshbench")
	instance := opts.Instance
	if instance == "" {
		instance = orText(r.ScenarioName(), "default")
	}
	reg := registry(r)
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	bare, user, err := splitCredentials(opts.URL)
	if err != nil {
		return err
	}
	client := opts.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if opts.Insecure {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // --push-insecure: asked for, and warned about
		}
		client = &http.Client{Timeout: timeout, Transport: tr}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := pgpush.New(bare, job).Grouping("instance", instance).Gatherer(reg).Client(client).
		Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	if user != nil {
		pw, _ := user.Password()
		p = p.BasicAuth(user.Username(), pw)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push to %s (job %q, instance %q): %w", bare, job, instance, err)
	}
	return nil
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
