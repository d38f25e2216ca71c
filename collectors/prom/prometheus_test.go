package prom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// The synthetic cAdvisor model (CPU in cores, memory in MiB). Every pod also has cAdvisor's pod-level series
// (container="") and pause container (container="POD"), which the collector must never add in.
//
//	bench-mesh/app-0      app alternates 0.2 / 0.6 every 20 s, memory sawtooth 200 + floor(t mod 20)
//	                      istio-proxy 0.1, 50
//	bench-mesh/app-1      app 0.3, 150; istio-proxy 0.1, 50
//	bench-other/app-0     app 0.5, 300 (same pod name in another namespace: must not leak into the app component)
//	istio-system/ztunnel-x istio-proxy 0.05, 20 (container istio-proxy, like a sidecar: must not leak into sidecar)
//	istio-system/istiod-y discovery 0.15, 120
type container struct {
	ns, pod, name string
	cpu           func(t float64) float64 // cumulative CPU seconds at t (seconds since the model's epoch)
	mem           func(t float64) float64 // MiB
}

func constRate(r float64) func(float64) float64 { return func(t float64) float64 { return r * t } }
func constMem(m float64) func(float64) float64  { return func(float64) float64 { return m } }

// altCPU integrates a rate that is lo for 20 s, then hi for 20 s, repeating.
func altCPU(lo, hi float64) func(float64) float64 {
	return func(t float64) float64 {
		periods := math.Floor(t / 40)
		r := t - periods*40
		v := periods * 20 * (lo + hi)
		if r < 20 {
			return v + r*lo
		}
		return v + 20*lo + (r-20)*hi
	}
}

func sawMem(base float64) func(float64) float64 {
	return func(t float64) float64 { return base + math.Floor(math.Mod(t, 20)) }
}

func synthModel() []container {
	return []container{
		{"bench-mesh", "app-0", "app", altCPU(0.2, 0.6), sawMem(200)},
		{"bench-mesh", "app-0", "istio-proxy", constRate(0.1), constMem(50)},
		{"bench-mesh", "app-1", "app", constRate(0.3), constMem(150)},
		{"bench-mesh", "app-1", "istio-proxy", constRate(0.1), constMem(50)},
		{"bench-other", "app-0", "app", constRate(0.5), constMem(300)},
		{"istio-system", "ztunnel-x", "istio-proxy", constRate(0.05), constMem(20)},
		{"istio-system", "istiod-y", "discovery", constRate(0.15), constMem(120)},
	}
}

// exporter is a cAdvisor look-alike: explicit timestamps, pod-level and pause series. Series carry cAdvisor's id
// label (the cgroup), so a container restarted in a pod of the same name is a new series next to the old one.
type exporter struct {
	epoch time.Time
	cs    []container
	// dead are containers that stopped at deadUntil (an earlier instance of a container, e.g. before a restart of
	// a StatefulSet pod): with explicit timestamps Prometheus never marks their series stale, so a bare selector
	// would keep returning their last memory value for the 5-minute lookback.
	dead      []container
	deadUntil time.Time
	cpu       *prometheus.Desc
	mem       *prometheus.Desc
}

func (e *exporter) Describe(ch chan<- *prometheus.Desc) { ch <- e.cpu; ch <- e.mem }

func (e *exporter) Collect(ch chan<- prometheus.Metric) {
	now := time.Now().Truncate(time.Millisecond)
	t := now.Sub(e.epoch).Seconds()
	type podKey struct{ ns, pod string }
	podCPU, podMem := map[podKey]float64{}, map[podKey]float64{}
	emit := func(ns, pod, ctr, id string, cpu, mem float64) {
		ch <- prometheus.NewMetricWithTimestamp(now, prometheus.MustNewConstMetric(e.cpu, prometheus.CounterValue, cpu, ns, pod, ctr, id))
		ch <- prometheus.NewMetricWithTimestamp(now, prometheus.MustNewConstMetric(e.mem, prometheus.GaugeValue, mem*(1<<20), ns, pod, ctr, id))
	}
	if now.Before(e.deadUntil) {
		for _, c := range e.dead {
			emit(c.ns, c.pod, c.name, "/kubepods/"+c.pod+"/"+c.name+"-previous", c.cpu(t), c.mem(t))
		}
	}
	for _, c := range e.cs {
		cpu, mem := c.cpu(t), c.mem(t)
		emit(c.ns, c.pod, c.name, "/kubepods/"+c.pod+"/"+c.name, cpu, mem)
		podCPU[podKey{c.ns, c.pod}] += cpu
		podMem[podKey{c.ns, c.pod}] += mem
	}
	for k, cpu := range podCPU {
		emit(k.ns, k.pod, "POD", "/kubepods/"+k.pod+"/pause", 0.002*t, 1)             // pause container
		emit(k.ns, k.pod, "", "/kubepods/"+k.pod, cpu+0.002*t+0.001*t, podMem[k]+1+3) // pod cgroup: children plus a little of its own
	}
}

