package prom

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// simNode is one node of the synthetic cluster: its busy CPU (cumulative core-seconds at t) and its memory (MiB).
type simNode struct {
	name, ip string
	cpu, mem func(t float64) float64
}

// simNodes are three nodes of which the tests measure node1 and node3. node2, the node the test never touched, is
// the busiest, so a sum over the cluster would be off by far more than the 1 % tolerance.
func simNodes() []simNode {
	return []simNode{
		{"node1", "10.0.0.1", altCPU(1.0, 1.4), sawMem(3000)},
		{"node2", "10.0.0.2", constRate(2.5), constMem(6000)},
		{"node3", "10.0.0.3", altCPU(0.9, 0.7), sawMem(4000)},
	}
}

const (
	simCPUs       = 4
	simMemTotalGB = 16
)

// nodeSim serves, per node (?node=<name>), what a kubelet and node-exporter serve of whole-node data:
//
//	/metrics/cadvisor       stamped; the root cgroup id="/" (the node), a non-pod cgroup id="/system.slice", and one
//	                        pod container with its pod cgroup (pod series are what keep the cAdvisor job detectable
//	                        when a drop rule removes the root cgroup)
//	/metrics/resource       stamped; node_cpu_usage_seconds_total, node_memory_working_set_bytes (no labels, as the
//	                        kubelet serves them) and the pod container
//	/metrics/node-exporter  unstamped; node_cpu_seconds_total{cpu,mode} of simCPUs CPUs (busy time spread over user,
//	                        nice, system, irq, softirq; iowait and steal that are not busy), MemTotal and MemAvailable
type nodeSim struct {
	epoch time.Time
	nodes []simNode
}

func (s *nodeSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := slices.IndexFunc(s.nodes, func(n simNode) bool { return n.name == r.URL.Query().Get("node") })
	if i < 0 {
		http.Error(w, "unknown node", http.StatusNotFound)
		return
	}
	n := s.nodes[i]
	now := time.Now().Truncate(time.Millisecond)
	t := now.Sub(s.epoch).Seconds()
	ms := now.UnixMilli()
	cpu, mem := n.cpu(t), n.mem(t)*(1<<20)
	podCPU, podMem := 0.1*t, 64.0*(1<<20)
	pod := `namespace="bench",pod="app-` + n.name + `"`
	var b strings.Builder
	switch r.URL.Path {
	case "/metrics/cadvisor":
		b.WriteString("# TYPE container_cpu_usage_seconds_total counter\n")
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{id=\"/\"} %g %d\n", cpu, ms)
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{id=\"/system.slice\"} %g %d\n", 0.3*cpu, ms)
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{id=\"/kubepods/pod1\",%s} %g %d\n", pod, podCPU, ms)
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{id=\"/kubepods/pod1/c1\",%s,container=\"app\"} %g %d\n", pod, podCPU, ms)
		b.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
		fmt.Fprintf(&b, "container_memory_working_set_bytes{id=\"/\"} %g %d\n", mem, ms)
		fmt.Fprintf(&b, "container_memory_working_set_bytes{id=\"/system.slice\"} %g %d\n", 0.3*mem, ms)
		fmt.Fprintf(&b, "container_memory_working_set_bytes{id=\"/kubepods/pod1\",%s} %g %d\n", pod, podMem, ms)
		fmt.Fprintf(&b, "container_memory_working_set_bytes{id=\"/kubepods/pod1/c1\",%s,container=\"app\"} %g %d\n", pod, podMem, ms)
	case "/metrics/resource":
		fmt.Fprintf(&b, "# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total %g %d\n", cpu, ms)
		fmt.Fprintf(&b, "# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes %g %d\n", mem, ms)
		fmt.Fprintf(&b, "# TYPE container_cpu_usage_seconds_total counter\ncontainer_cpu_usage_seconds_total{%s,container=\"app\"} %g %d\n", pod, podCPU, ms)
		fmt.Fprintf(&b, "# TYPE container_memory_working_set_bytes gauge\ncontainer_memory_working_set_bytes{%s,container=\"app\"} %g %d\n", pod, podMem, ms)
	case "/metrics/node-exporter":
		b.WriteString("# TYPE node_cpu_seconds_total counter\n")
		busy := cpu / simCPUs
		for c := range simCPUs {
			for _, m := range []struct {
				mode string
				v    float64
			}{
				{"user", 0.5 * busy}, {"nice", 0.05 * busy}, {"system", 0.3 * busy}, {"irq", 0.05 * busy}, {"softirq", 0.1 * busy},
				{"iowait", 0.05 * t}, {"steal", 0.02 * t}, {"idle", 0.93*t - busy},
			} {
				fmt.Fprintf(&b, "node_cpu_seconds_total{cpu=\"%d\",mode=%q} %g\n", c, m.mode, m.v)
			}
		}
		fmt.Fprintf(&b, "# TYPE node_memory_MemTotal_bytes gauge\nnode_memory_MemTotal_bytes %g\n", float64(simMemTotalGB<<30))
		fmt.Fprintf(&b, "# TYPE node_memory_MemAvailable_bytes gauge\nnode_memory_MemAvailable_bytes %g\n", float64(simMemTotalGB<<30)-mem)
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

// targets renders one static target per simulated node: addr scraped with ?node=<name>, and the labels labels(n)
// gives it (instance, node, job, ... as each setup's discovery and relabeling would).
func targets(addr string, nodes []simNode, labels func(simNode) string) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {__param_node: %q, %s}\n", addr, n.name, labels(n))
	}
	return b.String()
}

