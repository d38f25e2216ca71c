package prom

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), []byte(got))
}

func TestRenderCatalogGolden(t *testing.T) {
	t.Parallel()
	sets := []podset.PodSet{
		{Component: results.ComponentApp, Pods: map[string][]string{"mb-b": {"svc-1-7d9f", "svc-0-abc"}, "mb-a": {"entry.x-1"}}, Container: matchNotProxy},
		{Component: results.ComponentZtunnel, Pods: map[string][]string{"istio-system": {"ztunnel-q8x"}}},
	}
	var b strings.Builder
	for _, s := range sets {
		for _, q := range Catalog() {
			exprs, signs, err := q.Render(Params{Selectors: []string{s.Selector()}, Rate: 20 * time.Second, Window: 600 * time.Second, Step: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(string(s.Component) + " " + q.Name + " " + q.Kind + " [" + string(q.Unit) + "]\n" + renderTerms(exprs, signs))
		}
	}
	// Node sources, each with one exact target selector as chooseNodeSeries makes them (kube-prometheus-stack's
	// labels: job kubelet, instance = the node's InternalIP, node from the Endpoints' target).
	pick := NodePick{Node: "node1", Groups: []NodeGroup{{Labels: map[string]string{"job": "kubelet", "instance": "10.0.0.5:10250", "node": "node1", "metrics_path": "/metrics/cadvisor"}}}}
	for _, src := range nodeSources() {
		for _, q := range src.catalog() {
			exprs, signs, err := q.Render(Params{Selectors: pick.Selectors(), Rate: 20 * time.Second, Window: 600 * time.Second, Step: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("node " + src.name + " " + q.Name + " " + q.Kind + " [" + string(q.Unit) + "]\n" + renderTerms(exprs, signs))
		}
	}
	golden(t, "catalog.golden.txt", b.String())
	if _, _, err := Catalog()[0].Render(Params{Selectors: []string{"{}"}, Rate: 1500 * time.Millisecond, Window: time.Minute, Step: time.Second}); err == nil {
		t.Error("a fractional rate range must be refused")
	}
	if exprs, _, err := Catalog()[0].Render(Params{Selectors: []string{`{a="b"}`}, Rate: 20 * time.Second, Window: 30500 * time.Millisecond, Step: 5 * time.Second}); err != nil || exprs[0] != `container_cpu_usage_seconds_total{a="b"}[66s]` {
		t.Errorf("a window to the millisecond: %q %v, want the fetch range rounded up to whole seconds", exprs, err)
	}
	if _, _, err := Catalog()[0].Render(Params{Rate: time.Second, Window: time.Minute, Step: time.Second}); err == nil {
		t.Error("no selectors must be refused")
	}
}

func renderTerms(exprs []string, signs []float64) string {
	var b strings.Builder
	for i, e := range exprs {
		fmt.Fprintf(&b, "  %+g %s\n", signs[i], e)
	}
	return b.String()
}

func pod(ns, name string, labels map[string]string, containers, inits []string, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Status: corev1.PodStatus{Phase: phase}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	for _, c := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c})
	}
	return p
}

func onNode(p *corev1.Pod, node string) *corev1.Pod { p.Spec.NodeName = node; return p }

// TestPodSets: per mode, only what serves the app under test is counted. On an ambient-profile cluster the ztunnels,
// istio-cni agents and other apps' waypoints exist in every mode; before, they were counted as this app's cost in
// sidecar and none mode too, and waypoints were found by gateway-class-name, a label Istio only has from 1.28.
// The load clients' proxies are the benchmark's (issue 29 section 2b: the sidecar figure summed four proxies for
// the chain's three pods, the client's among them): their sidecars, and in ambient modes the ztunnel of a node
// only clients run on (node4), are loadgen-proxy; a ztunnel that serves clients and app pods together (node1) stays
// ztunnel, with a note.
func TestPodSets(t *testing.T) {
	t.Parallel()
	app := map[string]string{"meshbench.dev/app": "fortio-chain"}
	lg := map[string]string{"meshbench.dev/component": "loadgen"}
	wp := func(gw string) map[string]string {
		// testdata/upstream/istio.yaml 1.24: gateway-name and managed, no gateway-class-name.
		return map[string]string{"gateway.networking.k8s.io/gateway-name": gw, "gateway.istio.io/managed": "istio.io-mesh-controller"}
	}
	kube := fake.NewClientset(
		onNode(pod("mb-single", "svc-0-a", app, []string{"app"}, []string{"istio-validation", "istio-proxy"}, corev1.PodRunning), "node1"), // native sidecar
		onNode(pod("mb-single", "svc-1-b", app, []string{"app", "istio-proxy"}, nil, corev1.PodRunning), "node1"),                          // classic sidecar
		pod("mb-single", "svc-1-old", app, []string{"app"}, nil, corev1.PodSucceeded),                                                      // ended: ignored
		onNode(pod("mb-single", "loadgen-0", lg, []string{"loadgen", "istio-proxy"}, nil, corev1.PodRunning), "node1"),
		onNode(pod("mb-single", "loadgen-1", lg, []string{"loadgen"}, nil, corev1.PodRunning), "node4"), // a client alone on its node
		pod("mb-single", "unrelated", nil, []string{"x"}, nil, corev1.PodRunning),
		onNode(pod("istio-system", "ztunnel-1", map[string]string{"app": "ztunnel"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node1"),
		onNode(pod("istio-system", "ztunnel-3", map[string]string{"app": "ztunnel"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node3"), // no pod of the run there
		onNode(pod("istio-system", "ztunnel-4", map[string]string{"app": "ztunnel"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node4"), // load clients only
		onNode(pod("kube-system", "istio-cni-node-1", map[string]string{"k8s-app": "istio-cni-node"}, []string{"install-cni"}, nil, corev1.PodRunning), "node1"),
		pod("istio-system", "istiod-1", map[string]string{"app": "istiod", "istio.io/rev": "default"}, []string{"discovery"}, nil, corev1.PodRunning),
		pod("istio-system", "istiod-canary-1", map[string]string{"app": "istiod", "istio.io/rev": "canary"}, []string{"discovery"}, nil, corev1.PodRunning),
		onNode(pod("mb-single", "waypoint-1", wp("waypoint"), []string{"istio-proxy"}, nil, corev1.PodRunning), "node2"),
		onNode(pod("other-app", "waypoint-9", wp("waypoint"), []string{"istio-proxy"}, nil, corev1.PodRunning), "node2"), // another app's waypoint
	)
	const (
		appLine           = `app: {namespace="mb-single",pod=~"svc-0-a|svc-1-b",container!="",container!="POD",container!="istio-proxy"}`
		sidecarLine       = `sidecar: {namespace="mb-single",pod=~"svc-0-a|svc-1-b",container!="",container!="POD",container="istio-proxy"}`
		loadgenLine       = `loadgen: {namespace="mb-single",pod=~"loadgen-0|loadgen-1",container!="",container!="POD",container!="istio-proxy"}`
		clientSidecarLine = `loadgen-proxy: {namespace="mb-single",pod=~"loadgen-0",container!="",container!="POD",container="istio-proxy"}`
		clientZtunnelLine = `loadgen-proxy: {namespace="istio-system",pod=~"ztunnel-4",container!="",container!="POD"}`
		istiodLine        = `istiod: {namespace="istio-system",pod=~"istiod-1",container!="",container!="POD"}`
		sharedNote        = "ztunnel istio-system/ztunnel-1 on node node1 carries the load client pod(s) mb-single/loadgen-0 as well as the app's: its figure includes the clients' outbound proxying, which sidecar mode counts apart (loadgen-proxy)"
		clientSidecarNote = "load client pod(s) mb-single/loadgen-0 have an istio-proxy sidecar in an ambient mode: it is not counted"
	)
	for _, tc := range []struct {
		name         string
		mesh         MeshScope
		want         []string
		ztunnelNotes []string
	}{
		{"none: no Istio component is the app's", MeshScope{}, []string{appLine, sidecarLine, loadgenLine, clientSidecarLine}, nil},
		{"sidecar: istiod of the run's revision, no ztunnel", MeshScope{Istiod: true, IstiodRevision: "default"}, []string{appLine, sidecarLine, istiodLine, loadgenLine, clientSidecarLine}, nil},
		{"ambient: the node agents of the test nodes only", MeshScope{Istiod: true, IstiodRevision: "default", NodeAgents: true}, []string{appLine, sidecarLine,
			`ztunnel: {namespace="istio-system",pod=~"ztunnel-1",container!="",container!="POD"}`, istiodLine,
			`istio-cni: {namespace="kube-system",pod=~"istio-cni-node-1",container!="",container!="POD"}`, loadgenLine, clientZtunnelLine},
			[]string{sharedNote, clientSidecarNote}},
		{"waypoint: the run's waypoint by gateway-name; its node becomes a test node", MeshScope{Istiod: true, IstiodRevision: "canary", NodeAgents: true,
			Waypoints: []NamespacedName{{Namespace: "mb-single", Name: "waypoint"}}}, []string{appLine, sidecarLine,
			`ztunnel: {namespace="istio-system",pod=~"ztunnel-1",container!="",container!="POD"}`,
			`waypoint: {namespace="mb-single",pod=~"waypoint-1",container!="",container!="POD"}`,
			`istiod: {namespace="istio-system",pod=~"istiod-canary-1",container!="",container!="POD"}`,
			`istio-cni: {namespace="kube-system",pod=~"istio-cni-node-1",container!="",container!="POD"}`, loadgenLine, clientZtunnelLine},
			[]string{sharedNote, clientSidecarNote}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sets, err := PodSets(context.Background(), KubePods{Kube: kube}, Scope{
				AppNamespaces: []string{"mb-single"}, AppSelector: "meshbench.dev/app=fortio-chain", LoadgenSelector: "meshbench.dev/component=loadgen", Mesh: tc.mesh,
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sets {
				got = append(got, string(s.Component)+": "+s.Selector())
				if s.Component == results.ComponentZtunnel && !slices.Equal(s.Notes, tc.ztunnelNotes) {
					t.Errorf("ztunnel notes %q, want %q", s.Notes, tc.ztunnelNotes)
				}
				// The primary figures: the app, its proxies, the ztunnels of ambient modes, the waypoints.
				required := map[string]bool{string(results.ComponentApp): true, string(results.ComponentSidecar): true, string(results.ComponentZtunnel): true, string(results.ComponentWaypoint): true}
				if s.Required != required[string(s.Component)] {
					t.Errorf("%s: Required %v", s.Component, s.Required)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("pod sets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}

	// A waypoint Gateway of the run without pods fails loudly instead of measuring waypoint mode as ambient.
	_, err := PodSets(context.Background(), KubePods{Kube: kube}, Scope{AppNamespaces: []string{"mb-single"}, AppSelector: "meshbench.dev/app=fortio-chain",
		Mesh: MeshScope{Istiod: true, NodeAgents: true, Waypoints: []NamespacedName{{Namespace: "mb-single", Name: "missing"}}}})
	if err == nil || !strings.Contains(err.Error(), "waypoint mb-single/missing has no running pod") {
		t.Errorf("missing waypoint: %v", err)
	}
	set := podset.PodSet{Component: results.ComponentWaypoint, Required: true, Pods: map[string][]string{"mb-single": {"waypoint-1"}}}
	if err := CheckRequired([]podset.PodSet{set}, []results.Sample{{Component: results.ComponentWaypoint, Metric: results.MetricCPU, Stat: "avg"}}); err == nil ||
		!strings.Contains(err.Error(), "no figure for waypoint memory average (1 pods)") {
		t.Errorf("CheckRequired: %v", err)
	}
	if err := CheckRequired([]podset.PodSet{set}, []results.Sample{{Component: results.ComponentApp, Metric: results.MetricCPU, Stat: "avg"}}); err == nil ||
		!strings.Contains(err.Error(), "waypoint cpu (1 pods), waypoint memory average (1 pods)") {
		t.Errorf("CheckRequired without any waypoint sample: %v", err)
	}
	// An idle container's sparse cAdvisor samples may give min/max but no average: measured, with the collector's warning.
	if err := CheckRequired([]podset.PodSet{set}, []results.Sample{{Component: results.ComponentWaypoint, Metric: results.MetricCPU, Stat: "max"},
		{Component: results.ComponentWaypoint, Metric: results.MetricMemory, Stat: "avg"}}); err != nil {
		t.Errorf("CheckRequired: %v", err)
	}
}

func TestParseScrapeConfigAndCadvisorJob(t *testing.T) {
	t.Parallel()
	cfg := `global:
  scrape_interval: 15s
  evaluation_interval: 15s
scrape_configs:
- job_name: prometheus
  static_configs: [{targets: [localhost:9090]}]
- job_name: kubelet
  scrape_interval: 30s
  metrics_path: /metrics/cadvisor
- job_name: kubernetes-nodes-cadvisor
  scrape_interval: 1m
- job_name: resource
  scrape_interval: 5s
  metrics_path: /metrics/resource
`
	jobs, err := parseScrapeConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 || jobs[0].Interval != 15*time.Second || jobs[1].Interval != 30*time.Second || jobs[2].Interval != time.Minute {
		t.Fatalf("jobs %+v", jobs)
	}
	for _, tc := range []struct {
		withMetric []string
		want       string
		ok         bool
	}{
		{[]string{"resource"}, "resource", true},                 // the data says which job
		{nil, "kubelet", true},                                   // no data: the first job named or pathed cadvisor
		{[]string{"kubelet", "resource"}, "kubelet", true},       // cadvisor and resource both export it: cadvisor
		{[]string{"other"}, "kubelet", true},                     // unknown job label: fall back to names
		{[]string{"prometheus", "resource"}, "prometheus", true}, // odd, but the data wins
		{[]string{"x"}, "", false},                               // handled below with no cadvisor job
	} {
		js := jobs
		if !tc.ok {
			js = jobs[:1]
		}
		got, ok := CadvisorJob(js, tc.withMetric)
		if ok != tc.ok || got.Name != tc.want {
			t.Errorf("CadvisorJob(%v) = %q %v, want %q %v", tc.withMetric, got.Name, ok, tc.want, tc.ok)
		}
	}
	if _, err := parseScrapeConfig("global: {scrape_interval: fast}"); err == nil {
		t.Error("a bad duration must be an error")
	}
}

func TestScalarAndQueryWindow(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		v      model.Value
		want   float64
		ok     bool
		errors bool
	}{
		"nil":     {nil, 0, false, false},
		"empty":   {model.Vector{}, 0, false, false},
		"one":     {model.Vector{{Value: 2.5}}, 2.5, true, false},
		"two":     {model.Vector{{Value: 1}, {Value: 2}}, 0, false, true},
		"scalar":  {&model.Scalar{Value: 7}, 7, true, false},
		"nan":     {model.Vector{{Value: model.SampleValue(nanValue())}}, 0, false, false},
		"matrix":  {model.Matrix{}, 0, false, true},
		"string?": {&model.String{Value: "x"}, 0, false, true},
	} {
		got, ok, err := Scalar(tc.v)
		if got != tc.want || ok != tc.ok || (err != nil) != tc.errors {
			t.Errorf("%s: Scalar = %v %v %v", name, got, ok, err)
		}
	}
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// A 20 s window starting off the second stays 20 s (it was cut to 19 s), cut to the milliseconds inside.
	w, err := QueryWindow(results.Window{Kind: "load", Start: base.Add(300*time.Millisecond + 400), End: base.Add(20*time.Second + 300*time.Millisecond + 900)})
	if err != nil || !w.Start.Equal(base.Add(301*time.Millisecond)) || !w.End.Equal(base.Add(20*time.Second+300*time.Millisecond)) || w.Kind != "load" {
		t.Errorf("QueryWindow = %+v, %v", w, err)
	}
	w, err = QueryWindow(results.Window{Start: base, End: base.Add(10 * time.Second)})
	if err != nil || !w.Start.Equal(base) || !w.End.Equal(base.Add(10*time.Second)) {
		t.Errorf("whole-second window changed: %+v %v", w, err)
	}
	if _, err := QueryWindow(results.Window{Start: base.Add(100 * time.Millisecond), End: base.Add(900 * time.Millisecond)}); err == nil {
		t.Error("a sub-second window must be refused")
	}
}

func nanValue() float64 {
	var zero float64
	return zero / zero
}

func TestTokenFileIsReadOnEveryRequest(t *testing.T) {
	t.Parallel()
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api, err := NewAPI(ClientConfig{URL: srv.URL, BearerTokenFile: tok})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, _, err := api.Query(ctx, "up", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.Query(ctx, "up", time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "Bearer first" || seen[1] != "Bearer rotated" {
		t.Errorf("Authorization headers %q: want the token re-read per request", seen)
	}
}

func TestServiceProxyAddress(t *testing.T) {
	t.Parallel()
	c := ClientConfig{ServiceNamespace: "monitoring", ServiceName: "prometheus-k8s", ServicePort: "web", ServiceScheme: "https", Rest: &rest.Config{Host: "https://10.0.0.1:6443"}}
	got, err := c.Address()
	want := "https://10.0.0.1:6443/api/v1/namespaces/monitoring/services/https:prometheus-k8s:web/proxy"
	if err != nil || got != want {
		t.Errorf("Address = %q, %v; want %q", got, err, want)
	}
	if _, err := (ClientConfig{ServiceName: "p"}).Address(); err == nil {
		t.Error("a Service without a Kubernetes config must be refused")
	}
}

// flakyAPI fails the first n queries with err.
type flakyAPI struct {
	n     int32
	err   error
	calls atomic.Int32
}

func (f *flakyAPI) Query(_ context.Context, q string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if f.calls.Add(1) <= f.n {
		return nil, nil, nil, f.err
	}
	return answer(q, ts, 3), promv1.Warnings{"some warning"}, nil, nil
}

// fakeTarget is the scrape target of the fake APIs' series.
var fakeTarget = model.Metric{"job": "kubernetes-cadvisor", "instance": "node-1:10250"}

// answer is what a fake Prometheus returns for q evaluated at ts: the up series of fakeTarget (every scrape a
// success) for an up query, else rampMatrix.
func answer(q string, ts time.Time, perSecond float64) model.Matrix {
	if strings.HasPrefix(q, "up{") {
		return upMatrix(ts, fakeTarget, nil)
	}
	return rampMatrix(ts, perSecond)
}

// upMatrix is target's up series over the hour before ts, every 5 s, 0 (a failed scrape) at the times failed says.
func upMatrix(ts time.Time, target model.Metric, failed func(time.Time) bool) model.Matrix {
	m := model.Metric{"__name__": "up"}
	maps.Copy(m, target)
	ss := &model.SampleStream{Metric: m}
	for t := ts.Add(-time.Hour); !t.After(ts); t = t.Add(5 * time.Second) {
		v := model.SampleValue(1)
		if failed != nil && failed(t) {
			v = 0
		}
		ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: v})
	}
	return model.Matrix{ss}
}

// rampMatrix is what a range selector evaluated at ts returns of one series of fakeTarget growing by perSecond
// every second, sampled every 5 s over the hour before ts.
func rampMatrix(ts time.Time, perSecond float64) model.Matrix {
	m := model.Metric{"namespace": "ns", "pod": "p"}
	maps.Copy(m, fakeTarget)
	ss := &model.SampleStream{Metric: m}
	for t := ts.Add(-time.Hour); !t.After(ts); t = t.Add(5 * time.Second) {
		ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(perSecond * t.Sub(ts.Add(-time.Hour)).Seconds())})
	}
	return model.Matrix{ss}
}

func (f *flakyAPI) Config(context.Context) (promv1.ConfigResult, error) {
	return promv1.ConfigResult{}, nil
}

func TestQueryRetries(t *testing.T) {
	t.Parallel()
	r := Retry{Attempts: 3, Backoff: time.Millisecond, Timeout: time.Second}
	server := &flakyAPI{n: 2, err: &promv1.Error{Type: promv1.ErrServer, Msg: "503"}}
	v, w, err := query(context.Background(), server, r, "q", time.Now())
	if err != nil || server.calls.Load() != 3 || len(w) != 1 {
		t.Errorf("server errors: %v %v %v after %d calls; want success on the third", v, w, err, server.calls.Load())
	}
	bad := &flakyAPI{n: 5, err: &promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"}}
	if _, _, err := query(context.Background(), bad, r, "q(", time.Now()); err == nil || bad.calls.Load() != 1 {
		t.Errorf("bad query retried %d times (err %v); want one attempt", bad.calls.Load(), err)
	}
	down := &flakyAPI{n: 5, err: errors.New("connection refused")}
	if _, _, err := query(context.Background(), down, r, "q", time.Now()); err == nil || down.calls.Load() != 3 {
		t.Errorf("network errors: %d calls, err %v; want 3 attempts then the error", down.calls.Load(), err)
	}
}

func TestCollectKeepsWarnings(t *testing.T) {
	t.Parallel()
	api := &flakyAPI{}
	now := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	c := &Collector{API: api, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second}, Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(now)}
	w := results.Window{Kind: results.WindowIdle, Start: now.Add(-2 * time.Minute), End: now.Add(-time.Minute)}
	got, err := c.Collect(context.Background(), w, []podset.PodSet{{Component: "app", Pods: map[string][]string{"ns": {"p"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != 3*len(Catalog()) || len(got.Warnings) != len(Catalog()) {
		t.Fatalf("%d samples %d warnings: want min, max, avg and one warning per catalog entry", len(got.Samples), len(got.Warnings))
	}
	if got.IngestWait != 0 {
		t.Errorf("a window that ended a minute ago waited %s for ingestion", got.IngestWait)
	}
	for _, smp := range got.Samples[:3] { // a counter growing by 3 core-seconds per second: 3000 millicores throughout
		if math.Abs(smp.Value-3000) > 1e-6 || smp.Unit != results.UnitMillicores || smp.Window.Kind != results.WindowIdle {
			t.Errorf("cpu sample %+v, want 3000 millicores", smp)
		}
	}
}

func TestMedianSpacing(t *testing.T) {
	t.Parallel()
	mk := func(start int64, gaps ...int64) *model.SampleStream {
		ss := &model.SampleStream{Values: []model.SamplePair{{Timestamp: model.Time(start)}}}
		for _, g := range gaps {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: ss.Values[len(ss.Values)-1].Timestamp + model.Time(g)})
		}
		return ss
	}
	// cAdvisor housekeeping jitter (ms): the median, not the mean, and series with < 3 samples ignored.
	m := model.Matrix{mk(0, 16530, 11620, 14400, 13880, 17590, 16650), mk(500, 14850, 14850), mk(0, 999999)}
	if d, ok := medianSpacing(m); !ok || d != 14850*time.Millisecond {
		t.Errorf("medianSpacing = %s %v, want 14.85s", d, ok)
	}
	if _, ok := medianSpacing(model.Matrix{mk(0, 5000)}); ok {
		t.Error("two samples are not enough")
	}
}

// failOneAPI answers every query with one sample, except those containing fail, which fail with a bad-data error
// (not retried).
type failOneAPI struct{ fail string }

func (f failOneAPI) Query(_ context.Context, q string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if strings.Contains(q, f.fail) {
		return nil, nil, nil, &promv1.Error{Type: promv1.ErrBadData, Msg: "exceeded maximum resolution"}
	}
	return answer(q, ts, 2), nil, nil, nil
}

func (failOneAPI) Config(context.Context) (promv1.ConfigResult, error) {
	return promv1.ConfigResult{}, nil
}

// One failed query among many fails the collection (the runner then fails the case): before, it became a warning
// and the case passed as ok with the figure missing. The samples of the other queries are still returned.
func TestCollectFailsOnAPartialFailure(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	c := &Collector{API: failOneAPI{fail: "container_memory_working_set_bytes"}, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second},
		Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(now)}
	w := results.Window{Kind: results.WindowLoad, Start: now.Add(-2 * time.Minute), End: now.Add(-time.Minute)}
	// Pod p is the one rampMatrix answers with (the collector drops series of pods outside the set).
	sets := []podset.PodSet{
		{Component: results.ComponentApp, Pods: map[string][]string{"ns": {"b", "p"}}, Container: matchNotProxy},
		{Component: results.ComponentSidecar, Pods: map[string][]string{"ns": {"b", "p"}}, Container: matchProxy},
	}
	got, err := c.Collect(context.Background(), w, sets)
	var qe *QueryErrors
	if !errors.As(err, &qe) {
		t.Fatalf("Collect error %v (%T): want *QueryErrors", err, err)
	}
	want := 2 * len(Catalog())
	if qe.Queries != want+1 /* the up series of the one job */ || len(qe.Failed) != 2 || qe.Kind != results.WindowLoad {
		t.Errorf("QueryErrors %+v: want 2 of %d failed in the load window", qe, want+1)
	}
	want *= 3 // figures
	var pe *promv1.Error
	if !errors.As(err, &pe) || pe.Type != promv1.ErrBadData {
		t.Errorf("the Prometheus error must stay reachable: %v", err)
	}
	for _, s := range []string{"2 of 5 prometheus queries for the load window failed", "app memory (2 pods)", "sidecar memory (2 pods)"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if len(got.Samples) != want-6 {
		t.Errorf("%d samples, want the %d of the queries that worked", len(got.Samples), want-6)
	}
	for _, s := range got.Samples {
		if s.Metric == results.MetricMemory {
			t.Errorf("sample of a failed query: %+v", s)
		}
	}
}

func TestQueryErrorsMessageIsBounded(t *testing.T) {
	t.Parallel()
	e := &QueryErrors{Kind: "idle", Queries: 12}
	for i := range 12 {
		e.Failed = append(e.Failed, fmt.Errorf("component%d cpu-min: connection refused", i))
	}
	msg := e.Error()
	if !strings.HasPrefix(msg, "12 of 12 prometheus queries for the idle window failed") || !strings.Contains(msg, "component2 cpu-min") ||
		strings.Contains(msg, "component3") || !strings.HasSuffix(msg, "and 9 more") {
		t.Errorf("message %q: want the count, three failures and how many more", msg)
	}
}

// A running pod without a sample in the window (the cross-node server whose memory was missing from a 0.363 MiB
// figure) is a warning naming it, per signal; the pod with samples is still measured.
func TestCollectWarnsOfARunningPodWithoutSamples(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	c := &Collector{API: &flakyAPI{}, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second}, Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(now)}
	w := results.Window{Kind: results.WindowLoad, Start: now.Add(-2 * time.Minute), End: now.Add(-time.Minute)}
	got, err := c.Collect(context.Background(), w, []podset.PodSet{{Component: "app", Pods: map[string][]string{"ns": {"p", "server"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != 6 {
		t.Errorf("%d samples, want the 6 figures of pod p", len(got.Samples))
	}
	for _, sig := range []string{"cpu", "memory"} {
		want := "app " + sig + ": pod(s) ns/server running but without a " + sig + " sample in the load window"
		if !slices.ContainsFunc(got.Warnings, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("warnings %q lack %q", got.Warnings, want)
		}
	}
}

// TestPodSetsWorkloads: each app pod belongs to the first workload selecting it (app "existing": the workload's own
// spec.selector; catalog apps: the app selector plus meshbench.dev/component), in the app set and, with a proxy, in
// the sidecar set; pods of no workload are in the totals only, and the load clients' proxies in none of the app's
// figures (component loadgen-proxy).
func TestPodSetsWorkloads(t *testing.T) {
	t.Parallel()
	comp := func(c string) map[string]string {
		return map[string]string{"meshbench.dev/app": "bank", "meshbench.dev/component": c}
	}
	kube := fake.NewClientset(
		pod("bank", "frontend-1", comp("frontend"), []string{"app", "istio-proxy"}, nil, corev1.PodRunning),
		pod("bank", "frontend-2", comp("frontend"), []string{"app", "istio-proxy"}, nil, corev1.PodRunning),
		pod("bank", "db-0", comp("db"), []string{"postgres"}, nil, corev1.PodRunning), // no proxy (excluded from injection)
		pod("bank", "stray", comp("stray"), []string{"x", "istio-proxy"}, nil, corev1.PodRunning),
		pod("bank", "loadgen-0", map[string]string{"meshbench.dev/app": "bank", "meshbench.dev/component": "loadgen"}, []string{"loadgen", "istio-proxy"}, nil, corev1.PodRunning),
		pod("other", "frontend-9", comp("frontend"), []string{"app"}, nil, corev1.PodRunning), // same labels, namespace not the workload's
	)
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	wls := []Workload{
		{Key: "Deployment/bank/frontend", Namespace: "bank", Selector: sel("meshbench.dev/app=bank,meshbench.dev/component=frontend")},
		{Key: "StatefulSet/bank/db", Namespace: "bank", Selector: sel("meshbench.dev/component=db")},
		// overlaps frontend: its pods stay in the first
		{Key: "Deployment/bank/frontend-canary", Namespace: "bank", Selector: sel("meshbench.dev/component=frontend")},
	}
	sets, err := PodSets(context.Background(), KubePods{Kube: kube}, Scope{AppNamespaces: []string{"bank", "other"}, AppSelector: "meshbench.dev/app=bank",
		LoadgenSelector: "meshbench.dev/component=loadgen", Workloads: wls})
	if err != nil {
		t.Fatal(err)
	}
	byComp := map[string]podset.PodSet{}
	for _, s := range sets {
		byComp[string(s.Component)] = s
	}
	wantApp := map[string]string{"bank/frontend-1": "Deployment/bank/frontend", "bank/frontend-2": "Deployment/bank/frontend", "bank/db-0": "StatefulSet/bank/db"}
	wantSidecar := map[string]string{"bank/frontend-1": "Deployment/bank/frontend", "bank/frontend-2": "Deployment/bank/frontend"}
	if got := byComp[string(results.ComponentApp)].Workloads; !maps.Equal(got, wantApp) {
		t.Errorf("app workloads %v, want %v", got, wantApp)
	}
	if got := byComp[string(results.ComponentSidecar)].Workloads; !maps.Equal(got, wantSidecar) {
		t.Errorf("sidecar workloads %v, want %v", got, wantSidecar)
	}
	// The totals are unchanged: every app pod; the load client's proxy is not the app's.
	if got := byComp[string(results.ComponentSidecar)].Selector(); !strings.Contains(got, `pod=~"frontend-1|frontend-2|stray"`) {
		t.Errorf("sidecar selectors %q", got)
	}
	if got := byComp[string(results.ComponentLoadgenProxy)].Selector(); !strings.Contains(got, `pod=~"loadgen-0"`) {
		t.Errorf("loadgen-proxy selectors %q", got)
	}
	if byComp[string(results.ComponentLoadgen)].Workloads != nil || byComp[string(results.ComponentLoadgenProxy)].Workloads != nil {
		t.Error("the load clients got workloads")
	}
	if n := byComp[string(results.ComponentApp)].Notes; !slices.ContainsFunc(n, func(s string) bool {
		return strings.Contains(s, "pod bank/frontend-1 is selected by workload Deployment/bank/frontend and by Deployment/bank/frontend-canary")
	}) {
		t.Errorf("no overlap note in %q", n)
	}
	// App existing: only the listed workloads' pods are the app (stray, selected by none, is another team's).
	sets, err = PodSets(context.Background(), KubePods{Kube: kube}, Scope{AppNamespaces: []string{"bank", "other"}, AppSelector: "meshbench.dev/app=bank",
		LoadgenSelector: "meshbench.dev/component=loadgen", Workloads: wls, OnlyWorkloadPods: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		switch s.Component {
		case results.ComponentApp:
			if got := s.Selector(); !strings.Contains(got, `pod=~"db-0|frontend-1|frontend-2"`) {
				t.Errorf("app selectors with OnlyWorkloadPods %q, want the listed workloads' pods only", got)
			}
		case results.ComponentSidecar:
			if got := s.Selector(); !strings.Contains(got, `pod=~"frontend-1|frontend-2"`) {
				t.Errorf("sidecar selectors with OnlyWorkloadPods %q, want no stray proxy", got)
			}
		}
	}
	// Without workloads in the scope: no per-workload map at all.
	sets, err = PodSets(context.Background(), KubePods{Kube: kube}, Scope{AppNamespaces: []string{"bank"}, AppSelector: "meshbench.dev/app=bank"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		if s.Workloads != nil {
			t.Errorf("%s: workloads %v without any in the scope", s.Component, s.Workloads)
		}
	}
}

func TestGroupByWorkload(t *testing.T) {
	t.Parallel()
	ss := []Series{{Namespace: "a", Pod: "p1"}, {Namespace: "a", Pod: "p2"}, {Namespace: "b", Pod: "p1"}, {Namespace: "a", Pod: "p3"}}
	got := groupByWorkload(ss, map[string]string{"a/p1": "W1", "a/p2": "W1", "b/p1": "W2"})
	if len(got) != 2 || len(got["W1"]) != 2 || got["W1"][1].Pod != "p2" || len(got["W2"]) != 1 || got["W2"][0].Namespace != "b" {
		t.Errorf("groups %+v", got)
	}
}

// countingLister counts PodSets' lists per namespace and selector.
type countingLister struct {
	PodLister
	lists map[string]int
}

func (c *countingLister) List(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	c.lists[ns+" "+selector]++
	return c.PodLister.List(ctx, ns, selector)
}

// TestPodSetsListsEachNamespaceOnce: the app's and the load clients' pods of a namespace come from one list (two
// lists per namespace and window were 240 per case at 60 namespaces, and client-go's rate limit held the load
// window's collection back by 1.7 s at 1,000 pods); sorted locally, they are what the two selectors select.
func TestPodSetsListsEachNamespaceOnce(t *testing.T) {
	t.Parallel()
	app := map[string]string{"meshbench.dev/app": "fortio-chain"}
	lg := map[string]string{"meshbench.dev/component": "loadgen"}
	kube := fake.NewClientset(
		onNode(pod("ns-a", "svc-0", app, []string{"app"}, nil, corev1.PodRunning), "node1"),
		onNode(pod("ns-a", "loadgen-0", lg, []string{"loadgen"}, nil, corev1.PodRunning), "node1"),
		onNode(pod("ns-a", "unrelated", map[string]string{"x": "y"}, []string{"x"}, nil, corev1.PodRunning), "node1"),
		onNode(pod("ns-b", "svc-1", app, []string{"app", "istio-proxy"}, nil, corev1.PodRunning), "node2"),
	)
	l := &countingLister{PodLister: KubePods{Kube: kube}, lists: map[string]int{}}
	sets, err := PodSets(context.Background(), l, Scope{AppNamespaces: []string{"ns-a", "ns-b"},
		AppSelector: "meshbench.dev/app=fortio-chain", LoadgenSelector: "meshbench.dev/component=loadgen"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"ns-a ": 1, "ns-b ": 1}; !maps.Equal(l.lists, want) {
		t.Errorf("lists %v, want one unfiltered list per app namespace %v", l.lists, want)
	}
	var got []string
	for _, s := range sets {
		got = append(got, string(s.Component)+": "+s.Selector())
	}
	want := []string{
		`app: {namespace=~"ns-a|ns-b",pod=~"svc-0|svc-1",container!="",container!="POD",container!="istio-proxy"}`,
		`sidecar: {namespace="ns-b",pod=~"svc-1",container!="",container!="POD",container="istio-proxy"}`,
		`loadgen: {namespace="ns-a",pod=~"loadgen-0",container!="",container!="POD",container!="istio-proxy"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pod sets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without load clients the app selector goes to the API server as before.
	l.lists = map[string]int{}
	if _, err := PodSets(context.Background(), l, Scope{AppNamespaces: []string{"ns-a"}, AppSelector: "meshbench.dev/app=fortio-chain"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"ns-a meshbench.dev/app=fortio-chain": 1}; !maps.Equal(l.lists, want) {
		t.Errorf("lists %v, want %v", l.lists, want)
	}
	if _, err := PodSets(context.Background(), l, Scope{AppNamespaces: []string{"ns-a"}, AppSelector: "a=b", LoadgenSelector: "bad selector!"}); err == nil ||
		!strings.Contains(err.Error(), `load client selector "bad selector!"`) {
		t.Errorf("a bad selector: %v", err)
	}
}
