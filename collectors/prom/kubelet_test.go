package prom

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

func TestParseResourceCaptured(t *testing.T) {
	t.Parallel()
	var readings []map[SeriesKey]Point
	for _, name := range []string{"kubelet-resource-node1.txt", "kubelet-resource-node1-later.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		pts, err := parseResource("node1", b, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		readings = append(readings, pts)
	}
	cpuKey := SeriesKey{Node: "node1", Namespace: "kube-system", Pod: "coredns-667645c5c9-jmd4w", Container: "coredns", Metric: results.MetricCPU}
	memKey := cpuKey
	memKey.Metric = results.MetricMemory
	nodeCPU := SeriesKey{Node: "node1", Metric: results.MetricCPU}
	for i, pts := range readings {
		if len(pts) != 4 {
			t.Errorf("reading %d: %d series, want coredns cpu+memory and node cpu+memory: %v", i, len(pts), pts)
		}
		for _, k := range []SeriesKey{cpuKey, memKey, nodeCPU} {
			if p, ok := pts[k]; !ok || p.V <= 0 || p.T.Year() < 2026 {
				t.Errorf("reading %d: %+v = %+v, %v", i, k, p, ok)
			}
		}
	}
	if want := time.UnixMilli(1796085380500).UTC(); !readings[0][cpuKey].T.Equal(want) || readings[0][cpuKey].V != 0.448371701 {
		t.Errorf("coredns cpu %+v: want 0.448371701 at the kubelet's own timestamp %s", readings[0][cpuKey], want)
	}
	if _, err := parseResource("n", []byte("resource_scrape_error 0\n"), time.Now()); err == nil {
		t.Error("a response without CPU or memory series must be an error")
	}
	if _, err := parseResource("n", []byte("not metrics {"), time.Now()); err == nil {
		t.Error("garbage must be an error")
	}
}

// series builds readings every step from t0 for d.
func series(t0 time.Time, step, d time.Duration, f func(s float64) float64) []Point {
	var out []Point
	for t := time.Duration(0); t <= d; t += step {
		out = append(out, Point{T: t0.Add(t), V: f(t.Seconds())})
	}
	return out
}

func TestStats(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	step := 5 * time.Second
	k := func(pod, ctr, metric string) SeriesKey {
		return SeriesKey{Node: "n1", Namespace: "ns", Pod: pod, Container: ctr, Metric: results.Metric(metric)}
	}
	s := map[SeriesKey][]Point{
		k("a", "app", string(results.MetricCPU)): series(t0, step, 5*time.Minute, altCPU(0.2, 0.6)),
		k("b", "app", string(results.MetricCPU)): series(t0, step, 5*time.Minute, func(x float64) float64 {
			if x >= 150 { // restarted: the counter starts again from zero
				return 0.3 * (x - 150)
			}
			return 0.3 * x
		}),
		k("a", "app", string(results.MetricMemory)): series(t0, step, 5*time.Minute, func(x float64) float64 { return (200 + math.Mod(x, 20)) * (1 << 20) }),
		k("b", "app", string(results.MetricMemory)): series(t0, step, 5*time.Minute, func(float64) float64 { return 100 * (1 << 20) }),
	}
	start, end := t0.Add(time.Minute), t0.Add(3*time.Minute)
	cpu, mem := Stats(s, start, end, step, 4*step, 2*step, step)
	if !cpu.OK || !mem.OK {
		t.Fatalf("cpu %+v mem %+v", cpu, mem)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"cpu min", cpu.Min, 0.5}, {"cpu max", cpu.Max, 0.9}, {"cpu avg", cpu.Avg, 0.7 - 0.3*5/120}, // the 5 s before a counter reset are lost, as in Prometheus
		{"mem min", mem.Min / (1 << 20), 300}, {"mem max", mem.Max / (1 << 20), 315}, {"mem avg", mem.Avg / (1 << 20), 307.5 + 0.0},
	} {
		if math.Abs(c.got-c.want) > 0.01*c.want {
			t.Errorf("%s = %.4f, want %.4f", c.name, c.got, c.want)
		}
	}
	if cpu, mem := Stats(nil, start, end, step, 4*step, 2*step, step); cpu.OK || mem.OK {
		t.Error("no series must give no statistics")
	}
}

