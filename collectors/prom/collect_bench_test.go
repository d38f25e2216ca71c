//go:build linux

package prom

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// Collection at scale (issue 15 section 1): one window's collection against the real Prometheus (Debian 2.42),
// holding cAdvisor-like series of 1,000 and of 5,000 pods in 60 namespaces each (app container and istio-proxy, plus
// cAdvisor's pause container and pod cgroup, which the selectors must leave out), 100 pods per node, as a sidecar-mode
// case measures them (app, sidecar, istiod, loadgen, the test nodes). Targets: 1,000 pods in under 2 s, 5,000 in
// under 5 s, meshbench's own peak memory under 300 MB at 5,000. The figures are benchmark metrics (make
// bench-collect), not a timed test: a shared 2-core machine cannot hold a wall-clock limit.

// collectLayout is one scale: pods spread over namespaces and nodes round-robin, one load client.
type collectLayout struct {
	name             string
	prefix           string // of namespaces and nodes, so that every layout lives in one Prometheus
	pods, namespaces int
	nodes            int
	subnet           int // node i has InternalIP 10.<subnet>.0.<i+1>
}

func collectLayouts() []collectLayout {
	return []collectLayout{
		{name: "1000pods-60ns", prefix: "bench-a", pods: 1000, namespaces: 60, nodes: 10, subnet: 1},
		{name: "5000pods-60ns", prefix: "bench-b", pods: 5000, namespaces: 60, nodes: 50, subnet: 2},
	}
}

func (l collectLayout) namespace(i int) string { return fmt.Sprintf("%s-%02d", l.prefix, i) }
func (l collectLayout) node(i int) string      { return fmt.Sprintf("%s-node-%02d", l.prefix, i) }
func (l collectLayout) nodeIP(i int) string    { return fmt.Sprintf("10.%d.0.%d", l.subnet, i+1) }

// The window every layout is collected over: 60 s of 5 s samples, as a case's load window.
const (
	benchWindow = 60 * time.Second
	benchStep   = 5 * time.Second
	// benchJob is kube-prometheus-stack's job of the kubelet's cAdvisor endpoint (metrics_path /metrics/cadvisor).
	benchJob = "kubelet"
	appLabel = "meshbench.dev/app"
)

// benchPod is one pod of a layout: its node (index) and its containers' CPU rates (cores) and memory (MiB).
type benchPod struct {
	ns, name   string
	node       int
	labels     map[string]string
	containers []benchContainer
}

type benchContainer struct {
	name, image string
	rate, mib   float64
}

// benchPods are the layout's app pods (app container and istio-proxy; Deployment-style names, <deployment>-<replica
// set hash>-<suffix>) and its load client in the first namespace.
func (l collectLayout) benchPods() []benchPod {
	out := make([]benchPod, 0, l.pods+2)
	app := map[string]string{appLabel: "bench"}
	for i := range l.pods {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s-%d", l.prefix, i)
		out = append(out, benchPod{ns: l.namespace(i % l.namespaces), name: fmt.Sprintf("svc-%02d-%08x-%05x", i%20, h.Sum32(), i), node: i % l.nodes, labels: app,
			containers: []benchContainer{
				{name: "app", image: "ghcr.io/fortio/fortio:1.75.3", rate: 0.01 + 0.001*float64(i%100), mib: 50 + float64(i%50)},
				{name: proxyContainer, image: "docker.io/istio/proxyv2:1.28.0", rate: 0.005, mib: 40},
			}})
	}
	out = append(out, benchPod{ns: l.namespace(0), name: "loadgen-0", labels: map[string]string{"meshbench.dev/component": "loadgen"}, containers: []benchContainer{
		{name: "loadgen", image: "ghcr.io/meshbench/meshbench-agent:dev", rate: 0.8, mib: 120},
		{name: proxyContainer, image: "docker.io/istio/proxyv2:1.28.0", rate: 0.3, mib: 60},
	}})
	return out
}

// istiod is the control plane every layout's cluster has (its series are written once).
func istiod() benchPod {
	return benchPod{ns: "istio-system", name: "istiod-6d5f8b7c9-q2x7z", labels: map[string]string{"app": "istiod", "istio.io/rev": "default"},
		containers: []benchContainer{{name: "discovery", image: "docker.io/istio/pilot:1.28.0", rate: 0.2, mib: 300}}}
}