// truth is the model's statistics of a component over [s, e] (seconds since epoch), sampling memory at 1 s like
// the subquery does.
func truth(cs []container, match func(container) bool, s, e float64) (cpuMin, cpuMax, cpuAvg, memMin, memMax, memAvg float64) {
	cpuMin, memMin = math.Inf(1), math.Inf(1)
	cpuMax, memMax = math.Inf(-1), math.Inf(-1)
	var total, memSum float64
	n := 0
	for t := s; t <= e+1e-9; t++ {
		var mem float64
		for _, c := range cs {
			if match(c) {
				mem += c.mem(t)
			}
		}
		memMin, memMax = math.Min(memMin, mem), math.Max(memMax, mem)
		memSum += mem
		n++
	}
	// instantaneous rate, probed in the middle of each second (plateaus last 20 s, so the extremes are reached)
	for t := s + 0.5; t < e; t++ {
		var r float64
		for _, c := range cs {
			if match(c) {
				r += c.cpu(t+0.25) - c.cpu(t-0.25)
			}
		}
		r *= 2
		cpuMin, cpuMax = math.Min(cpuMin, r), math.Max(cpuMax, r)
	}
	for _, c := range cs {
		if match(c) {
			total += c.cpu(e) - c.cpu(s)
		}
	}
	return cpuMin, cpuMax, total / (e - s), memMin, memMax, memSum / float64(n)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scrapedAPI serves h on a loopback port, starts a Prometheus that scrapes it as a cAdvisor job named job (every
// interval, "" for the 1 s global interval; honor_labels, metrics_path /metrics/cadvisor), and returns its API.
func scrapedAPI(t *testing.T, job, interval string, h http.Handler) API {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	cfg := "\n  - job_name: " + job + "\n"
	if interval != "" {
		cfg += "    scrape_interval: " + interval + "\n"
	}
	cfg += fmt.Sprintf("    metrics_path: /metrics/cadvisor\n    honor_labels: true\n    static_configs:\n      - targets: [%q]\n", l.Addr().String())
	api, err := NewAPI(ClientConfig{URL: startPrometheusWith(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// startPrometheus runs the Debian prometheus binary (2.42) scraping target every second.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	return startPrometheusWith(t, fmt.Sprintf(`
  - job_name: kubernetes-cadvisor
    metrics_path: /metrics/cadvisor
    honor_labels: true
    static_configs:
      - targets: [%q]
  # A kubelet's /metrics/resource exports the same metric names: the collector must use one job only.
  - job_name: kubelet-resource
    metrics_path: /metrics/resource
    honor_labels: true
    static_configs:
      - targets: [%q]
`, target, target))
}

// needPrometheus returns the path of the prometheus binary, or skips (fails in CI) without it.
func needPrometheus(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus not found (CI must have it: apt-get install prometheus): %v", err)
		}
		t.Skip("prometheus binary not found; install it (apt-get install prometheus) to run the real-Prometheus accuracy test")
	}
	return bin
}

// startPrometheusWith runs the Debian prometheus binary (2.42) with a 1 s global scrape interval and the given
// scrape_configs entries (YAML list items indented by two spaces), and returns its URL.
func startPrometheusWith(t *testing.T, scrapeConfigs string) string {
	t.Helper()
	return startPrometheusPrepared(t, scrapeConfigs, nil)
}

// startPrometheusPrepared is startPrometheusWith with prepare(dataDir) run before every start attempt (e.g. to
// backfill blocks into the TSDB directory, which a failed attempt removes).
func startPrometheusPrepared(t testing.TB, scrapeConfigs string, prepare func(dataDir string)) string {
	t.Helper()
	url, _ := startPrometheusProcess(t, scrapeConfigs, prepare)
	return url
}

// startPrometheusProcess is startPrometheusPrepared that also gives the process (fault tests stop and continue it).
func startPrometheusProcess(t testing.TB, scrapeConfigs string, prepare func(dataDir string)) (string, *os.Process) {
	t.Helper()
	bin := needPrometheus(t)
	dir := t.TempDir()
	cfg := `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:` + scrapeConfigs
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// freePort's port can be taken by another test's listener before prometheus binds it (tests run in parallel):
	// prometheus then exits with "address already in use", and the start is retried on a new port.
	for attempt := 1; ; attempt++ {
		if prepare != nil {
			prepare(filepath.Join(dir, "data"))
		}
		url, proc, exited := runPrometheus(t, bin, dir, attempt)
		if !exited {
			return url, proc
		}
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", attempt)))
		if !strings.Contains(string(b), "address already in use") || attempt == 5 {
			t.Fatalf("prometheus exited at start (attempt %d):\n%s", attempt, b)
		}
		_ = os.RemoveAll(filepath.Join(dir, "data"))
	}
}

// runPrometheus starts prometheus on a free port and waits until it is ready (url, its process, false) or has exited
// (url, nil, true).
func runPrometheus(t testing.TB, bin, dir string, attempt int) (string, *os.Process, bool) {
	t.Helper()
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--storage.tsdb.retention.time=1h", "--query.lookback-delta=30s", "--log.level=warn")
	logPath := filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", attempt))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return url, nil, true
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get(url + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, cmd.Process, false
			}
		}
	}
	t.Fatalf("prometheus on %s not ready within 60 s", url)
	return url, nil, false
}

// TestCollectorAgainstRealPrometheus checks min/max/avg per component against the model within 1 %, with the
// double-counting traps present: container="" and container="POD", istio-proxy in ztunnel, the same pod name in
// another namespace, and a second job (like a kubelet's /metrics/resource) exporting the same series.
func TestCollectorAgainstRealPrometheus(t *testing.T) {
	t.Parallel()
	e := &exporter{
		epoch: time.Now().Add(-time.Hour).Truncate(40 * time.Second),
		cs:    synthModel(),
		// The previous instance of app-1's app container: gone about 10 s before the window starts.
		dead:      []container{{"bench-mesh", "app-1", "app", constRate(0.3), constMem(400)}},
		deadUntil: time.Now().Add(8 * time.Second),
		cpu:       prometheus.NewDesc("container_cpu_usage_seconds_total", "cpu", []string{"namespace", "pod", "container", "id"}, nil),
		mem:       prometheus.NewDesc("container_memory_working_set_bytes", "mem", []string{"namespace", "pod", "container", "id"}, nil),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics/cadvisor", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/metrics/resource", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	url := startPrometheus(t, l.Addr().String())
	api, err := NewAPI(ClientConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	retry := Retry{Attempts: 2, Backoff: 200 * time.Millisecond, Timeout: 10 * time.Second}

	// The first scrape lands about 5 s after start (scrape manager reload tick): wait for up == 1, not /-/ready.
	var firstUp time.Time
	for firstUp.IsZero() {
		v, _, err := query(ctx, api, retry, `up{job="kubernetes-cadvisor"} == 1`, time.Time{})
		if f, ok, _ := Scalar(v); err == nil && ok && f == 1 {
			firstUp = time.Now()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("prometheus never scraped the exporter")
		case <-time.After(250 * time.Millisecond):
		}
	}
	t.Logf("first scrape visible %s", firstUp.Format(time.RFC3339Nano))

	// Let a little history build up so interval detection sees several samples per series.
	time.Sleep(12 * time.Second)
	iv, err := DetectInterval(ctx, api, retry, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("interval: %+v rate range %s", iv, iv.RateRange())
	if iv.Scrape != time.Second || iv.Effective != time.Second || iv.Job != "kubernetes-cadvisor" || iv.Source != "prometheus config" {
		t.Errorf("interval %+v: want 1s from the config of job kubernetes-cadvisor", iv)
	}
	if iv.Spacing < 900*time.Millisecond || iv.Spacing > 1100*time.Millisecond {
		t.Errorf("measured sample spacing %s, want about the 1 s scrape", iv.Spacing)
	}

	// The window starts one rate range after data exists (data before the window), off the whole second.
	start := time.Now().Add(time.Second).Truncate(time.Second)
	w := results.Window{Kind: results.WindowLoad, Start: start.Add(123 * time.Millisecond), End: start.Add(60*time.Second + 456*time.Millisecond)}
	// The app and sidecar sets also split by workload: app-0 and app-1 are two workloads' pods.
	wls := map[string]string{"bench-mesh/app-0": "Deployment/bench-mesh/a", "bench-mesh/app-1": "StatefulSet/bench-mesh/b"}
	sets := []podset.PodSet{
		{Component: results.ComponentApp, Pods: map[string][]string{"bench-mesh": {"app-0", "app-1"}}, Container: matchNotProxy, Workloads: wls},
		{Component: results.ComponentSidecar, Pods: map[string][]string{"bench-mesh": {"app-1", "app-0"}}, Container: matchProxy, Workloads: wls},
		{Component: results.ComponentZtunnel, Pods: map[string][]string{"istio-system": {"ztunnel-x"}}},
		{Component: results.ComponentIstiod, Pods: map[string][]string{"istio-system": {"istiod-y"}}},
		// two namespaces in one component: the per-namespace union
		{Component: "both-apps", Pods: map[string][]string{"bench-mesh": {"app-1"}, "bench-other": {"app-0"}}, Container: matchNotProxy},
	}
	matchers := map[string]func(container) bool{
		string(results.ComponentApp): func(c container) bool { return c.ns == "bench-mesh" && c.name != "istio-proxy" },
		string(results.ComponentSidecar): func(c container) bool {
			return c.ns == "bench-mesh" && c.name == "istio-proxy"
		},
		string(results.ComponentZtunnel): func(c container) bool { return c.pod == "ztunnel-x" },
		string(results.ComponentIstiod):  func(c container) bool { return c.pod == "istiod-y" },
		"both-apps": func(c container) bool {
			return (c.ns == "bench-mesh" && c.pod == "app-1" || c.ns == "bench-other") && c.name == "app"
		},
	}
	col := &Collector{API: api, Interval: iv, Retry: retry}
	got, err := col.Collect(ctx, w, sets)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) > 0 {
		t.Errorf("warnings: %q", got.Warnings)
	}
	if !got.Window.Start.Equal(start.Add(123*time.Millisecond)) || !got.Window.End.Equal(start.Add(60*time.Second+456*time.Millisecond)) {
		t.Errorf("query window %s..%s: want the measured window", got.Window.Start, got.Window.End)
	}
	s := got.Window.Start.Sub(e.epoch).Seconds()
	end := got.Window.End.Sub(e.epoch).Seconds()
	values := map[string]float64{}
	for _, smp := range got.Samples {
		values[string(smp.Component)+results.CanonicalLabels(smp.Labels)+"/"+string(smp.Metric)+"/"+string(smp.Stat)] = smp.Value
		if smp.Source != SourcePrometheus || smp.Window != got.Window {
			t.Errorf("sample %+v: wrong source or window", smp)
		}
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%-10s %-6s %-4s %12s %12s %8s\n", "component", "metric", "stat", "truth", "prometheus", "error")
	for _, set := range sets {
		cMin, cMax, cAvg, mMin, mMax, mAvg := truth(e.cs, matchers[string(set.Component)], s, end)
		for _, want := range []struct {
			metric, stat string
			v            float64
		}{
			{string(results.MetricCPU), "min", cMin * 1000}, {string(results.MetricCPU), "max", cMax * 1000}, {string(results.MetricCPU), "avg", cAvg * 1000},
			{string(results.MetricMemory), "min", mMin}, {string(results.MetricMemory), "max", mMax}, {string(results.MetricMemory), "avg", mAvg},
		} {
			g, ok := values[string(set.Component)+"/"+string(want.metric)+"/"+string(want.stat)]
			rel := math.Abs(g-want.v) / want.v
			fmt.Fprintf(&report, "%-10s %-6s %-4s %12.3f %12.3f %7.3f%%\n", set.Component, want.metric, want.stat, want.v, g, 100*rel)
			if !ok {
				t.Errorf("%s %s %s: no sample", set.Component, want.metric, want.stat)
			} else if rel > 0.01 {
				t.Errorf("%s %s %s = %.4f, truth %.4f (%.2f%% off, limit 1%%)", set.Component, want.metric, want.stat, g, want.v, 100*rel)
			}
		}
	}
	// Each workload's figures against the model, from the same series as the totals (no query more).
	for _, wc := range []struct {
		component, workload string
		match               func(container) bool
	}{
		{string(results.ComponentAppByWorkload), "Deployment/bench-mesh/a", func(c container) bool { return c.ns == "bench-mesh" && c.pod == "app-0" && c.name != "istio-proxy" }},
		{string(results.ComponentAppByWorkload), "StatefulSet/bench-mesh/b", func(c container) bool { return c.ns == "bench-mesh" && c.pod == "app-1" && c.name != "istio-proxy" }},
		{string(results.ComponentSidecarByWorkload), "Deployment/bench-mesh/a", func(c container) bool { return c.ns == "bench-mesh" && c.pod == "app-0" && c.name == "istio-proxy" }},
		{string(results.ComponentSidecarByWorkload), "StatefulSet/bench-mesh/b", func(c container) bool { return c.ns == "bench-mesh" && c.pod == "app-1" && c.name == "istio-proxy" }},
	} {
		cMin, cMax, cAvg, mMin, mMax, mAvg := truth(e.cs, wc.match, s, end)
		for _, want := range []struct {
			metric, stat string
			v            float64
		}{
			{string(results.MetricCPU), "min", cMin * 1000}, {string(results.MetricCPU), "max", cMax * 1000}, {string(results.MetricCPU), "avg", cAvg * 1000},
			{string(results.MetricMemory), "min", mMin}, {string(results.MetricMemory), "max", mMax}, {string(results.MetricMemory), "avg", mAvg},
		} {
			k := wc.component + results.LabelWorkload + "=" + wc.workload + "/" + want.metric + "/" + want.stat
			g, ok := values[k]
			rel := math.Abs(g-want.v) / want.v
			fmt.Fprintf(&report, "%-10s %-6s %-4s %12.3f %12.3f %7.3f%%\n", wc.component+" "+wc.workload, want.metric, want.stat, want.v, g, 100*rel)
			if !ok {
				t.Errorf("%s: no sample", k)
			} else if rel > 0.01 {
				t.Errorf("%s = %.4f, truth %.4f (%.2f%% off, limit 1%%)", k, g, want.v, 100*rel)
			}
		}
	}
	// The totals are the sums over the workloads (every pod here belongs to one): the averages add up.
	for _, c := range []string{string(results.ComponentApp), string(results.ComponentSidecar)} {
		wc, _ := results.ByWorkload(results.Component(c))
		for _, m := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
			sum := values[string(wc)+"workload=Deployment/bench-mesh/a/"+m+"/avg"] + values[string(wc)+"workload=StatefulSet/bench-mesh/b/"+m+"/avg"]
			if tot := values[c+"/"+m+"/avg"]; math.Abs(sum-tot) > 1e-6*tot {
				t.Errorf("%s %s: workloads add up to %.6f, total %.6f", c, m, sum, tot)
			}
		}
	}
	t.Logf("window %s..%s, rate range %s, step %s\n%s", got.Window.Start.Format(time.RFC3339), got.Window.End.Format(time.RFC3339), iv.RateRange(), iv.Step(), report.String())

	// The same window with one signal whose query real Prometheus refuses (an invalid regular expression: bad data,
	// not retried): the collection fails naming that figure, and the other figures are still returned.
	broken := append(Catalog(), Signal{Name: "cpu-broken", Metric: results.MetricCPU, Kind: KindCounter, Unit: results.UnitMillicores, Scale: 1000,
		Terms: []Term{{Series: `container_cpu_usage_seconds_total{pod=~"(",$match}`, Sign: 1}}})
	col.Catalog = broken
	part, err := col.Collect(ctx, w, sets[:1])
	var qe *QueryErrors
	// One query per signal, and one of the job's up series (the completeness check).
	if !errors.As(err, &qe) || len(qe.Failed) != 1 || qe.Queries != len(broken)+1 || !strings.Contains(err.Error(), "app cpu-broken") {
		t.Errorf("one refused query: error %v, want *QueryErrors naming app cpu-broken, 1 of %d", err, len(broken)+1)
	}
	// The app's total and its two workloads' figures, of each signal that worked.
	if want := 3 * len(Catalog()) * 3; len(part.Samples) != want {
		t.Errorf("one refused query: %d samples, want the %d of the signals that worked", len(part.Samples), want)
	}
}