func TestPodSetMatchesKubeletSeries(t *testing.T) {
	t.Parallel()
	app := podset.PodSet{Component: "app", Pods: map[string][]string{"ns": {"a"}}, Container: matchNotProxy}
	side := podset.PodSet{Component: "sidecar", Pods: map[string][]string{"ns": {"a"}}, Container: matchProxy}
	node := podset.NodeSet(podset.NodeRef{Name: "n1"}, podset.NodeRef{Name: "n3"})
	for _, c := range []struct {
		set  podset.PodSet
		key  SeriesKey
		want bool
	}{
		{app, SeriesKey{Namespace: "ns", Pod: "a", Container: "app"}, true},
		{app, SeriesKey{Namespace: "ns", Pod: "a", Container: "istio-proxy"}, false},
		{app, SeriesKey{Namespace: "other", Pod: "a", Container: "app"}, false},
		{side, SeriesKey{Namespace: "ns", Pod: "a", Container: "istio-proxy"}, true},
		{side, SeriesKey{Namespace: "ns", Pod: "a", Container: "app"}, false},
		{node, SeriesKey{Node: "n1"}, true},
		{node, SeriesKey{Node: "n2"}, false}, // not a test node: never added in
		{node, SeriesKey{Node: "n1", Namespace: "ns", Pod: "a", Container: "app"}, false},
		{app, SeriesKey{Node: "n1"}, false},
	} {
		if got := setMatches(c.set, c.key); got != c.want {
			t.Errorf("setMatches(%s, %+v) = %v", c.set.Component, c.key, got)
		}
	}
}

// fakeNodes serves synthetic /metrics/resource text following a model clock.
type fakeNodes struct{ t0 time.Time }

func (f fakeNodes) Nodes(context.Context) ([]string, error) { return []string{"n1", "n2", "n3"}, nil }

func (f fakeNodes) Resource(_ context.Context, node string) ([]byte, error) {
	now := time.Now().Truncate(time.Millisecond)
	x := now.Sub(f.t0).Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE container_cpu_usage_seconds_total counter\n")
	fmt.Fprintf(&b, "container_cpu_usage_seconds_total{container=\"app\",namespace=\"ns\",pod=\"app-%s\"} %g %d\n", node, 0.25*x, now.UnixMilli())
	fmt.Fprintf(&b, "container_cpu_usage_seconds_total{container=\"istio-proxy\",namespace=\"ns\",pod=\"app-%s\"} %g %d\n", node, 0.05*x, now.UnixMilli())
	fmt.Fprintf(&b, "# TYPE container_memory_working_set_bytes gauge\n")
	fmt.Fprintf(&b, "container_memory_working_set_bytes{container=\"app\",namespace=\"ns\",pod=\"app-%s\"} %d %d\n", node, 64<<20, now.UnixMilli())
	// node n<i> uses i cores and i GiB: a sum over the cluster's three nodes would be visibly wrong.
	i := float64(node[1] - '0')
	fmt.Fprintf(&b, "# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total %g %d\n", i*x, now.UnixMilli())
	fmt.Fprintf(&b, "# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes %g %d\n", i*(1<<30), now.UnixMilli())
	return []byte(b.String()), nil
}