// cluster is the layout as the Kubernetes API shows it (fake clientset): its pods, running, and its nodes.
func (l collectLayout) cluster() *fake.Clientset {
	var objs []k8sruntime.Object
	for i := range l.nodes {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: l.node(i)},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: l.nodeIP(i)}}}})
	}
	for _, p := range append(l.benchPods(), istiod()) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: p.labels},
			Spec: corev1.PodSpec{NodeName: l.node(p.node)}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, c := range p.containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.name, Image: c.image})
		}
		objs = append(objs, pod)
	}
	return fake.NewClientset(objs...)
}

// podSets are the sets a sidecar-mode case of the layout measures, found as a run finds them (PodSets).
func (l collectLayout) podSets(ctx context.Context) ([]podset.PodSet, error) {
	nss := make([]string, l.namespaces)
	for i := range nss {
		nss[i] = l.namespace(i)
	}
	return PodSets(ctx, KubePods{Kube: l.cluster()}, Scope{AppNamespaces: nss, AppSelector: appLabel + "=bench", LoadgenSelector: "meshbench.dev/component=loadgen",
		Node: true, Mesh: MeshScope{Istiod: true, IstiodRevision: "default"}})
}

// truth is what the layout's components use on average (millicores, MiB): the counters grow linearly, so the
// collector's interpolated averages must match to rounding.
func (l collectLayout) truth() map[string][2]float64 {
	out := map[string][2]float64{}
	addTo := func(comp string, c benchContainer) {
		v := out[comp]
		out[comp] = [2]float64{v[0] + 1000*c.rate, v[1] + c.mib}
	}
	for _, p := range append(l.benchPods(), istiod()) {
		for _, c := range p.containers {
			switch {
			case c.name == proxyContainer:
				addTo(string(results.ComponentSidecar), c)
			case p.labels[appLabel] != "":
				addTo(string(results.ComponentApp), c)
			case p.ns == "istio-system":
				addTo(string(results.ComponentIstiod), c)
			default:
				addTo(string(results.ComponentLoadgen), c)
			}
		}
	}
	return out
}

