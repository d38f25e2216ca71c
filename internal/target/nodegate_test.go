package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

var gateNow = time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)

func gateNode(name string, ready corev1.ConditionStatus, since time.Duration) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "pool": "bench"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
			LastTransitionTime: metav1.NewTime(gateNow.Add(-since)), Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}}}
}

func gatePod(name, node string, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mb-single", Labels: map[string]string{"app": "chain"}},
		Spec: corev1.PodSpec{NodeName: node}}
	if terminating {
		now := metav1.NewTime(gateNow)
		p.DeletionTimestamp, p.Finalizers = &now, []string{"test/keep"}
	}
	return p
}

// TestNodeGate: a node still not Ready skips the case, naming the node and its condition, when the app is pinned
// there or its pods still sit there; a node back (or gone) is recovered; an unpinned app whose pods left the node,
// or a new topology, runs.
func TestNodeGate(t *testing.T) {
	t.Parallel()
	deployed := &Target{Namespaces: []string{"mb-single"}, AppSelector: "app=chain", EntryNamespace: "mb-single"}
	down := gateNode("node2", corev1.ConditionUnknown, 70*time.Second)
	healthy := gateNode("node1", corev1.ConditionTrue, time.Hour)
	for _, tc := range []struct {
		name          string
		objs          []runtime.Object
		selector      map[string]string
		t             *Target
		wantSkip      string // substring; "" = runs
		wantRecovered []string
	}{
		{name: "pinned by hostname", objs: []runtime.Object{down, healthy}, selector: map[string]string{"kubernetes.io/hostname": "node2"},
			wantSkip: "node node2 not Ready (Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)); " +
				"the app's pods cannot run there: pinned by nodeSelector kubernetes.io/hostname=node2 (no other Ready node matches it)"},
		{name: "selector with another Ready node, pods gone", objs: []runtime.Object{down, healthy}, selector: map[string]string{"pool": "bench"}, t: deployed},
		{name: "pods still there", objs: []runtime.Object{down, healthy, gatePod("chain-0-a", "node2", false), gatePod("chain-0-b", "node1", false)},
			t: deployed, wantSkip: "node node2 not Ready (Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)); " +
				"the app's pods cannot run there: 1 app pods still sit there (mb-single/chain-0-a)"},
		{name: "only a replaced pod left terminating there", objs: []runtime.Object{down, gatePod("chain-0-a", "node2", true)}, t: deployed},
		{name: "pods there, but a new topology is deployed", objs: []runtime.Object{down, gatePod("chain-0-a", "node2", false)}},
		{name: "back", objs: []runtime.Object{gateNode("node2", corev1.ConditionTrue, time.Second)},
			selector: map[string]string{"kubernetes.io/hostname": "node2"}, wantRecovered: []string{"node2"}},
		{name: "gone", objs: nil, selector: map[string]string{"kubernetes.io/hostname": "node2"}, wantRecovered: []string{"node2"}},
	} {
		kc := fake.NewClientset(tc.objs...)
		probes := 0
		g := NodeGate{Kube: kc, Selector: tc.selector, Clients: gateClients, Clock: testingclock.NewFakePassiveClock(gateNow),
			Probe: func(context.Context, string) error { probes++; return nil }}
		chk := g.Check(context.Background(), tc.t, []string{"node2"})
		if (tc.wantSkip == "") != (chk.Skip == "") || !strings.Contains(chk.Skip, tc.wantSkip) {
			t.Errorf("%s: skip %q, want %q", tc.name, chk.Skip, tc.wantSkip)
		}
		if chk.Skip != "" && chk.Node != "node2" {
			t.Errorf("%s: skip for node %q, want node2", tc.name, chk.Node)
		}
		if !slices.Equal(chk.Recovered, tc.wantRecovered) {
			t.Errorf("%s: recovered %v, want %v", tc.name, chk.Recovered, tc.wantRecovered)
		}
		// One GET of the named node; LISTs only for a node still down (nodes by the selector, the app's pods per
		// namespace, the load clients), never per pod.
		var reqs []string
		for _, a := range kc.Actions() {
			reqs = append(reqs, a.GetVerb()+" "+a.GetResource().Resource)
		}
		if len(reqs) == 0 || reqs[0] != "get nodes" || len(reqs) > 4 {
			t.Errorf("%s: requests %v", tc.name, reqs)
		}
		// The kubelet is probed only when the condition alone would call the node usable.
		if want := len(tc.wantRecovered) - btoi(tc.name == "gone"); probes != want {
			t.Errorf("%s: %d probes, want %d", tc.name, probes, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// gateClients selects the run's load-client pods (loadgen.Cluster.Selector's labels).
const gateClients = "app.kubernetes.io/component=loadgen,app.kubernetes.io/name=meshbench-loadgen,meshbench.dev/run=r1"

func gateClient(name, node string) *corev1.Pod {
	p := gatePod(name, node, false)
	p.Labels = map[string]string{"app.kubernetes.io/component": "loadgen", "app.kubernetes.io/name": "meshbench-loadgen", "meshbench.dev/run": "r1"}
	return p
}

// TestNodeGateKubeletProbe: a node whose Ready condition still holds (the node controller's grace) but whose
// kubelet does not answer through the API server is not usable: the case is skipped naming the node and "kubelet
// does not answer" while the app is pinned there or its pods, or the load clients', still sit there. A probe the API
// server refuses (forbidden) is no evidence: the condition decides. Ready and answering: recovered.
func TestNodeGateKubeletProbe(t *testing.T) {
	t.Parallel()
	deployed := &Target{Namespaces: []string{"mb-single"}, AppSelector: "app=chain", EntryNamespace: "mb-single"}
	ready := gateNode("node2", corev1.ConditionTrue, time.Hour)
	justLost := gateNode("node2", corev1.ConditionUnknown, 5*time.Second) // within NodeGrace
	healthy := gateNode("node1", corev1.ConditionTrue, time.Hour)
	pinned := map[string]string{"kubernetes.io/hostname": "node2"}
	refused := fmt.Errorf("GET nodes/node2/proxy/healthz: %w",
		apierrors.NewServiceUnavailable("error trying to reach service: dial tcp 172.18.0.3:10250: connect: connection refused"))
	dialRefused := fmt.Errorf("GET nodes/node2/proxy/healthz: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	timeout := fmt.Errorf("GET nodes/node2/proxy/healthz: %w", context.DeadlineExceeded)
	forbidden := fmt.Errorf("GET nodes/node2/proxy/healthz: %w",
		apierrors.NewForbidden(schema.GroupResource{Resource: "nodes/proxy"}, "node2", errors.New("RBAC: nodes/proxy get not allowed")))
	notFound := fmt.Errorf("GET nodes/node2/proxy/healthz: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "node2"))
	const pinnedSkip = "node node2: kubelet does not answer (GET nodes/node2/proxy/healthz: error trying to reach service: dial tcp " +
		"172.18.0.3:10250: connect: connection refused); the app's pods cannot run there: pinned by nodeSelector kubernetes.io/hostname=node2 " +
		"(no other Ready node matches it)"
	for _, tc := range []struct {
		name          string
		objs          []runtime.Object
		selector      map[string]string
		t             *Target
		probe         error
		wantSkip      string // substring; "" = runs
		wantRecovered bool
	}{
		{name: "Ready, kubelet refused, pinned", objs: []runtime.Object{ready, healthy}, selector: pinned, t: deployed, probe: refused, wantSkip: pinnedSkip},
		{name: "Ready, kubelet refused, pinned, new topology", objs: []runtime.Object{ready, healthy}, selector: pinned, probe: refused, wantSkip: pinnedSkip},
		{name: "Ready, dial refused, app pods there", objs: []runtime.Object{ready, healthy, gatePod("chain-0-a", "node2", false)}, t: deployed,
			probe: dialRefused, wantSkip: "node node2: kubelet does not answer (GET nodes/node2/proxy/healthz: dial tcp: connection refused); " +
				"the app's pods cannot run there: 1 app pods still sit there (mb-single/chain-0-a)"},
		{name: "Ready, probe timed out, a load client there", objs: []runtime.Object{ready, healthy, gatePod("chain-0-a", "node1", false),
			gateClient("meshbench-loadgen-b", "node2"), gateClient("meshbench-loadgen-a", "node1")}, t: deployed, probe: timeout,
			wantSkip: "node node2: kubelet does not answer (GET nodes/node2/proxy/healthz: context deadline exceeded); " +
				"the load clients cannot run there: 1 load client pods still sit there (mb-single/meshbench-loadgen-b)"},
		{name: "just lost Ready, kubelet refused, pinned", objs: []runtime.Object{justLost, healthy}, selector: pinned, t: deployed, probe: refused,
			wantSkip: pinnedSkip},
		{name: "Ready, kubelet refused, nothing of the case there", objs: []runtime.Object{ready, healthy, gatePod("chain-0-a", "node1", false)},
			t: deployed, probe: refused},
		{name: "Ready, probe forbidden: the condition decides", objs: []runtime.Object{ready, healthy}, selector: pinned, t: deployed, probe: forbidden,
			wantRecovered: true},
		{name: "Ready, probe not found: the condition decides", objs: []runtime.Object{ready, healthy}, selector: pinned, t: deployed, probe: notFound,
			wantRecovered: true},
		{name: "Ready, kubelet answers", objs: []runtime.Object{ready, healthy}, selector: pinned, t: deployed, wantRecovered: true},
	} {
		kc := fake.NewClientset(tc.objs...)
		var probed []string
		g := NodeGate{Kube: kc, Selector: tc.selector, Clients: gateClients, Clock: testingclock.NewFakePassiveClock(gateNow),
			Probe: func(_ context.Context, name string) error { probed = append(probed, name); return tc.probe }}
		chk := g.Check(context.Background(), tc.t, []string{"node2"})
		if (tc.wantSkip == "") != (chk.Skip == "") || !strings.Contains(chk.Skip, tc.wantSkip) {
			t.Errorf("%s: skip %q\nwant %q", tc.name, chk.Skip, tc.wantSkip)
		}
		if chk.Skip != "" && chk.Node != "node2" {
			t.Errorf("%s: skip for node %q, want node2", tc.name, chk.Node)
		}
		if got := slices.Equal(chk.Recovered, []string{"node2"}); got != tc.wantRecovered {
			t.Errorf("%s: recovered %v, want node2 recovered: %v", tc.name, chk.Recovered, tc.wantRecovered)
		}
		// One GET and one probe of the named node per check.
		if fmt.Sprint(probed) != "[node2]" {
			t.Errorf("%s: probed %v, want node2 once", tc.name, probed)
		}
		if a := kc.Actions(); len(a) == 0 || a[0].GetVerb() != "get" || len(a) > 4 {
			t.Errorf("%s: %d requests, first %v", tc.name, len(a), a)
		}
	}
}

// TestKubeletUnreachable: which probe errors show that a kubelet does not answer.
func TestKubeletUnreachable(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Resource: "nodes"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"timeout", context.DeadlineExceeded, true},
		{"503 of the proxy", apierrors.NewServiceUnavailable("error trying to reach service"), true},
		{"502", apierrors.NewGenericServerResponse(http.StatusBadGateway, "get", gr, "node2", "", 0, false), true},
		{"500", apierrors.NewInternalError(errors.New("error dialing backend")), true},
		{"504", apierrors.NewTimeoutError("proxy", 5), true},
		{"forbidden", apierrors.NewForbidden(gr, "node2", errors.New("no")), false},
		{"unauthorized", apierrors.NewUnauthorized("no"), false},
		{"not found", apierrors.NewNotFound(gr, "node2"), false},
		{"method not supported", apierrors.NewMethodNotSupported(gr, "get"), false},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false},
	} {
		if got := kubeletUnreachable(fmt.Errorf("GET nodes/node2/proxy/healthz: %w", tc.err)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if kubeletUnreachable(nil) {
		t.Error("no error: the kubelet answered")
	}
}

// TestOtherReadyNode: a node the pods may move to is another one, schedulable and Ready.
func TestOtherReadyNode(t *testing.T) {
	t.Parallel()
	cordoned := gateNode("node3", corev1.ConditionTrue, time.Hour)
	cordoned.Spec.Unschedulable = true
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  bool
	}{
		{"only the down node", []*corev1.Node{gateNode("node2", corev1.ConditionUnknown, time.Minute)}, false},
		{"a Ready one", []*corev1.Node{gateNode("node2", corev1.ConditionUnknown, time.Minute), gateNode("node1", corev1.ConditionTrue, time.Hour)}, true},
		{"cordoned", []*corev1.Node{cordoned}, false},
		{"just lost Ready", []*corev1.Node{gateNode("node1", corev1.ConditionUnknown, time.Second)}, false},
		{"never posted Ready", []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node4"}}}, false},
	} {
		var items []corev1.Node
		for _, n := range tc.nodes {
			items = append(items, *n)
		}
		if got := otherReadyNode(items, "node2"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
