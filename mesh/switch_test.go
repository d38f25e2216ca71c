package mesh

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

const testRun = "run-1"

// recorder logs every mutating call of the fake clients, in order.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) entries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) reactor(a k8stesting.Action) (bool, runtime.Object, error) {
	switch a.GetVerb() {
	case "create", "update", "patch", "delete":
	default:
		return false, nil, nil
	}
	name := ""
	switch v := a.(type) {
	case k8stesting.CreateAction: // also matches UpdateAction (same method set)
		if m, ok := v.GetObject().(metav1.Object); ok {
			name = m.GetName()
		}
	case k8stesting.PatchAction:
		name = v.GetName() + " " + string(v.GetPatch())
	case k8stesting.DeleteAction:
		name = v.GetName()
	}
	r.add(fmt.Sprintf("%s %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetNamespace(), name))
	return false, nil, nil
}

var testTarget = target.Target{
	App:            scenario.AppFortioChain,
	Topology:       "multi",
	Namespaces:     []string{"ns-a", "ns-b"},
	EntryService:   "web",
	EntryNamespace: "ns-a",
	AppSelector:    target.AppSelector(scenario.AppFortioChain, testRun),
	Workloads: []target.WorkloadRef{
		{Kind: "Deployment", Namespace: "ns-a", Name: "web", Replicas: 1},
		{Kind: "StatefulSet", Namespace: "ns-b", Name: "db", Replicas: 1},
	},
}

var testWaypoint = scenario.Waypoint{Scope: scenario.WaypointPerNamespace, Name: "waypoint", For: "service"}

// podIn builds a ready app pod that shows mode's data plane.
func podIn(mode scenario.Mode, ns, component string, native bool) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: component + "-0", Namespace: ns, Annotations: map[string]string{},
			Labels: kube.MergeLabels(target.AppLabels(scenario.AppFortioChain, testRun), map[string]string{target.ComponentLabel: component}),
		},
		Spec: corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
		},
	}
	switch mode {
	case scenario.ModeSidecar:
		p.Annotations[AnnotationSidecarStatus] = `{"containers":["istio-proxy"]}`
		if native {
			p.Spec.InitContainers = []corev1.Container{{Name: "istio-validation"}, {Name: ProxyContainer, RestartPolicy: &always}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "istio-validation"}, {Name: ProxyContainer, Ready: true}}
		} else {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: ProxyContainer})
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ProxyContainer, Ready: true})
		}
	case scenario.ModeAmbient, scenario.ModeWaypoint:
		p.Annotations[AnnotationRedirection] = RedirectionEnabled
	}
	return p
}

func readyDeployment(ns, name string, labels map[string]string) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}},
	}
}