// nodeLayout is one Prometheus setup's scrape configuration of the same three nodes.
type nodeLayout struct {
	name    string
	configs func(addr string, nodes []simNode) string
	// series is the source the collector must pick; "" means none (the node note must say why).
	series string
	// step is the spacing of that source's samples when it is scraped slower than cAdvisor.
	sparse bool
	// noteHas are fragments the absence note must contain.
	noteHas []string
}

// The layouts, as read upstream (details in node_test.go):
//
//	harness  hack/localcluster/conf/prometheus.yml.in: jobs kubelet-cadvisor and kubelet-resource, static targets
//	         "<IP>:10250" labelled node=<name>.
//	kps+res  kube-prometheus-stack (prometheus-community/helm-charts charts/kube-prometheus-stack, 60.0.0 to 88.5.3,
//	         templates/exporters/kubelet/servicemonitor.yaml, values.yaml) with kubelet.serviceMonitor.resource=true and
//	         resourcePath /metrics/resource: every kubelet endpoint under job "kubelet" (jobLabel k8s-app), metrics_path
//	         from __metrics_path__, node and instance="<InternalIP>:10250" from prometheus-operator's kubelet Endpoints
//	         (prometheus-operator v0.93.0 pkg/prometheus/promcfg.go "Node;(.*)" -> node, pkg/kubelet/controller.go
//	         InternalIP first), honorLabels true; cAdvisorMetricRelabelings' rule [id, pod] '.+;' drop (verbatim
//	         below) removes the root cgroup. node-exporter is there too (nodeExporter.enabled: true), but
//	         /metrics/resource comes first.
//	kps      the chart's defaults: /metrics/resource not scraped (resource: false), node-exporter (subchart
//	         prometheus-node-exporter, ServiceMonitor without relabelings: job "node-exporter", instance="<node
//	         IP>:9100" of its hostNetwork pod, no node label) scraped slower than cAdvisor (Prometheus' default 30 s
//	         against the chart's cAdvisorInterval 10 s; here 2 s against 1 s).
//	plain    prometheus/prometheus documentation/examples/prometheus-kubernetes.yml (v2.42.0, v3.14.0): job
//	         kubernetes-cadvisor, role: node (instance = node name), labelmap of node labels
//	         (kubernetes_io_hostname, kubernetes_io_arch), no node label, id="/" kept.
//	absent   kube-prometheus-stack defaults with nodeExporter.enabled=false: no source has node series.
func nodeLayouts() []nodeLayout {
	kubelet := func(path, addr string, nodes []simNode, extra string) string {
		return fmt.Sprintf(`
  - job_name: serviceMonitor/monitoring/kps-kubelet/%s
    honor_labels: true
    metrics_path: %s
    relabel_configs:
      - {action: replace, source_labels: [__metrics_path__], target_label: metrics_path}
%s    static_configs:
%s`, strings.Trim(path, "/"), path, extra, targets(addr, nodes, func(n simNode) string {
			return fmt.Sprintf(`job: kubelet, node: %q, instance: "%s:10250", service: kps-kubelet, endpoint: https-metrics`, n.name, n.ip)
		}))
	}
	// kube-prometheus-stack values.yaml kubelet.serviceMonitor.cAdvisorMetricRelabelings, "Drop cgroup metrics with
	// no pod" (the other default rules drop metric names the collector does not use).
	const dropNoPod = `    metric_relabel_configs:
      - {source_labels: [id, pod], action: drop, regex: '.+;'}
`
	nodeExporter := func(addr string, nodes []simNode) string {
		return fmt.Sprintf(`
  - job_name: serviceMonitor/monitoring/kps-prometheus-node-exporter/0
    scrape_interval: 2s
    metrics_path: /metrics/node-exporter
    static_configs:
%s`, targets(addr, nodes, func(n simNode) string {
			return fmt.Sprintf(`job: node-exporter, instance: "%s:9100", service: kps-prometheus-node-exporter, endpoint: http-metrics, pod: "node-exporter-%s"`, n.ip, n.name)
		}))
	}
	return []nodeLayout{
		{name: "harness", series: NodeSeriesCadvisor, configs: func(addr string, nodes []simNode) string {
			var b strings.Builder
			for _, j := range []struct{ job, path string }{{"kubelet-cadvisor", "/metrics/cadvisor"}, {"kubelet-resource", "/metrics/resource"}} {
				fmt.Fprintf(&b, "\n  - job_name: %s\n    metrics_path: %s\n    static_configs:\n%s", j.job, j.path, targets(addr, nodes, func(n simNode) string {
					return fmt.Sprintf(`node: %q, instance: "%s:10250"`, n.name, n.ip)
				}))
			}
			return b.String()
		}},
		{name: "kps+resource", series: NodeSeriesResource, configs: func(addr string, nodes []simNode) string {
			return kubelet("/metrics/cadvisor", addr, nodes, dropNoPod) + kubelet("/metrics/resource", addr, nodes, "") + nodeExporter(addr, nodes)
		}},
		{name: "kps", series: NodeSeriesNodeExporter, sparse: true, configs: func(addr string, nodes []simNode) string {
			return kubelet("/metrics/cadvisor", addr, nodes, dropNoPod) + nodeExporter(addr, nodes)
		}},
		{name: "plain", series: NodeSeriesCadvisor, configs: func(addr string, nodes []simNode) string {
			return "\n  - job_name: kubernetes-cadvisor\n    metrics_path: /metrics/cadvisor\n    static_configs:\n" +
				targets(addr, nodes, func(n simNode) string {
					return fmt.Sprintf(`instance: %q, kubernetes_io_hostname: %q, kubernetes_io_arch: amd64`, n.name, n.name)
				})
		}},
		{name: "absent", configs: func(addr string, nodes []simNode) string { return kubelet("/metrics/cadvisor", addr, nodes, dropNoPod) },
			noteHas: []string{
				"node CPU and memory of node node1 not collected", "node CPU and memory of node node3 not collected",
				`cadvisor-root container_cpu_usage_seconds_total{id="/",metrics_path!="/metrics/resource",job="kubelet"}: no series (kube-prometheus-stack drops it`,
				"kubelet-resource node_cpu_usage_seconds_total: no series (the kubelets' /metrics/resource is not scraped",
				"node-exporter node_cpu_seconds_total{mode!~\"idle|iowait|steal\"}: no series (no node-exporter is scraped)",
			}},
	}
}