func TestKubeletSampler(t *testing.T) {
	t.Parallel()
	k := &KubeletSampler{Nodes: fakeNodes{t0: time.Now()}, Interval: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = k.Run(ctx) }()
	start := time.Now().Add(2 * time.Second).Truncate(time.Second)
	w := results.Window{Kind: results.WindowLoad, Start: start, End: start.Add(4 * time.Second)}
	// Each pod is another workload's: their figures come beside the totals.
	wls := map[string]string{"ns/app-n1": "Deployment/ns/a", "ns/app-n2": "Deployment/ns/b"}
	sets := []podset.PodSet{
		{Component: "app", Pods: map[string][]string{"ns": {"app-n1", "app-n2"}}, Container: matchNotProxy, Workloads: wls},
		{Component: "sidecar", Pods: map[string][]string{"ns": {"app-n1", "app-n2"}}, Container: matchProxy, Workloads: wls},
		podset.NodeSet(podset.NodeRef{Name: "n1"}, podset.NodeRef{Name: "n3"}), // two test nodes of three
	}
	got, err := k.Collect(ctx, w, sets)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"app/cpu": 500, "app/memory": 128,
		"app-by-workload/Deployment/ns/a/cpu": 250, "app-by-workload/Deployment/ns/a/memory": 64,
		"app-by-workload/Deployment/ns/b/cpu": 250, "app-by-workload/Deployment/ns/b/memory": 64,
		"sidecar-by-workload/Deployment/ns/a/cpu": 50, "sidecar-by-workload/Deployment/ns/b/cpu": 50,
		"node/n1/cpu": 1000, "node/n1/memory": 1024, "node/n3/cpu": 3000, "node/n3/memory": 3072,
	}
	seen := 0
	for _, s := range got.Samples {
		if s.Source != SourceKubelet {
			t.Errorf("source %q", s.Source)
		}
		key := string(s.Component) + "/" + string(s.Metric)
		if s.Component == results.ComponentNode {
			if s.Labels[LabelSeries] != NodeSeriesResource {
				t.Errorf("node sample %+v: series label %q, want %q", s, s.Labels[LabelSeries], NodeSeriesResource)
			}
			key = string(s.Component) + "/" + s.Labels[LabelNode] + "/" + string(s.Metric)
		}
		if wl := s.Labels[results.LabelWorkload]; wl != "" {
			key = string(s.Component) + "/" + wl + "/" + string(s.Metric)
		}
		if v, ok := want[key]; ok {
			seen++
			if math.Abs(s.Value-v) > 0.02*v {
				t.Errorf("%s %s %s = %.2f, want %.2f", s.Component, s.Metric, s.Stat, s.Value, v)
			}
		}
	}
	if seen != 36 {
		t.Errorf("%d checked samples of %d, want 36: %+v (warnings %q)", seen, len(got.Samples), got.Samples, got.Warnings)
	}
	for _, wn := range got.Warnings {
		if !strings.Contains(wn, "memory readings for sidecar") { // the fake has no istio-proxy memory series
			t.Errorf("unexpected warning %q", wn)
		}
	}
}

func TestResolutionFollowsCadvisorStamps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	k := &KubeletSampler{Interval: 5 * time.Second}
	if iv := k.Resolution(); iv.Effective != 5*time.Second || iv.RateRange() != 20*time.Second {
		t.Errorf("without readings: %+v", iv)
	}
	// Sampled every 5 s, but cAdvisor stamped its readings about every 15 s (duplicates are dropped when stored).
	k.series = map[SeriesKey][]Point{
		{Node: "n1", Metric: results.MetricCPU}:    series(t0, 15*time.Second, time.Minute, func(x float64) float64 { return x }),
		{Node: "n2", Metric: results.MetricCPU}:    series(t0.Add(3*time.Second), 14500*time.Millisecond, time.Minute, func(x float64) float64 { return x }),
		{Node: "n3", Metric: results.MetricCPU}:    series(t0, time.Second, 2*time.Second, func(x float64) float64 { return x })[:2], // too few readings
		{Node: "n2", Metric: results.MetricMemory}: series(t0, 16*time.Second, time.Minute, func(x float64) float64 { return x }),
		{Node: "n1", Metric: results.MetricMemory}: nil,
	}
	iv := k.Resolution()
	if iv.Effective != 15*time.Second || iv.RateRange() != time.Minute || len(iv.Notes) != 1 {
		t.Errorf("resolution %+v rate range %s: want 15s and 1m from the stamps", iv, iv.RateRange())
	}
	got, err := k.Calibrate(context.Background(), time.Second)
	if err != nil || got.Effective != 15*time.Second {
		t.Errorf("Calibrate with known spacing = %+v, %v", got, err)
	}
}

// Calibrate gives up on the sampler's clock, not the wall clock: with a fake clock nothing ends before it is
// stepped past the limit, and then the result says the spacing is assumed.
func TestCalibrateLimitOnTheClock(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	k := &KubeletSampler{Interval: 5 * time.Second, Clock: clk}
	type result struct {
		iv  Interval
		err error
	}
	done := make(chan result, 1)
	go func() {
		iv, err := k.Calibrate(context.Background(), time.Minute)
		done <- result{iv, err}
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(59 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("Calibrate returned before its limit on the clock: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(time.Second)
	r := <-done
	if r.err != nil || r.iv.Effective != 5*time.Second || len(r.iv.Notes) != 1 || !strings.Contains(r.iv.Notes[0], "unknown after 1m0s") {
		t.Errorf("Calibrate after its limit = %+v, %v; want the sampling interval with a note", r.iv, r.err)
	}
}