// newCluster builds fake clients holding the target in mode from, with reactors that play istiod's part for
// waypoints (Programmed status, the waypoint Deployment and its garbage collection) and a recorder.
func newCluster(t *testing.T, from scenario.Mode, nativeSidecars bool) (*kube.Clients, *recorder) {
	t.Helper()
	var objs []runtime.Object
	for _, ns := range testTarget.Namespaces {
		l := kube.RunLabels(testRun)
		for k, v := range NamespaceLabels(from, ns, testWaypoint, ns, "") {
			if v != nil {
				l[k] = *v
			}
		}
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}})
	}
	one := int32(1)
	objs = append(objs,
		readyDeployment("ns-a", "web", target.AppLabels(scenario.AppFortioChain, testRun)),
		&appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns-b", Labels: target.AppLabels(scenario.AppFortioChain, testRun)},
			Spec:       appsv1.StatefulSetSpec{Replicas: &one},
			Status:     appsv1.StatefulSetStatus{ReadyReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"},
		},
		podIn(from, "ns-a", "web", nativeSidecars),
		podIn(from, "ns-b", "db", nativeSidecars),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "istiod-1", Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}}},
	)
	var gws []runtime.Object
	if from == scenario.ModeWaypoint {
		for _, gw := range WaypointGateways(testTarget, testWaypoint, testRun, "") {
			programmed(gw)
			gws = append(gws, gw)
			objs = append(objs, readyDeployment(gw.Namespace, gw.Name, nil))
		}
	}
	kc := fake.NewClientset(objs...)
	gc := gwfake.NewSimpleClientset()
	for _, o := range gws {
		// Add under v1 explicitly: v1beta1.Gateway is the same Go type, and the tracker would guess v1beta1.
		gw := o.(*gwv1.Gateway)
		if err := gc.Tracker().Create(schema.GroupVersionResource{Group: gwv1.GroupName, Version: "v1", Resource: "gateways"}, gw, gw.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{}
	kc.PrependReactor("*", "*", rec.reactor)
	gc.PrependReactor("*", "*", rec.reactor)
	// istiod: program the Gateway and create its Deployment; the garbage collector removes it with the Gateway.
	gc.PrependReactor("create", "gateways", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gw := a.(k8stesting.CreateAction).GetObject().(*gwv1.Gateway)
		programmed(gw)
		err := kc.Tracker().Add(readyDeployment(gw.Namespace, gw.Name, nil))
		return false, nil, err
	})
	gc.PrependReactor("delete", "gateways", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		_ = kc.Tracker().Delete(appsv1.SchemeGroupVersion.WithResource("deployments"), d.GetNamespace(), d.GetName())
		return false, nil, nil
	})
	return &kube.Clients{Kube: kc, Gateway: gc}, rec
}

func programmed(gw *gwv1.Gateway) {
	gw.Status.Conditions = []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"},
	}
}

func index(log []string, pred func(string) bool) int {
	return slices.IndexFunc(log, pred)
}

func lastIndex(log []string, pred func(string) bool) int {
	for i := len(log) - 1; i >= 0; i-- {
		if pred(log[i]) {
			return i
		}
	}
	return -1
}

func isNamespacePatch(e string) bool { return strings.HasPrefix(e, "patch namespaces ") }
func isRestart(e string) bool {
	return (strings.HasPrefix(e, "patch deployments ") || strings.HasPrefix(e, "patch statefulsets ")) && strings.Contains(e, restartAnnotation)
}