// TestNodeCPUMemoryAgainstRealPrometheus measures two test nodes of three under each layout and checks min/max/avg
// of CPU and memory per node within 1 % of the model, the series label, that the third node is never read, and
// for the layout without any node series the note that says why. The layouts' Prometheus servers run side by side
// (goroutines, not parallel subtests, which -parallel would serialise on a 2-core machine); each is checked in its
// own subtest.
func TestNodeCPUMemoryAgainstRealPrometheus(t *testing.T) {
	t.Parallel()
	needPrometheus(t)
	sim := &nodeSim{epoch: time.Now().Add(-time.Hour).Truncate(40 * time.Second), nodes: simNodes()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	test := []podset.NodeRef{
		{Name: "node1", Addresses: []string{"10.0.0.1"}, Hostname: "node1"},
		{Name: "node3", Addresses: []string{"10.0.0.3"}, Hostname: "node3"},
	}
	layouts := nodeLayouts()
	type outcome struct {
		iv  Interval
		got podset.Collected
		err error
	}
	outs := make([]outcome, len(layouts))
	var wg sync.WaitGroup
	for i, lay := range layouts {
		cfg := lay.configs(l.Addr().String(), sim.nodes)
		api, err := NewAPI(ClientConfig{URL: startPrometheusWith(t, cfg)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			o := &outs[i]
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			retry := Retry{Attempts: 2, Backoff: 200 * time.Millisecond, Timeout: 10 * time.Second}
			if o.err = waitFor(ctx, api, retry, `count(up == 1)`, float64(strings.Count(cfg, "targets:"))); o.err != nil {
				return
			}
			time.Sleep(12 * time.Second) // history for the interval detection
			if o.iv, o.err = DetectInterval(ctx, api, retry, 0, time.Now()); o.err != nil {
				return
			}
			length := 60 * time.Second
			if lay.series == "" {
				length = 10 * time.Second
			}
			start := time.Now().Add(time.Second).Truncate(time.Second)
			w := results.Window{Kind: results.WindowLoad, Start: start, End: start.Add(length)}
			col := &Collector{API: api, Interval: o.iv, Retry: retry}
			o.got, o.err = col.Collect(ctx, w, []podset.PodSet{podset.NodeSet(test...)})
		})
	}
	wg.Wait()
	for i, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			o := outs[i]
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.iv.Effective != time.Second {
				t.Fatalf("interval %+v: want 1s", o.iv)
			}
			t.Logf("layout %s: job %q, %d samples, warnings %q", lay.name, o.iv.Job, len(o.got.Samples), o.got.Warnings)
			if lay.series == "" {
				if len(o.got.Samples) != 0 {
					t.Errorf("samples %+v: want none", o.got.Samples)
				}
				joined := strings.Join(o.got.Warnings, "\n")
				for _, want := range lay.noteHas {
					if !strings.Contains(joined, want) {
						t.Errorf("warnings lack %q:\n%s", want, joined)
					}
				}
				return
			}
			checkNodeSamples(t, lay, sim, o.got, test)
		})
	}
}

