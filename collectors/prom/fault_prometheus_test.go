package prom

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// serveExporter serves the synthetic cAdvisor model on /metrics/cadvisor and returns its address.
func serveExporter(t *testing.T) string {
	t.Helper()
	e := &exporter{
		epoch: time.Now().Add(-time.Hour).Truncate(40 * time.Second),
		cs:    synthModel(),
		cpu:   prometheus.NewDesc("container_cpu_usage_seconds_total", "cpu", []string{"namespace", "pod", "container", "id"}, nil),
		mem:   prometheus.NewDesc("container_memory_working_set_bytes", "mem", []string{"namespace", "pod", "container", "id"}, nil),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics/cadvisor", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// cadvisorJob is a scrape_configs entry for the exporter at addr.
func cadvisorJob(addr string) string {
	return `
  - job_name: kubernetes-cadvisor
    metrics_path: /metrics/cadvisor
    honor_labels: true
    static_configs:
      - targets: ["` + addr + `"]
`
}

// waitScraped waits until Prometheus has scraped the exporter (the first scrape lands a few seconds after start).
func waitScraped(ctx context.Context, t *testing.T, api API) {
	t.Helper()
	r := Retry{Attempts: 1, Timeout: 5 * time.Second}
	for {
		v, _, err := query(ctx, api, r, `up{job="kubernetes-cadvisor"} == 1`, time.Time{})
		if f, ok, _ := Scalar(v); err == nil && ok && f == 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("prometheus never scraped the exporter")
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Issue 15, fault matrix: Prometheus stopped (SIGSTOP, as a node freezing it or a paused container would) for 15 s
// inside a 30 s load window. The window is incomplete, with the gap named per figure, never figures over a quietly
// shorter window; the runner fails a case on this error and goes on with the next (runner
// TestCollectorFailureFailsTheCaseButKeepsLoadSamples). A Prometheus that stops answering at collection time is
// retried within the retry budget: back within it, the window is collected; gone past it, the collection fails
// within the budget (no hang).
func TestPrometheusStoppedInsideAWindow(t *testing.T) {
	t.Parallel()
	url, proc := startPrometheusProcess(t, cadvisorJob(serveExporter(t)), nil)
	stopped := false
	stop := func() {
		if err := proc.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped = true
	}
	cont := func() {
		if err := proc.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		stopped = false
	}
	// Registered after the start: runs before its cleanup, which a stopped process would not answer.
	t.Cleanup(func() {
		if stopped {
			_ = proc.Signal(syscall.SIGCONT)
		}
	})
	api, err := NewAPI(ClientConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	waitScraped(ctx, t, api)
	time.Sleep(8 * time.Second) // history before the window: the rate range looks back 4 s
	iv := Interval{Scrape: time.Second, Effective: time.Second, Job: "kubernetes-cadvisor"}
	sets := []podset.PodSet{
		{Component: results.ComponentApp, Pods: map[string][]string{"bench-mesh": {"app-0", "app-1"}}, Container: matchNotProxy, Required: true},
		{Component: results.ComponentSidecar, Pods: map[string][]string{"bench-mesh": {"app-0", "app-1"}}, Container: matchProxy, Required: true},
	}

	start := time.Now().Add(time.Second).Truncate(time.Second).Add(300 * time.Millisecond)
	w := results.Window{Kind: results.WindowLoad, Start: start, End: start.Add(30 * time.Second)}
	time.Sleep(time.Until(start.Add(8 * time.Second)))
	stop()
	pausedAt := time.Now()
	time.Sleep(15 * time.Second)
	cont()
	resumedAt := time.Now()
	t.Logf("prometheus stopped %s..%s inside the window %s..%s", pausedAt.Format(time.StampMilli), resumedAt.Format(time.StampMilli),
		w.Start.Format(time.StampMilli), w.End.Format(time.StampMilli))

	col := &Collector{API: api, Interval: iv, Retry: Retry{Attempts: 3, Backoff: 200 * time.Millisecond, Timeout: 10 * time.Second}}
	got, err := col.Collect(ctx, w, sets)
	var ie *IncompleteError
	if !errors.As(err, &ie) {
		t.Fatalf("Collect over the outage: error %v (%T), want *IncompleteError", err, err)
	}
	t.Logf("error: %v", err)
	if len(ie.Figures) != 4 || ie.Window.Kind != results.WindowLoad {
		t.Errorf("incomplete figures %+v: want app and sidecar, cpu and memory, of the load window", ie.Figures)
	}
	for _, f := range ie.Figures {
		// The stretch without scrapes: from the last scrape before the stop (up to 1 s before it) to the first after it.
		if m := f.Missing(); m < 14*time.Second || m > 18*time.Second || len(f.Gaps) != 1 ||
			f.Gaps[0].From.Before(pausedAt.Add(-2*time.Second)) || f.Gaps[0].To.After(resumedAt.Add(2*time.Second)) {
			t.Errorf("%s %s: gaps %v (%s missing), want one of about 15 s around %s..%s", f.Component, f.Figure, f.Gaps, m, pausedAt, resumedAt)
		}
		// The spacing is measured from the samples' millisecond timestamps: on a loaded machine the median step can be
		// 999 ms or 1.001 s for a 1 s scrape interval.
		if f.Target.Job != "kubernetes-cadvisor" || f.Spacing < 950*time.Millisecond || f.Spacing > 1050*time.Millisecond {
			t.Errorf("%s %s: target %s spacing %s, want the exporter's job scraped every 1 s (±50 ms)", f.Component, f.Figure, f.Target, f.Spacing)
		}
	}
	for _, s := range []string{"load window", "incomplete: app cpu (2 pods): prometheus has no samples for 1", "s of the 30s load window (", `target job="kubernetes-cadvisor"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if len(got.Samples) == 0 {
		t.Error("the figures of an incomplete window are still returned, for the record")
	}
	// A window after the outage is complete.
	after := results.Window{Kind: results.WindowLoad, Start: resumedAt.Add(5 * time.Second), End: resumedAt.Add(20 * time.Second)}
	if _, err := col.Collect(ctx, after, sets); err != nil {
		t.Fatalf("window after the outage: %v", err)
	}

	// Stopped at collection time, back within the retry budget: collected.
	col.Retry = Retry{Attempts: 50, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, Timeout: 2 * time.Second, Budget: 30 * time.Second}
	stop()
	done := make(chan error, 1)
	go func() { _, err := col.Collect(ctx, after, sets); done <- err }()
	time.Sleep(6 * time.Second)
	cont()
	if err := <-done; err != nil {
		t.Errorf("prometheus back within the retry budget: %v", err)
	}
	// Stopped past the budget: the collection fails, naming the figures, within budget + one attempt's timeout.
	col.Retry = Retry{Attempts: 50, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, Timeout: time.Second, Budget: 3 * time.Second}
	stop()
	began := time.Now()
	_, err = col.Collect(ctx, after, sets)
	took := time.Since(began)
	cont()
	var qe *QueryErrors
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "window incomplete") || !strings.Contains(err.Error(), "attempts over") {
		t.Errorf("prometheus stopped past the budget: error %v, want *QueryErrors after the retries", err)
	}
	// Every query of the collection (4 figures and the up series) retries within the budget, one after the other.
	if limit := 5 * (3*time.Second + 2*time.Second); took > limit {
		t.Errorf("prometheus stopped past the budget: collection took %s, want under %s", took, limit)
	}
}