func TestApplyAllTransitions(t *testing.T) {
	t.Parallel()
	for _, from := range scenario.AllModes {
		for _, to := range scenario.AllModes {
			if from == to {
				continue
			}
			t.Run(string(from)+"-to-"+string(to), func(t *testing.T) {
				t.Parallel()
				clients, rec := newCluster(t, from, from == scenario.ModeSidecar && to == scenario.ModeAmbient)
				sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second}
				tr, err := sw.Apply(context.Background(), testTarget, to, testWaypoint)
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				log := rec.entries()
				if !tr.End.After(tr.Start) || tr.End.Sub(tr.Start) > time.Minute {
					t.Errorf("transition times start %v end %v", tr.Start, tr.End)
				}
				if tr.From != from || tr.To != to {
					t.Errorf("transition %s -> %s, want %s -> %s", tr.From, tr.To, from, to)
				}

				// Final namespace labels are exactly the mode's: the other modes' labels are gone.
				for _, ns := range testTarget.Namespaces {
					got, _ := clients.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
					if m := modeOfLabels(got.Labels); m != to {
						t.Errorf("namespace %s ends in mode %s (labels %v)", ns, m, got.Labels)
					}
					for k, v := range NamespaceLabels(to, ns, testWaypoint, ns, "") {
						if gotV, has := got.Labels[k]; v == nil && has || v != nil && gotV != *v {
							t.Errorf("namespace %s label %s=%q (present %v), want %v", ns, k, gotV, has, v)
						}
					}
					if got.Labels[kube.RunLabel] != testRun {
						t.Errorf("namespace %s lost its run label", ns)
					}
				}

				firstNS := index(log, isNamespacePatch)
				lastNS := lastIndex(log, isNamespacePatch)
				if firstNS < 0 {
					t.Fatalf("no namespace label patch in %v", log)
				}
				// New labels before old ones are removed: every setting patch precedes every removing one.
				isSet := func(e string) bool { return isNamespacePatch(e) && !strings.Contains(e, "null") }
				isUnset := func(e string) bool { return isNamespacePatch(e) && strings.Contains(e, "null") }
				if ls, fu := lastIndex(log, isSet), index(log, isUnset); ls >= 0 && fu >= 0 && ls > fu {
					t.Errorf("a label was removed (at %d) before the new mode's labels were set (at %d): %v", fu, ls, log)
				}

				// Waypoint: created and ready before anything is labelled to use it.
				if to == scenario.ModeWaypoint {
					create := index(log, func(e string) bool { return strings.HasPrefix(e, "create gateways ") })
					use := index(log, func(e string) bool { return isNamespacePatch(e) && strings.Contains(e, LabelUseWaypoint) })
					if create < 0 || use < 0 || create > use {
						t.Errorf("waypoint must be created (at %d) before %s is set (at %d): %v", create, LabelUseWaypoint, use, log)
					}
					steps := stepNames(tr)
					if slices.Index(steps, "waypoint-ready") < 0 || slices.Index(steps, "waypoint-ready") > slices.Index(steps, "label") {
						t.Errorf("waypoint-ready must precede label: %v", steps)
					}
				}
				// Leaving waypoint: the Gateways go only after nothing uses them any more.
				if from == scenario.ModeWaypoint {
					del := index(log, func(e string) bool { return strings.HasPrefix(e, "delete gateways ") })
					if del < 0 || del < lastNS || del < lastIndex(log, isRestart) {
						t.Errorf("waypoint must be deleted (at %d) after the labels (%d) and restarts: %v", del, lastNS, log)
					}
					if gws, _ := clients.Gateway.GatewayV1().Gateways("ns-a").List(context.Background(), metav1.ListOptions{}); len(gws.Items) != 0 {
						t.Errorf("waypoint Gateways left: %d", len(gws.Items))
					}
				} else if index(log, func(e string) bool { return strings.HasPrefix(e, "delete gateways ") }) >= 0 {
					t.Errorf("no waypoint to delete, but: %v", log)
				}

				// Restarts only when sidecar involvement changes, Deployments AND StatefulSets, after the labels.
				restarts := 0
				for i, e := range log {
					if isRestart(e) {
						restarts++
						if i < lastNS {
							t.Errorf("restart at %d before the last label change at %d: %v", i, lastNS, log)
						}
					}
				}
				wantRestarts := 0
				if UsesSidecar(from) != UsesSidecar(to) {
					wantRestarts = 2
				}
				if restarts != wantRestarts {
					t.Errorf("%d restarts, want %d: %v", restarts, wantRestarts, log)
				}
				if len(tr.Restarted) != wantRestarts {
					t.Errorf("Transition.Restarted = %v", tr.Restarted)
				}
				// The rollout is waited for once, by the caller (the runner's wait-ready): Apply does not wait.
				if slices.Contains(stepNames(tr), "rollout") {
					t.Errorf("Apply must not wait for the rollout itself: %v", stepNames(tr))
				}
			})
		}
	}
}

func stepNames(tr Transition) []string {
	out := make([]string, len(tr.Steps))
	for i, s := range tr.Steps {
		out[i] = s.Name
	}
	return out
}

