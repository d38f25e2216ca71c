package orchestrate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// Issue 15 section 1: the Kubernetes API requests of one case (mode switch, wait for the app, per-pod proof, the pod
// sets of its two windows) must grow with namespaces and workloads, never with pods: no list or get per pod, no
// polling. These count them on the fake clientset (every call is an Action) at 10, 1,000 and 5,000 pods already in
// the case's mode, so Apply changes nothing and every wait is satisfied at its first check.

const scaleRun = "scale-1"

// scaleLayout is a benchmark layout: pods spread as evenly as they go over namespaces x workloads per namespace
// Deployments, on two nodes.
type scaleLayout struct {
	name                       string
	namespaces, workloadsPerNS int
	pods                       int
	nodes                      int
}

var scaleLayouts = []scaleLayout{
	{"1ns-10pods", 1, 2, 10, 2},
	{"60ns-1000pods", 60, 2, 1000, 2},
	{"60ns-5000pods", 60, 2, 5000, 2},
}

// scaleTarget is the layout's app as the runner sees it.
func scaleTarget(l scaleLayout) target.Target {
	t := target.Target{App: scenario.AppFortioChain, Topology: l.name, AppSelector: target.AppSelector(scenario.AppFortioChain, scaleRun)}
	workloads := l.namespaces * l.workloadsPerNS
	for i := range l.namespaces {
		ns := fmt.Sprintf("scale-%02d", i)
		t.Namespaces = append(t.Namespaces, ns)
		for j := range l.workloadsPerNS {
			k := i*l.workloadsPerNS + j
			replicas := l.pods / workloads
			if k < l.pods%workloads {
				replicas++
			}
			t.Workloads = append(t.Workloads, target.WorkloadRef{Kind: target.KindDeployment, Namespace: ns, Name: fmt.Sprintf("svc-%d", j), Replicas: int32(replicas)})
		}
	}
	t.EntryNamespace, t.EntryService = t.Namespaces[0], "svc-0"
	return t
}

// scalePod is a ready pod of component in ns that shows mode's data plane as mesh.Prove expects it: sidecar mode an
// injected istio-proxy (native sidecar) and the injector's status annotation, ambient modes istio-cni's redirection
// annotation (the same evidence mesh's own tests build their pods with).
func scalePod(mode scenario.Mode, ns, name, node string, labels map[string]string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
		},
	}
	switch mode {
	case scenario.ModeSidecar:
		p.Annotations[mesh.AnnotationSidecarStatus] = `{"containers":["istio-proxy"]}`
		p.Spec.InitContainers = []corev1.Container{{Name: mesh.ProxyContainer, RestartPolicy: &always}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: mesh.ProxyContainer, Ready: true}}
	case scenario.ModeAmbient, scenario.ModeWaypoint:
		p.Annotations[mesh.AnnotationRedirection] = mesh.RedirectionEnabled
	}
	return p
}

// scaleCluster is the layout's app, rolled out and in mode, with istiod and a ztunnel per node, in a fake clientset.
func scaleCluster(l scaleLayout, t target.Target, mode scenario.Mode) *fake.Clientset {
	var objs []runtime.Object
	for _, ns := range t.Namespaces {
		lbl := kube.RunLabels(scaleRun)
		for k, v := range mesh.NamespaceLabels(mode, ns, scenario.Waypoint{}, ns, "") {
			if v != nil {
				lbl[k] = *v
			}
		}
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbl}})
	}
	for i := range l.nodes {
		node := fmt.Sprintf("node-%d", i)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.0.%d", i+1)}}}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel-" + node, Labels: map[string]string{"app": "ztunnel"}},
				Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istiod-0", Labels: map[string]string{"app": "istiod"}},
		Spec: corev1.PodSpec{NodeName: "node-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	n := 0
	for _, w := range t.Workloads {
		lbl := kube.MergeLabels(target.AppLabels(t.App, scaleRun), map[string]string{target.ComponentLabel: w.Name})
		r := w.Replicas
		objs = append(objs, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: target.AppLabels(t.App, scaleRun), Generation: 1},
			Spec:       appsv1.DeploymentSpec{Replicas: &r},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}},
		})
		for k := range int(r) {
			objs = append(objs, scalePod(mode, w.Namespace, fmt.Sprintf("%s-%d", w.Name, k), fmt.Sprintf("node-%d", n%l.nodes), lbl))
			n++
		}
	}
	return fake.NewClientset(objs...)
}

