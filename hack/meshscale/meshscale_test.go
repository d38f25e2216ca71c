package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/hack/kwokfleet"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

func fakePod(ns, name, node string, sidecar bool) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{ScaleLabel: "r"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "pause:dev"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if sidecar {
		p.Spec.InitContainers = []corev1.Container{{Name: "istio-validation", Image: "proxyv2"}, {Name: "istio-proxy", Image: "proxyv2", RestartPolicy: &always}}
	}
	return p
}

// scrape reads the exporter over HTTP and parses the text format as Prometheus does.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics/cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b)
	}
	return fams
}

func series(fams map[string]*dto.MetricFamily, name, pod, container string) (float64, map[string]string, bool) {
	for _, m := range fams[name].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["pod"] == pod && l["container"] == container {
			if m.Counter != nil {
				return m.Counter.GetValue(), l, true
			}
			return m.Gauge.GetValue(), l, true
		}
	}
	return 0, nil, false
}

// The stand-in cAdvisor, fed by a real informer (fake clientset), serves over HTTP the series collectors/prom
// selects: per container of pods on fake nodes only, istio-proxy (a native sidecar) included, the finished init
// container not; kubelet's labels; a CPU counter growing at the set rate; the pod-level series with container="".
func TestExporter(t *testing.T) {
	now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	e := NewExporter(Usage{Millicores: 5, MiB: 20}, Usage{Millicores: 3, MiB: 40})
	e.Now = func() time.Time { return now }
	var seen int
	e.Also = func(*corev1.Pod, bool) { seen++ }
	kc := fake.NewClientset(fakePod("mb-scale-00", "a", "mb-kwok-000", true), fakePod("mb-scale-00", "real", "node1", false),
		fakePod("mb-scale-01", "b", "mb-kwok-001", false))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Watch(ctx, kc, ScaleLabel); err != nil {
		t.Fatal(err)
	}
	addr, err := e.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(100 * time.Second)
	fams := scrape(t, "http://"+addr)
	cpu, l, ok := series(fams, "container_cpu_usage_seconds_total", "a", "istio-proxy")
	if !ok || cpu != 0.3 || l["namespace"] != "mb-scale-00" || l["image"] != "proxyv2" || l["cpu"] != "total" ||
		!strings.HasPrefix(l["id"], "/kubepods/burstable/poduid-a/") || len(l["name"]) != 64 || !strings.HasSuffix(l["id"], l["name"]) {
		t.Errorf("istio-proxy cpu %v %v %v, want 0.3 core-seconds after 100 s at 3m with kubelet's labels", cpu, l, ok)
	}
	if cpu, _, _ := series(fams, "container_cpu_usage_seconds_total", "a", "app"); cpu != 0.5 {
		t.Errorf("app cpu %v, want 0.5", cpu)
	}
	if mem, _, _ := series(fams, "container_memory_working_set_bytes", "a", "istio-proxy"); mem != 40<<20 {
		t.Errorf("istio-proxy memory %v", mem)
	}
	if cpu, l, _ := series(fams, "container_cpu_usage_seconds_total", "a", ""); cpu != 0.8 || l["image"] != "" || l["id"] != "/kubepods/burstable/poduid-a" {
		t.Errorf("pod-level cpu %v %v, want the sum 0.8 without image", cpu, l)
	}
	if _, _, ok := series(fams, "container_cpu_usage_seconds_total", "a", "istio-validation"); ok {
		t.Error("a finished init container has a series")
	}
	if _, _, ok := series(fams, "container_cpu_usage_seconds_total", "real", "app"); ok {
		t.Error("a pod on a real node has a series (its kubelet's cAdvisor reports it)")
	}
	now = now.Add(100 * time.Second)
	if cpu, _, _ := series(scrape(t, "http://"+addr), "container_cpu_usage_seconds_total", "b", "app"); cpu != 1.0 {
		t.Errorf("counter after 200 s: %v, want 1.0 (5m)", cpu)
	}
	// A deleted pod's series go.
	if err := kc.CoreV1().Pods("mb-scale-01").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, _, ok := series(scrape(t, "http://"+addr), "container_cpu_usage_seconds_total", "b", "app"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("deleted pod still exported")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if seen < 3 {
		t.Errorf("Also saw %d events", seen)
	}
}

func TestLayout(t *testing.T) {
	ws := Layout(1000, 60, 10)
	perNS := map[string]int{}
	total := 0
	for _, w := range ws {
		perNS[w.Namespace] += w.Replicas
		total += w.Replicas
	}
	if len(ws) != 100 || total != 1000 || len(perNS) != 60 || perNS["mb-scale-00"] != 20 || perNS["mb-scale-59"] != 10 {
		t.Errorf("%d workloads, %d pods, %d namespaces, %v", len(ws), total, len(perNS), perNS)
	}
	ws = Layout(25, 60, 10)
	if len(ws) != 3 || ws[2].Replicas != 5 {
		t.Errorf("25 pods: %+v", ws)
	}
}

// The scenario the harness hands meshbench passes meshbench's own validation.
func TestScenarioValid(t *testing.T) {
	o := options{pods: 1000, namespaces: 60, modes: "none,sidecar", qps: 20, window: 20 * time.Second, targetImage: "172.30.0.1:5000/meshbench/meshbench-agent:abc"}
	s, err := scenario.Parse([]byte(ScenarioYAML("r1", o, "http://127.0.0.1:9999")))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Spec.Workload.Existing.Namespaces) != 60 || len(s.Spec.Modes) != 2 || s.Spec.Load.Targets[0].Namespace != "mb-scale-00" ||
		s.Spec.Images.Agent != o.targetImage {
		t.Errorf("scenario %+v", s.Spec)
	}
}