// The reference's two migrations, spelled out: the new data plane's label goes on before the old one comes off.
func TestApplySafeOrderSidecarAmbient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from, to   scenario.Mode
		set, unset string
	}{
		{scenario.ModeSidecar, scenario.ModeAmbient, `"istio.io/dataplane-mode":"ambient"`, `"istio-injection":null`},
		{scenario.ModeAmbient, scenario.ModeSidecar, `"istio-injection":"enabled"`, `"istio.io/dataplane-mode":null`},
		{scenario.ModeWaypoint, scenario.ModeSidecar, `"istio-injection":"enabled"`, `"istio.io/use-waypoint":null`},
	} {
		clients, rec := newCluster(t, tc.from, false)
		sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second}
		if _, err := sw.Apply(context.Background(), testTarget, tc.to, testWaypoint); err != nil {
			t.Fatal(err)
		}
		log := rec.entries()
		set := index(log, func(e string) bool { return strings.Contains(e, tc.set) })
		unset := index(log, func(e string) bool { return strings.Contains(e, tc.unset) })
		restart := index(log, isRestart)
		if set < 0 || unset < 0 || set > unset || restart < unset {
			t.Errorf("%s -> %s: want set %s (%d) < unset %s (%d) < restart (%d); log %v", tc.from, tc.to, tc.set, set, tc.unset, unset, restart, log)
		}
	}
}

func TestApplyIsIdempotent(t *testing.T) {
	t.Parallel()
	clients, rec := newCluster(t, scenario.ModeAmbient, false)
	sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second}
	tr, err := sw.Apply(context.Background(), testTarget, scenario.ModeAmbient, testWaypoint)
	if err != nil {
		t.Fatal(err)
	}
	if l := rec.entries(); len(l) != 0 || len(tr.Steps) != 0 {
		t.Errorf("switching to the current mode changed things: %v %v", l, stepNames(tr))
	}
}

func TestApplyRecordsAndRestoresForeignNamespaceLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clients, _ := newCluster(t, scenario.ModeNone, false)
	// ns-a belongs to someone else: revision-based injection that must come back after the run.
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-a", Labels: map[string]string{"team": "a", LabelRevision: "canary"}}}
	if _, err := clients.Kube.CoreV1().Namespaces().Update(ctx, foreign, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second}
	if _, err := sw.Apply(ctx, testTarget, scenario.ModeAmbient, testWaypoint); err == nil || !strings.Contains(err.Error(), "not created by meshbench") {
		t.Fatalf("without a record a foreign namespace must be refused, got %v", err)
	}
	path := filepath.Join(t.TempDir(), "run", LabelRecordFile)
	rec, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	sw.Record = rec
	if _, err := sw.Apply(ctx, testTarget, scenario.ModeAmbient, testWaypoint); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Apply(ctx, testTarget, scenario.ModeSidecar, testWaypoint); err != nil {
		t.Fatal(err)
	}
	// The file holds the state before the FIRST change.
	reread, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	es := reread.entries()
	if len(es) != 1 || es[0].Namespace != "ns-a" {
		t.Fatalf("record entries %+v", es)
	}
	if v := es[0].Labels[LabelRevision]; v == nil || *v != "canary" {
		t.Errorf("istio.io/rev recorded as %v, want canary", v)
	}
	if v, ok := es[0].Labels[LabelDataplaneMode]; !ok || v != nil {
		t.Errorf("istio.io/dataplane-mode must be recorded as absent (null), got %v, %v", v, ok)
	}
	restored, err := reread.Restore(ctx, clients.Kube)
	if err != nil || !slices.Equal(restored, []string{"ns-a"}) {
		t.Fatalf("Restore = %v, %v", restored, err)
	}
	got, _ := clients.Kube.CoreV1().Namespaces().Get(ctx, "ns-a", metav1.GetOptions{})
	want := map[string]string{"team": "a", LabelRevision: "canary"}
	if fmt.Sprint(got.Labels) != fmt.Sprint(want) {
		t.Errorf("restored labels %v, want %v", got.Labels, want)
	}
	if again, _ := OpenLabelRecord(path); len(again.entries()) != 0 {
		t.Errorf("record not emptied after restore: %+v", again.entries())
	}
}