// writeOpenMetrics writes the cAdvisor series of the layouts over [from, to), one sample every benchStep (each
// series at its own phase, as cAdvisor stamps its housekeeping), series after series. Labels are the kubelet's
// (kubernetes/kubernetes pkg/kubelet/server/server.go, containerPrometheusLabelsFunc at 008b3652: id, name, image,
// pod, namespace, container; a pod's cgroup carries its pod and namespace with container "", its sandbox is
// container "POD") and the scrape's (kube-prometheus-stack's kubelet ServiceMonitor: job kubelet, metrics_path
// /metrics/cadvisor, instance <InternalIP>:10250, node). Every node also has its root cgroup, id="/", and its
// target's up series.
func writeOpenMetrics(w io.Writer, layouts []collectLayout, from, to time.Time) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	type series struct {
		labels     string
		phase      float64 // seconds after the grid
		rate, mib  float64
		firstValue float64
	}
	var all []series
	add := func(l collectLayout, node int, ns, pod, ctr, id, name, image string, rate, mib float64) {
		lbl := fmt.Sprintf(`container=%q,id=%q,image=%q,instance=%q,job=%q,metrics_path="/metrics/cadvisor",name=%q,namespace=%q,node=%q,pod=%q`,
			ctr, id, image, l.nodeIP(node)+":10250", benchJob, name, ns, l.node(node), pod)
		h := fnv.New32a()
		_, _ = io.WriteString(h, lbl)
		all = append(all, series{labels: lbl, phase: float64(h.Sum32()%5000) / 1000, rate: rate, mib: mib, firstValue: float64(h.Sum32() % 100000)})
	}
	for li, l := range layouts {
		pods := l.benchPods()
		if li == 0 {
			pods = append(pods, istiod())
		}
		nodeRate := make([]float64, l.nodes)
		for _, p := range pods {
			h := fnv.New64a()
			_, _ = io.WriteString(h, p.ns+"/"+p.name)
			sum := h.Sum64()
			cg := fmt.Sprintf("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%016x_%016x.slice", sum, sum>>13)
			var podRate, podMiB float64
			for k, c := range p.containers {
				cid := fmt.Sprintf("%016x%016x%016x%016x", sum, sum>>(k+1), sum>>(k+7), sum>>(k+17))
				add(l, p.node, p.ns, p.name, c.name, cg+"/cri-containerd-"+cid+".scope", cid, c.image, c.rate, c.mib)
				podRate, podMiB = podRate+c.rate, podMiB+c.mib
			}
			pause := fmt.Sprintf("%016x%016x%016x%016x", sum>>3, sum>>5, sum>>9, sum>>11)
			add(l, p.node, p.ns, p.name, "POD", cg+"/cri-containerd-"+pause+".scope", pause, "registry.k8s.io/pause:3.10", 0.0002, 0.4)
			add(l, p.node, p.ns, p.name, "", cg, "", "", podRate+0.0003, podMiB+1)
			nodeRate[p.node] += podRate
		}
		for n := range l.nodes {
			add(l, n, "", "", "", "/", "", "", nodeRate[n]+0.3, 2048)
		}
	}
	origin := float64(from.Unix())
	for _, counter := range []bool{true, false} {
		name := "container_memory_working_set_bytes"
		if counter {
			name = "container_cpu_usage_seconds"
			fmt.Fprintf(bw, "# HELP %s synthetic cAdvisor\n# TYPE %s counter\n", name, name)
			name += "_total"
		} else {
			fmt.Fprintf(bw, "# HELP %s synthetic cAdvisor\n# TYPE %s gauge\n", name, name)
		}
		for _, s := range all {
			for t := origin + s.phase; t < float64(to.Unix()); t += benchStep.Seconds() {
				v := s.mib * (1 << 20)
				if counter {
					v = s.firstValue + s.rate*(t-origin)
				}
				if _, err := fmt.Fprintf(bw, "%s{%s} %.12g %.3f\n", name, s.labels, v, t); err != nil {
					return err
				}
			}
		}
	}
	// The scrapes' up series, one per node's cAdvisor target: the collector checks that each was scraped all through
	// the window (completeness.go).
	fmt.Fprintf(bw, "# HELP up synthetic scrape health\n# TYPE up gauge\n")
	for _, l := range layouts {
		for n := range l.nodes {
			for t := origin + float64(n%5); t < float64(to.Unix()); t += benchStep.Seconds() {
				fmt.Fprintf(bw, "up{instance=%q,job=%q,metrics_path=\"/metrics/cadvisor\",node=%q} 1 %.3f\n", l.nodeIP(n)+":10250", benchJob, l.node(n), t)
			}
		}
	}
	if _, err := bw.WriteString("# EOF\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// collectFixture is Prometheus holding every layout's series, and the window to collect.
type collectFixture struct {
	url    string
	window results.Window
}

// makeCollectBlocks writes the series (the window ends 90 s ago, the data covers 150 s before it and 15 s after)
// and backfills them with promtool into dir/blocks.
func makeCollectBlocks(promtool, dir string) (results.Window, error) {
	end := time.Now().Add(-90 * time.Second).Truncate(time.Second)
	input := filepath.Join(dir, "cadvisor.om")
	f, err := os.Create(input)
	if err != nil {
		return results.Window{}, err
	}
	werr := writeOpenMetrics(f, collectLayouts(), end.Add(-150*time.Second), end.Add(15*time.Second))
	if err := errors.Join(werr, f.Close()); err != nil {
		return results.Window{}, err
	}
	defer os.Remove(input)
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", input, filepath.Join(dir, "blocks")).CombinedOutput(); err != nil {
		return results.Window{}, fmt.Errorf("promtool backfill: %w\n%s", err, out)
	}
	return results.Window{Kind: results.WindowLoad, Start: end.Add(-benchWindow), End: end}, nil
}

// startCollectFixture backfills the series and starts Prometheus on them. BenchmarkCollectWindow runs once per
// test binary whatever -count says (the testing package repeats each sub-benchmark), so this happens once.
func startCollectFixture(b *testing.B) collectFixture {
	b.Helper()
	promtool := needPromtool(b)
	started := time.Now()
	dir := b.TempDir()
	window, err := makeCollectBlocks(promtool, dir)
	if err != nil {
		b.Fatal(err)
	}
	url := startPrometheusPrepared(b, "", func(dataDir string) {
		if err := os.CopyFS(dataDir, os.DirFS(filepath.Join(dir, "blocks"))); err != nil {
			b.Fatal(err)
		}
	})
	b.Logf("backfill and start: %s", time.Since(started).Round(time.Millisecond))
	return collectFixture{url: url, window: window}
}

// countingAPI counts the queries that go through it.
type countingAPI struct {
	API
	n    atomic.Int64
	pods atomic.Int64 // of pod sets (the rest are the test nodes')
}

func (c *countingAPI) Query(ctx context.Context, q string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	c.n.Add(1)
	if strings.Contains(q, "pod=~") {
		c.pods.Add(1)
	}
	return c.API.Query(ctx, q, ts, opts...)
}