// apiCounts counts a fake clientset's requests by "verb resource" (watches apart: kube.Wait opens them in goroutines
// that the first successful check may cancel before they start, so their number varies from run to run).
type apiCounts struct {
	mu      sync.Mutex
	byVerb  map[string]int
	watches int
}

func (c *apiCounts) reactor(a k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.GetVerb() == "watch" {
		c.watches++
	} else {
		c.byVerb[a.GetVerb()+" "+a.GetResource().Resource]++
	}
	return false, nil, nil
}

func (c *apiCounts) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.byVerb {
		n += v
	}
	return n
}

func (c *apiCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.byVerb)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.byVerb[k]))
	}
	return strings.Join(parts, " ")
}

// caseRequests runs the per-case Kubernetes path of runner.Run on a cluster already in mode: mesh.Switcher.Apply,
// the readiness wait (internal/target) and the mode verification through the runner's adapters (one informer cache
// for both, as Run wires them), and the runner collector's pod sets for the idle and the load window (prom.PodSets
// with the run's scope). It returns the requests by step.
func caseRequests(ctx context.Context, tb testing.TB, kc *fake.Clientset, t target.Target, mode scenario.Mode) map[string]*apiCounts {
	tb.Helper()
	steps := map[string]*apiCounts{}
	var cur *apiCounts
	kc.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) { return cur.reactor(a) })
	step := func(name string, fn func() error) {
		cur = &apiCounts{byVerb: map[string]int{}}
		steps[name] = cur
		if err := fn(); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
	}
	clients := &kube.Clients{Kube: kc}
	sw := &mesh.Switcher{Clients: clients, RunID: scaleRun}
	// The runner's adapters as orchestrate.Run wires them: the wait's informer cache goes on to the verification.
	cache := &appCache{kc: kc}
	wa := &workloadsAdapter{d: &workloads.Deployer{Clients: clients, RunID: scaleRun}, timeout: time.Minute, cache: cache}
	ma := &meshAdapter{sw: sw, timeout: time.Minute, cache: cache}
	rt := t
	step("apply", func() error {
		tr, err := sw.Apply(ctx, t, mode, scenario.Waypoint{})
		if err == nil && (len(tr.Restarted) > 0 || len(tr.Steps) > 0) {
			err = fmt.Errorf("the cluster is in mode %s already, yet Apply did %+v", mode, tr)
		}
		return err
	})
	step("wait-ready", func() error { return wa.WaitReady(ctx, rt) })
	step("verify", func() error {
		facts, err := ma.Verify(ctx, rt, mode)
		if got := facts["verified-pods"]; err == nil && got != fmt.Sprint(t.ExpectedPods()) {
			err = fmt.Errorf("verified %s pods, want %d", got, t.ExpectedPods())
		}
		return err
	})
	cache.close()
	var sets []podset.PodSet
	col := runCollector{&Collector{pods: prom.KubePods{Kube: kc}, collect: func(_ context.Context, w results.Window, s []podset.PodSet) (podset.Collected, error) {
		sets = s
		return measured(w, s), nil
	}}}
	step("pod-sets", func() error {
		for _, kind := range []string{results.WindowIdle, results.WindowLoad} {
			w := results.Window{Kind: kind, Start: time.Unix(1000, 0), End: time.Unix(1060, 0)}
			if _, err := col.Collect(ctx, t, scenario.Case{Mode: mode}, w); err != nil {
				return err
			}
		}
		pods := 0
		for _, s := range sets {
			if s.Component == results.ComponentApp {
				pods = s.PodCount()
			}
		}
		if pods != t.ExpectedPods() {
			return fmt.Errorf("app pod set holds %d pods, want %d", pods, t.ExpectedPods())
		}
		return nil
	})
	return steps
}

func sumRequests(steps map[string]*apiCounts) (total, watches int) {
	for _, c := range steps {
		total += c.total()
		watches += c.watches
	}
	return total, watches
}