func TestApplyCreatesMissingNamespaces(t *testing.T) {
	t.Parallel()
	kc := fake.NewClientset()
	sw := &Switcher{Clients: &kube.Clients{Kube: kc, Gateway: gwfake.NewSimpleClientset()}, RunID: testRun, Timeout: time.Second}
	tr, err := sw.Apply(context.Background(), testTarget, scenario.ModeSidecar, testWaypoint)
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := kc.CoreV1().Namespaces().Get(context.Background(), "ns-b", metav1.GetOptions{})
	if ns.Labels[kube.RunLabel] != testRun || ns.Labels[labelInjection] != "enabled" {
		t.Errorf("labels %v", ns.Labels)
	}
	if len(tr.Restarted) != 0 {
		t.Errorf("no pods yet, nothing to restart: %v", tr.Restarted)
	}
}

func TestApplyWaypointNotReadyLabelsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clients, rec := newCluster(t, scenario.ModeAmbient, false)
	// No istiod answering: the Gateway never gets a status.
	gc := gwfake.NewSimpleClientset()
	gc.PrependReactor("*", "*", rec.reactor)
	clients.Gateway = gc
	sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 300 * time.Millisecond}
	_, err := sw.Apply(ctx, testTarget, scenario.ModeWaypoint, testWaypoint)
	if err == nil || !strings.Contains(err.Error(), "no controller serves GatewayClass istio-waypoint") || !strings.Contains(err.Error(), "nothing was labelled") {
		t.Fatalf("want a waypoint-not-ready error naming the cause, got %v", err)
	}
	if i := index(rec.entries(), isNamespacePatch); i >= 0 {
		t.Errorf("a namespace was labelled although the waypoint is not ready: %v", rec.entries())
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range scenario.AllModes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			clients, _ := newCluster(t, mode, true)
			sw := &Switcher{Clients: clients, RunID: testRun}
			v, err := sw.Verify(ctx, testTarget, mode, testWaypoint, 2*time.Second)
			if err != nil {
				t.Fatalf("Verify(%s): %v", mode, err)
			}
			if len(v.Pods) != 2 || !v.OK() {
				t.Errorf("verification %+v", v)
			}
			if mode == scenario.ModeWaypoint && len(v.Waypoints) != 2 {
				t.Errorf("want 2 waypoint proofs, got %+v", v.Waypoints)
			}
		})
	}
}

func TestVerifySidecarWithoutIstio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clients, _ := newCluster(t, scenario.ModeNone, false)
	_ = clients.Kube.CoreV1().Pods("istio-system").Delete(ctx, "istiod-1", metav1.DeleteOptions{})
	sw := &Switcher{Clients: clients, RunID: testRun, Timeout: time.Second}
	if _, err := sw.Apply(ctx, testTarget, scenario.ModeSidecar, testWaypoint); err != nil {
		t.Fatal(err)
	}
	_, err := sw.Verify(ctx, testTarget, scenario.ModeSidecar, testWaypoint, 300*time.Millisecond)
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("want *VerifyError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"mode sidecar not in effect", "0 of 2 app pods", "no Istio control plane found", "pod ns-a/web-0 (node node1): no sidecar injected"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestTimings(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := Transition{Start: t0, End: t0.Add(3 * time.Second), Steps: []Step{
		{Name: "label", Start: t0.Add(time.Second), End: t0.Add(1100 * time.Millisecond)},
		{Name: "restart", Start: t0.Add(1100 * time.Millisecond), End: t0.Add(1200 * time.Millisecond)},
		{Name: "rollout", Start: t0.Add(1200 * time.Millisecond), End: t0.Add(3 * time.Second)},
	}}
	v := &Verification{End: t0.Add(4 * time.Second)}
	got := tr.Timings(v)
	want := map[string]string{"mode-switch": "3s", "label": "100ms", "restart": "100ms", "rollout": "1.8s", "label-to-verified": "3s"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Timings = %v, want %v", got, want)
	}
}

