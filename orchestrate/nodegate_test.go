package orchestrate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/runner"
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
	deployed := &runner.Target{Target: target.Target{Namespaces: []string{"mb-single"}, AppSelector: "app=chain"}}
	down := gateNode("node2", corev1.ConditionUnknown, 70*time.Second)
	healthy := gateNode("node1", corev1.ConditionTrue, time.Hour)
	for _, tc := range []struct {
		name          string
		objs          []runtime.Object
		selector      map[string]string
		t             *runner.Target
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
		g := nodeGate{kc: kc, selector: tc.selector, now: func() time.Time { return gateNow }}
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
		// One GET of the named node; a LIST only for a node still down, never per pod.
		var reqs []string
		for _, a := range kc.Actions() {
			reqs = append(reqs, a.GetVerb()+" "+a.GetResource().Resource)
		}
		if len(reqs) == 0 || reqs[0] != "get nodes" || len(reqs) > 3 {
			t.Errorf("%s: requests %v", tc.name, reqs)
		}
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