// TestCaseAPIRequestsDoNotGrowWithPods: 5,000 pods cost exactly the requests of 1,000 pods in the same 60 namespaces
// and 120 workloads, step by step and verb by verb, in sidecar and ambient mode; and the requests stay within what
// the namespaces and workloads explain.
func TestCaseAPIRequestsDoNotGrowWithPods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []scenario.Mode{scenario.ModeSidecar, scenario.ModeAmbient} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			counts := map[string]map[string]*apiCounts{}
			for _, l := range scaleLayouts {
				tg := scaleTarget(l)
				counts[l.name] = caseRequests(ctx, t, scaleCluster(l, tg, mode), tg, mode)
				total, watches := sumRequests(counts[l.name])
				t.Logf("%s %s: %d requests (+%d watches)", mode, l.name, total, watches)
				for _, s := range slices.Sorted(maps.Keys(counts[l.name])) {
					t.Logf("  %-10s %s", s, counts[l.name][s])
				}
				// Generous bound linear in namespaces and workloads (a per-pod request at 5,000 pods breaks it).
				wl := l.namespaces * l.workloadsPerNS
				if bound := 20 + 10*l.namespaces + 3*wl; total > bound {
					t.Errorf("%s: %d requests, more than the %d that %d namespaces and %d workloads explain", l.name, total, bound, l.namespaces, wl)
				}
				if maxWatches := 4 * l.namespaces; watches > maxWatches {
					t.Errorf("%s: %d watches, more than %d (pods, Deployments, StatefulSets per namespace and wait)", l.name, watches, maxWatches)
				}
			}
			small, large := counts["60ns-1000pods"], counts["60ns-5000pods"]
			for _, s := range slices.Sorted(maps.Keys(small)) {
				if a, b := small[s].String(), large[s].String(); a != b {
					t.Errorf("step %s: 1,000 pods make %s, 5,000 pods %s: requests grow with pods", s, a, b)
				}
			}
		})
	}
}

// TestVerifyReadsTheWaitsCache: the verification that follows a case's readiness wait reads the wait's informer
// cache: it sends no request of its own (before, it listed and watched the pods of every namespace
// and all namespaces again: 122 requests at 60 namespaces, 1.0 s at client-go's 50 qps between the rollout's end
// and "verified" at 1,000 pods, 1.9 s at 5,000), while the wait's cache costs one list per namespace and kind.
func TestVerifyReadsTheWaitsCache(t *testing.T) {
	t.Parallel()
	l := scaleLayouts[1] // 60 namespaces, 1,000 pods
	tg := scaleTarget(l)
	steps := caseRequests(context.Background(), t, scaleCluster(l, tg, scenario.ModeSidecar), tg, scenario.ModeSidecar)
	// Lists only: an informer opens its watch after its list returns, so the wait's own watches may start while
	// the verification runs (the fake clientset's reactors do not see watches anyway).
	if v := steps["verify"]; v.total() != 0 {
		t.Errorf("verify sent %d requests (%s), want none: it must read the wait's cache", v.total(), v)
	}
	w := steps["wait-ready"]
	for k, want := range map[string]int{"list pods": l.namespaces, "list deployments": l.namespaces, "list namespaces": 1} {
		if got := w.byVerb[k]; got != want {
			t.Errorf("wait-ready: %s %d, want %d (one per namespace and kind: %s)", k, got, want, w)
		}
	}
}

// BenchmarkCaseAPIRequests reports the Kubernetes API requests of one case's path (requests/case, watches apart)
// and its time against the fake API, per layout.
func BenchmarkCaseAPIRequests(b *testing.B) {
	ctx := context.Background()
	mode := scenario.ModeSidecar
	for _, l := range scaleLayouts {
		b.Run(l.name, func(b *testing.B) {
			tg := scaleTarget(l)
			var total, watches int
			for b.Loop() {
				b.StopTimer()
				kc := scaleCluster(l, tg, mode)
				b.StartTimer()
				total, watches = sumRequests(caseRequests(ctx, b, kc, tg, mode))
			}
			b.ReportMetric(float64(total), "requests/case")
			b.ReportMetric(float64(watches), "watches/case")
			b.ReportMetric(float64(l.pods), "pods")
		})
	}
}