// Without the Gateway API CRDs, discovery (the REST mapper) says so, typed: waypoint mode fails before anything is
// created or labelled, with the fix; other modes find no stale waypoints to delete and go on.
func TestApplyWithoutGatewayAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		resources []*metav1.APIResourceList
	}{
		{"no gateway group", nil},
		{"gateway group without v1", []*metav1.APIResourceList{{GroupVersion: "gateway.networking.k8s.io/v1beta1",
			APIResources: []metav1.APIResource{{Name: "gateways", Kind: "Gateway", Namespaced: true}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clients, rec := newCluster(t, scenario.ModeAmbient, false)
			disc := clients.Kube.Discovery().(*fakediscovery.FakeDiscovery)
			disc.Resources = append([]*metav1.APIResourceList{{GroupVersion: "v1",
				APIResources: []metav1.APIResource{{Name: "namespaces", Kind: "Namespace"}}}}, tc.resources...)
			clients.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
			sw := &Switcher{Clients: clients, RunID: testRun, Timeout: time.Second}
			_, err := sw.Apply(ctx, testTarget, scenario.ModeWaypoint, testWaypoint)
			if !errors.Is(err, errNoGatewayAPI) || !meta.IsNoMatchError(err) {
				t.Fatalf("want ErrNoGatewayAPI wrapping the mapper's no-match error, got %v", err)
			}
			if !strings.Contains(err.Error(), "install the Gateway API CRDs") {
				t.Errorf("error lacks the fix: %v", err)
			}
			if l := rec.entries(); len(l) != 0 {
				t.Errorf("nothing may change when waypoint mode cannot run: %v", l)
			}
			if _, err := sw.Apply(ctx, testTarget, scenario.ModeSidecar, testWaypoint); err != nil {
				t.Errorf("sidecar mode needs no Gateway API: %v", err)
			}
		})
	}
}

func TestApplyWithGatewayAPIServed(t *testing.T) {
	t.Parallel()
	clients, _ := newCluster(t, scenario.ModeAmbient, false)
	disc := clients.Kube.Discovery().(*fakediscovery.FakeDiscovery)
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: gwv1.GroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "gateways", Kind: "Gateway", Namespaced: true}}}}
	clients.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second}
	if _, err := sw.Apply(context.Background(), testTarget, scenario.ModeWaypoint, testWaypoint); err != nil {
		t.Fatalf("Gateway API served: %v", err)
	}
}

// Apply stamps its transition, its steps and the restart annotation from the Switcher's clock: with a fake clock the
// record is exact.
func TestApplyStampsFromItsClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	clients, rec := newCluster(t, scenario.ModeNone, false)
	sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second, Clock: testingclock.NewFakePassiveClock(t0)}
	tr, err := sw.Apply(context.Background(), testTarget, scenario.ModeSidecar, testWaypoint)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Start.Equal(t0) || !tr.End.Equal(t0) || len(tr.Steps) == 0 {
		t.Fatalf("transition %v..%v with %d steps, want all at %v", tr.Start, tr.End, len(tr.Steps), t0)
	}
	for _, s := range tr.Steps {
		if !s.Start.Equal(t0) || !s.End.Equal(t0) {
			t.Errorf("step %s %v..%v, want %v", s.Name, s.Start, s.End, t0)
		}
	}
	if got := tr.Timings(nil)["mode-switch"]; got != "0s" {
		t.Errorf("mode-switch timing %q, want 0s", got)
	}
	restarts := 0
	for _, e := range rec.entries() {
		if isRestart(e) {
			restarts++
			if !strings.Contains(e, t0.Format(time.RFC3339Nano)) {
				t.Errorf("restart %q does not carry the clock's stamp %s", e, t0.Format(time.RFC3339Nano))
			}
		}
	}
	if restarts != len(testTarget.Workloads) {
		t.Errorf("%d restarts, want %d (none -> sidecar restarts every workload)", restarts, len(testTarget.Workloads))
	}
}