// benchCollector is the collector as a run builds it (orchestrate.newCollector), with the interval detection's
// result for this Prometheus given.
func benchCollector(a API) *Collector {
	return &Collector{API: a, Interval: Interval{Scrape: benchStep, Effective: benchStep, Job: benchJob}, Retry: DefaultRetry()}
}

// checkCollected fails unless every component's CPU and memory averages match the layout's truth (0.01 %) without
// a warning: a fast collection of the wrong series proves nothing.
func checkCollected(tb testing.TB, l collectLayout, got podset.Collected) {
	tb.Helper()
	if len(got.Warnings) > 0 {
		tb.Errorf("%s: warnings %q", l.name, got.Warnings)
	}
	avg := map[string][2]float64{}
	nodes := 0
	for _, s := range got.Samples {
		if s.Stat != "avg" {
			continue
		}
		if s.Component == results.ComponentNode {
			nodes++
			continue
		}
		v := avg[string(s.Component)]
		if s.Metric == results.MetricCPU {
			v[0] = s.Value
		} else {
			v[1] = s.Value
		}
		avg[string(s.Component)] = v
	}
	for comp, want := range l.truth() {
		for i, m := range []string{"cpu", "memory"} {
			if g := avg[comp][i]; math.Abs(g-want[i]) > 1e-4*want[i] {
				tb.Errorf("%s: %s %s average %.3f, want %.3f", l.name, comp, m, g, want[i])
			}
		}
	}
	if nodes != 2*l.nodes {
		tb.Errorf("%s: %d node averages, want CPU and memory of %d nodes", l.name, nodes, l.nodes)
	}
}

// heapPeak samples the heap's live and not yet swept objects every millisecond until stop, and returns the most.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// BenchmarkCollectWindow times one window's collection (Collector.Collect, what a run calls per window, with the pod
// sets PodSets found) per layout, and reports the queries per window, the peak heap during collection and, from a
// child process that only lists the pods and collects the window once, meshbench's peak RSS.
func BenchmarkCollectWindow(b *testing.B) {
	needPrometheus(b)
	fx := startCollectFixture(b)
	api, err := NewAPI(ClientConfig{URL: fx.url})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, l := range collectLayouts() {
		b.Run(l.name, func(b *testing.B) {
			sets, err := l.podSets(ctx)
			if err != nil {
				b.Fatal(err)
			}
			ca := &countingAPI{API: api}
			col := benchCollector(ca)
			got, err := col.Collect(ctx, fx.window, sets)
			if err != nil {
				b.Fatal(err)
			}
			checkCollected(b, l, got)
			perWindow, podQueries := ca.n.Load(), ca.pods.Load()
			stop := make(chan struct{})
			peak := heapPeak(stop)
			for b.Loop() {
				if _, err := col.Collect(ctx, fx.window, sets); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			b.ReportMetric(float64(perWindow), "queries/window")
			b.ReportMetric(float64(podQueries), "pod-queries/window")
			b.ReportMetric(float64(<-peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(childPeakRSS(b, fx, l)/(1<<20), "peak-RSS-MB")
		})
	}
}

// childEnv carries the fixture and the layout to the child process of childPeakRSS.
const childEnv = "MESHBENCH_COLLECT_WINDOW_CHILD"

type childJob struct {
	URL    string         `json:"url"`
	Layout string         `json:"layout"`
	Window results.Window `json:"window"`
}

// childPeakRSS runs TestCollectWindowChild in a process of its own and returns its peak resident set (bytes): a
// process that does what a run does for one window (list the pods, collect), so the figure is not the benchmark's
// own data generation.
func childPeakRSS(b *testing.B, fx collectFixture, l collectLayout) float64 {
	b.Helper()
	job, err := json.Marshal(childJob{URL: fx.url, Layout: l.name, Window: fx.window})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCollectWindowChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+string(job))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child collection: %v\n%s", err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage of the child")
	}
	return float64(ru.Maxrss) * 1024 // KiB on Linux
}

// TestCollectWindowChild is childPeakRSS's child: it runs only under BenchmarkCollectWindow.
func TestCollectWindowChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("runs as BenchmarkCollectWindow's child process only")
	}
	var job childJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	for _, l := range collectLayouts() {
		if l.name != job.Layout {
			continue
		}
		ctx := context.Background()
		api, err := NewAPI(ClientConfig{URL: job.URL})
		if err != nil {
			t.Fatal(err)
		}
		sets, err := l.podSets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := benchCollector(api).Collect(ctx, job.Window, sets)
		if err != nil {
			t.Fatal(err)
		}
		checkCollected(t, l, got)
		return
	}
	t.Fatalf("no layout %q", job.Layout)
}