func TestCaseAndSwitchFigures(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	c := results.CaseResult{CaseID: "single.sidecar.q20.r1", Mode: "sidecar", Status: "ok", Start: t0, End: t0.Add(120 * time.Second),
		Timings:     map[string]string{"ensure": "1s", "mode-switch": "2s", "wait-ready": "30s", "verify": "5s", "collect-idle": "1.5s", "collect-load": "2.5s", "collect-wait-load": "2s"},
		Windows:     []results.Window{{Kind: "idle", Start: t0.Add(50 * time.Second), End: t0.Add(70 * time.Second)}, {Kind: "load", Start: t0.Add(80 * time.Second), End: t0.Add(100 * time.Second)}},
		APIRequests: &results.APIRequests{Total: 900, ByVerbResource: map[string]int64{"list pods": 600, "get namespaces": 300}}}
	queries := []time.Time{t0.Add(-time.Second), t0.Add(75 * time.Second), t0.Add(101 * time.Second), t0.Add(102 * time.Second), t0.Add(121 * time.Second)}
	f := CaseFiguresOf(c, queries)
	if f.APIRequests != 900 || f.Top != "list pods" || f.TopCount != 600 || f.PromQueries != 3 || f.QueriesPerWindow != 1.5 ||
		f.CollectSeconds["idle"] != 1.5 || f.CollectSeconds["load"] != 2.5 || f.CaseSeconds != 120 || f.WindowSeconds != 40 ||
		f.OverheadSeconds != 80 || f.OverheadPct10m < 13.33 || f.OverheadPct10m > 13.34 {
		t.Errorf("case figures %+v", f)
	}
	// tool: ensure 1 + switch 2 + wait-ready 30 + verify 5 + collect 1.5 + 2.5 = 42 s (7 % of 10 min); the
	// settle and windows' lead-ins are not meshbench's steps.
	if f.ToolSeconds != 42 || f.ToolPct10m != 7 || f.ToolBeyondRolloutSeconds != 42 || f.CollectWaitSeconds["load"] != 2 || len(f.CollectSeconds) != 2 {
		t.Errorf("tool figures %+v", f)
	}
	pods := []PodTimes{
		{Created: t0.Add(-time.Hour), Ready: t0.Add(-time.Hour)},               // before the switch: not the rollout's
		{Created: t0.Add(4 * time.Second), Ready: t0.Add(10 * time.Second)},    // first new pod
		{Created: t0.Add(20 * time.Second), Ready: t0.Add(33 * time.Second)},   // the last Ready
		{Created: t0.Add(200 * time.Second), Ready: t0.Add(201 * time.Second)}, // after verification
	}
	rolledOut := []time.Time{
		t0.Add(-time.Hour),        // the app's first rollout: not the switch's
		t0.Add(35 * time.Second),  // the last Deployment's status says rolled out
		t0.Add(34 * time.Second),  // an earlier one
		t0.Add(300 * time.Second), // after verification
	}
	s, ok := SwitchOf(c, pods, rolledOut)
	// switch: starts at 1 s (after ensure), verified at 1+2+30+5 = 38 s; rollout 4 s -> 33 s (pods) and -> 35 s
	// (Deployments); 5 s from the last pod Ready and 3 s from the last Deployment rolled out to verified.
	if !ok || s.SwitchSeconds != 37 || s.NewPods != 2 || s.RolloutSeconds != 29 || s.LastReadyToVerifiedSeconds != 5 ||
		s.RolledOutSeconds != 31 || s.LastRolledOutToVerifiedSeconds != 3 {
		t.Errorf("switch %+v %v", s, ok)
	}
	if b := f.BeyondRollout(s); b.ToolBeyondRolloutSeconds != 11 || b.ToolBeyondRolloutPct10m < 1.83 || b.ToolBeyondRolloutPct10m > 1.84 || b.ToolSeconds != 42 {
		t.Errorf("beyond the rollout %+v", b)
	}
	// The status reports the rollout 2 s after meshbench verified it from the pods (before the case's end): the
	// gap is -2 s, and only the 34 s of rollout meshbench waited through leave the tool's time.
	late := []time.Time{t0.Add(30 * time.Second), t0.Add(40 * time.Second), t0.Add(300 * time.Second)}
	if s, ok := SwitchOf(c, pods, late); !ok || s.RolledOutSeconds != 36 || s.LastRolledOutToVerifiedSeconds != -2 {
		t.Errorf("status after verified: switch %+v %v", s, ok)
	} else if b := f.BeyondRollout(s); b.ToolBeyondRolloutSeconds != 8 {
		t.Errorf("status after verified: beyond the rollout %v, want 42 - 34 = 8", b.ToolBeyondRolloutSeconds)
	}
	delete(c.Timings, "mode-switch")
	if _, ok := SwitchOf(c, pods, rolledOut); ok {
		t.Error("a case without a switch has switch figures")
	}
}

// The app's objects are the user's to meshbench (app existing): they must not carry managed-by=meshbench, which
// workloads.ExistingAppSelector leaves out; the fake pods tolerate and select the fleet's nodes, the real target
// does neither (it must run on a real node).
func TestObjectsAreTheUsers(t *testing.T) {
	f := Fleet(nil, "r1")
	objs := Objects(f, 25, 3, 10, "pause:dev", "agent:dev")
	if len(objs) != 3+3*2+2 {
		t.Fatalf("%d objects", len(objs))
	}
	sel, err := labels.Parse(workloads.ExistingAppSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if m.GetLabels()[ScaleLabel] != "r1" {
			t.Errorf("%s: no run label", m.GetName())
		}
		if d, ok := o.(*appsv1.Deployment); ok {
			if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("%s: pods not selected as the existing app's (%v)", d.Name, d.Spec.Template.Labels)
			}
			onFake := len(d.Spec.Template.Spec.Tolerations) == 1 && d.Spec.Template.Spec.NodeSelector[kwokfleet.FakeNodeLabel] == "true"
			if onFake != (d.Name != TargetName) {
				t.Errorf("%s: on fake nodes %v", d.Name, onFake)
			}
		}
	}
}