// TestVerifyReadsAnInformerCache: a verification that starts while a pod is not yet injected ends on the pod's
// update event (well before the 5 s re-check), and its API requests are one list and one watch per app namespace
// plus one of each for the namespaces, however many checks ran: no list per check, no get per namespace.
func TestVerifyReadsAnInformerCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clients, _ := newCluster(t, scenario.ModeNone, true)
	kc := clients.Kube.(*fake.Clientset)
	var mu sync.Mutex
	calls := map[string]int{}
	kc.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[a.GetVerb()+" "+a.GetResource().Resource]++
		return false, nil, nil
	})
	kc.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		calls["watch "+a.GetResource().Resource]++
		return false, nil, nil
	})
	sw := &Switcher{Clients: clients, RunID: testRun}
	// The namespaces already carry sidecar's label; web-0 is injected only after the verification has started.
	for _, ns := range testTarget.Namespaces {
		n, _ := kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		n.Labels[labelInjection] = "enabled"
		if _, err := kc.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kc.CoreV1().Pods("ns-b").Update(ctx, podIn(scenario.ModeSidecar, "ns-b", "db", true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(calls) // only the verification's own requests
	mu.Unlock()
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = kc.CoreV1().Pods("ns-a").Update(ctx, podIn(scenario.ModeSidecar, "ns-a", "web", true), metav1.UpdateOptions{})
	}()
	start := time.Now()
	v, err := sw.Verify(ctx, testTarget, scenario.ModeSidecar, testWaypoint, 10*time.Second)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("verification took %s: it waited for the re-check, not the pod's event", took)
	}
	if len(v.Pods) != 2 || !v.OK() {
		t.Errorf("verification %+v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"list pods": 2, "watch pods": 2, "list namespaces": 1, "watch namespaces": 1}
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("%s: %d requests, want %d (all: %v)", k, calls[k], n, calls)
		}
	}
	if calls["get namespaces"] > 0 {
		t.Errorf("the check read namespaces from the API (%d gets), not from the cache", calls["get namespaces"])
	}
}

// TestRestartListsPodsOncePerNamespace: two workloads in one namespace, one of them with pods already in the
// mode: one pod list for the namespace (not one per workload), matched to each workload's selector, and only the
// mismatched workload is restarted.
func TestRestartListsPodsOncePerNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clients, _ := newCluster(t, scenario.ModeNone, true)
	kc := clients.Kube.(*fake.Clientset)
	if err := kc.Tracker().Add(readyDeployment("ns-a", "api", target.AppLabels(scenario.AppFortioChain, testRun))); err != nil {
		t.Fatal(err)
	}
	if err := kc.Tracker().Add(podIn(scenario.ModeSidecar, "ns-a", "api", true)); err != nil { // already injected
		t.Fatal(err)
	}
	tgt := testTarget
	tgt.Workloads = append(slices.Clone(testTarget.Workloads), target.WorkloadRef{Kind: "Deployment", Namespace: "ns-a", Name: "api", Replicas: 1})
	var mu sync.Mutex
	lists := map[string]int{}
	kc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lists[a.GetNamespace()]++
		return false, nil, nil
	})
	sw := &Switcher{Clients: clients, RunID: testRun}
	restarted, err := sw.restartMismatched(ctx, tgt, scenario.ModeSidecar)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range restarted {
		got = append(got, w.String())
	}
	if want := "Deployment ns-a/web StatefulSet ns-b/db"; strings.Join(got, " ") != want {
		t.Errorf("restarted %q, want %q (api's pod already has its sidecar)", strings.Join(got, " "), want)
	}
	mu.Lock()
	defer mu.Unlock()
	if lists["ns-a"] != 1 || lists["ns-b"] != 1 {
		t.Errorf("pod lists per namespace %v, want one each", lists)
	}
}