// checkNodeSamples compares the samples with the model, per node and statistic, and reports the accuracy.
func checkNodeSamples(t *testing.T, lay nodeLayout, sim *nodeSim, got podset.Collected, test []podset.NodeRef) {
	t.Helper()
	for _, wn := range got.Warnings {
		// A source scraped slower than cAdvisor is expected to say so; nothing else.
		if !(lay.sparse && strings.Contains(wn, "CPU min/max use rates over 8s at steps of 2s")) {
			t.Errorf("unexpected warning %q", wn)
		}
	}
	if lay.sparse && len(got.Warnings) != len(test) {
		t.Errorf("warnings %q: want one per node about the sparse samples", got.Warnings)
	}
	as := make([]container, len(sim.nodes))
	for i, n := range sim.nodes {
		as[i] = container{name: n.name, cpu: n.cpu, mem: n.mem}
	}
	s, e := got.Window.Start.Sub(sim.epoch).Seconds(), got.Window.End.Sub(sim.epoch).Seconds()
	values := map[string]float64{}
	for _, smp := range got.Samples {
		if smp.Component != results.ComponentNode || smp.Labels[LabelSeries] != lay.series {
			t.Errorf("sample %+v: want component node, series %s", smp, lay.series)
		}
		values[smp.Labels[LabelNode]+"/"+string(smp.Metric)+"/"+string(smp.Stat)] = smp.Value
	}
	if len(got.Samples) != 6*len(test) {
		t.Errorf("%d samples, want %d (6 per test node)", len(got.Samples), 6*len(test))
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%-6s %-6s %-4s %12s %12s %8s\n", "node", "metric", "stat", "truth", "prometheus", "error")
	for _, n := range test {
		cMin, cMax, cAvg, mMin, mMax, mAvg := truth(as, func(c container) bool { return c.name == n.Name }, s, e)
		for _, want := range []struct {
			metric, stat string
			v            float64
		}{
			{string(results.MetricCPU), "min", cMin * 1000}, {string(results.MetricCPU), "max", cMax * 1000}, {string(results.MetricCPU), "avg", cAvg * 1000},
			{string(results.MetricMemory), "min", mMin}, {string(results.MetricMemory), "max", mMax}, {string(results.MetricMemory), "avg", mAvg},
		} {
			g, ok := values[n.Name+"/"+want.metric+"/"+want.stat]
			rel := math.Abs(g-want.v) / want.v
			fmt.Fprintf(&report, "%-6s %-6s %-4s %12.3f %12.3f %7.3f%%\n", n.Name, want.metric, want.stat, want.v, g, 100*rel)
			if !ok {
				t.Errorf("%s %s %s: no sample", n.Name, want.metric, want.stat)
			} else if rel > 0.01 {
				t.Errorf("%s %s %s = %.4f, truth %.4f (%.2f%% off, limit 1%%)", n.Name, want.metric, want.stat, g, want.v, 100*rel)
			}
		}
	}
	// The design check: the cluster-wide sum (what the old id="/" selector gave) is far from either node.
	_, _, all, _, _, _ := truth(as, func(container) bool { return true }, s, e)
	for _, n := range test {
		if v := values[n.Name+"/cpu/avg"]; math.Abs(v-all*1000)/(all*1000) < 0.5 {
			t.Errorf("%s cpu avg %.1f is near the all-nodes sum %.1f: the model does not separate them", n.Name, v, all*1000)
		}
	}
	t.Logf("layout %s (series %s), window %s..%s\n%s", lay.name, lay.series, got.Window.Start.Format(time.RFC3339), got.Window.End.Format(time.RFC3339), report.String())
}

// waitFor polls expr until it equals want (targets scraped; the first scrape lands about 5 s after start).
func waitFor(ctx context.Context, api API, retry Retry, expr string, want float64) error {
	for {
		v, _, err := query(ctx, api, retry, expr, time.Time{})
		if f, ok, _ := Scalar(v); err == nil && ok && f == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never reached %g: %w", expr, want, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
