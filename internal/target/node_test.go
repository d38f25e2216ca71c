package target

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func readyCond(status corev1.ConditionStatus, since time.Time) []corev1.NodeCondition {
	return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since),
		Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}
}

func TestNodeProblem(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		conds []corev1.NodeCondition
		want  string
	}{
		{"ready", readyCond(corev1.ConditionTrue, now.Add(-time.Hour)), ""},
		{"unknown within the grace", readyCond(corev1.ConditionUnknown, now.Add(-10*time.Second)), ""},
		{"unknown past the grace", readyCond(corev1.ConditionUnknown, now.Add(-70*time.Second)),
			"Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)"},
		{"no Ready condition yet", nil, ""},
	} {
		n := &corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conds}}
		if got := NodeProblem(n, now, nodeGrace); got != tc.want {
			t.Errorf("%s: NodeProblem = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// markedPod is what the node lifecycle controller leaves on a node whose kubelet is gone: containers running and
// ready, the pod's Ready condition False.
func markedPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

// TestWaitReadyStopsOnNodeNotReady: pods on a node that has been not Ready past the grace end the wait at once with
// the node named; the same pods on a node that just went not Ready are waited for until the timeout.
func TestWaitReadyStopsOnNodeNotReady(t *testing.T) {
	t.Parallel()
	tg := Target{App: "fortio-chain", Topology: "single", Namespaces: []string{"app"}, AppSelector: "app=web"}
	for _, tc := range []struct {
		name    string
		since   time.Duration
		timeout time.Duration
		wantErr string
	}{
		// A NodeNotReadyError can only come before the timeout: the timeout itself is a NotReadyError.
		{"gone for a minute", time.Minute, time.Hour, "node node2: Ready=Unknown"},
		{"just went away", 0, 2 * time.Second, "not ready after 2s"},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"},
			Status: corev1.NodeStatus{Conditions: readyCond(corev1.ConditionUnknown, time.Now().Add(-tc.since))}}
		kc := fake.NewClientset(node, markedPod("web-1", "node2"))
		_, err := waitReady(context.Background(), kc, tg, tc.timeout, nil)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
		var nn *NodeNotReadyError
		if errors.As(err, &nn) != (tc.since > nodeGrace) {
			t.Errorf("%s: NodeNotReadyError %v, want %v", tc.name, errors.As(err, &nn), tc.since > nodeGrace)
		}
	}
}

// TestWaitReadyRequestsDoNotGrowWithEvents: a rollout's pod events re-evaluate the informers' cache; the API sees
// one list and one watch per namespace and kind, however many events arrive (before informers, every event cost a
// GET per workload and a list per namespace: 5,253 GETs in a 1,000-pod sidecar switch on kwok nodes).
func TestWaitReadyRequestsDoNotGrowWithEvents(t *testing.T) {
	t.Parallel()
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", Generation: 1},
		Spec:   appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}}
	pod := markedPod("web-1", "node1")
	pod.Status.ContainerStatuses[0].Ready = false
	kc := fake.NewClientset(dep, pod)
	tg := Target{App: "fortio-chain", Topology: "single", Namespaces: []string{"app"}, AppSelector: "app=web",
		Workloads: []WorkloadRef{{Kind: KindDeployment, Namespace: "app", Name: "web", Replicas: 1}}}
	done := make(chan error, 1)
	var evals atomic.Int32
	go func() {
		_, err := waitReady(context.Background(), kc, tg, time.Minute, func(Readiness) { evals.Add(1) })
		done <- err
	}()
	ctx := context.Background()
	// 50 updates that keep the pod not ready, then the one that makes it ready.
	for i := range 51 {
		p, err := kc.CoreV1().Pods("app").Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations = map[string]string{"n": fmt.Sprint(i)}
		if i == 50 {
			p.Status.Conditions[0].Status = corev1.ConditionTrue
			p.Status.ContainerStatuses[0].Ready = true
		}
		if _, err := kc.CoreV1().Pods("app").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The updates come faster than the pace: they coalesce, the cache is not walked once per event.
	if n := evals.Load(); n > 20 {
		t.Errorf("%d evaluations for 51 events: want them coalesced by the pace", n)
	}
	counts := map[string]int{}
	for _, a := range kc.Actions() {
		if a.GetNamespace() == "app" && (a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch") {
			counts[a.GetVerb()+" "+a.GetResource().Resource]++
		}
	}
	// The test's own 51 GETs of the pod are the only gets.
	want := map[string]int{"list pods": 1, "watch pods": 1, "list deployments": 1, "watch deployments": 1, "get pods": 51}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", counts, want)
	}
}

// TestReadinessOfStrandedPods: a pod terminating on a node that is not Ready no longer counts once its workload
// reports rolled out and available (its replacement runs elsewhere); without the node's state, without the
// workload's word, on a Ready node, or not terminating, it does.
func TestReadinessOfStrandedPods(t *testing.T) {
	t.Parallel()
	tg := Target{Namespaces: []string{"app"},
		Workloads: []WorkloadRef{{Kind: KindDeployment, Namespace: "app", Name: "web", Replicas: 1}}}
	terminating := func(p *corev1.Pod) corev1.Pod {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return *p
	}
	replacement := readyPod("web-2", "node1")
	down := map[string]string{"node2": "Ready=Unknown for 6m0s (NodeStatusUnknown: Kubelet stopped posting node status.)"}
	for _, tc := range []struct {
		name          string
		workloadReady bool
		pod           corev1.Pod
		down          map[string]string
		wantReady     bool
		wantMarked    []string
		wantStranded  int
	}{
		{"replaced, node down: does not count", true, terminating(markedPod("web-1", "node2")), down, true, nil, 1},
		{"node state not read yet (first pass)", true, terminating(markedPod("web-1", "node2")), nil, false, []string{"node2"}, 0},
		{"workload not available: not replaced", false, terminating(markedPod("web-1", "node2")), down, false, []string{"node2"}, 0},
		{"terminating on a Ready node: an ordinary rollout", true, terminating(markedPod("web-1", "node3")), down, false, []string{"node3"}, 0},
		{"not terminating on the down node: cannot run", true, *markedPod("web-1", "node2"), down, false, []string{"node2"}, 0},
	} {
		get := func(WorkloadRef) (bool, string) {
			if tc.workloadReady {
				return true, ""
			}
			return false, "0 of 1 replicas available"
		}
		r, marked := readinessOf(tg, get, map[string][]*corev1.Pod{"app": {&tc.pod, &replacement}}, tc.down)
		if r.Ready() != tc.wantReady || fmt.Sprint(marked) != fmt.Sprint(tc.wantMarked) || len(r.Stranded) != tc.wantStranded {
			t.Errorf("%s: ready %v marked %v stranded %q (pods %q), want %v %v %d", tc.name, r.Ready(), marked, r.Stranded,
				r.Pods, tc.wantReady, tc.wantMarked, tc.wantStranded)
		}
		if r.ReadyPods != 1 {
			t.Errorf("%s: %d ready pods, want 1 (the replacement)", tc.name, r.ReadyPods)
		}
	}
}

func readyPod(name, node string) corev1.Pod {
	p := markedPod(name, node)
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	return *p
}

// TestWaitReadyIgnoresReplacedPodsOnADeadNode: an unpinned app whose pod on the dead node was evicted (terminating
// for as long as the kubelet is gone) and replaced on a healthy node is ready; the dead node is read, no other.
func TestWaitReadyIgnoresReplacedPodsOnADeadNode(t *testing.T) {
	t.Parallel()
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", Generation: 1},
		Spec:   appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"},
		Status: corev1.NodeStatus{Conditions: readyCond(corev1.ConditionUnknown, time.Now().Add(-6*time.Minute))}}
	old := markedPod("web-1", "node2")
	now := metav1.Now()
	old.DeletionTimestamp, old.Finalizers = &now, []string{"test/keep"} // the fake deletes at once otherwise
	repl := readyPod("web-2", "node1")
	kc := fake.NewClientset(dep, node, old, &repl)
	tg := Target{App: "fortio-chain", Topology: "single", Namespaces: []string{"app"}, AppSelector: "app=web",
		Workloads: []WorkloadRef{{Kind: KindDeployment, Namespace: "app", Name: "web", Replicas: 1}}}
	r, err := waitReady(context.Background(), kc, tg, 2*time.Second, nil)
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if len(r.Stranded) != 1 || !strings.Contains(r.Stranded[0], "app/web-1 (node node2)") || r.ReadyPods != 1 {
		t.Errorf("readiness %+v, want web-1 stranded and the replacement ready", r)
	}
	var nodeGets []string
	for _, a := range kc.Actions() {
		if a.GetResource().Resource == "nodes" {
			nodeGets = append(nodeGets, a.GetVerb()+" "+a.(interface{ GetName() string }).GetName())
		}
	}
	if fmt.Sprint(nodeGets) != "[get node2]" {
		t.Errorf("node requests %v, want one get of node2", nodeGets)
	}
}

// TestWaitReadyOnTheClock: the wait re-evaluates on its Clock (a node's condition changes without an event on the
// app's objects), and a node's grace is read on that clock too: pods on a node that went not Ready at the start end
// the wait with the node named once nodeGrace has passed on the fake clock, long before the 10 s wall-time timeout
// (the wall clock would have reached only the timeout's NotReadyError).
func TestWaitReadyOnTheClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(start)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}, Status: corev1.NodeStatus{Conditions: readyCond(corev1.ConditionUnknown, start)}}
	kc := fake.NewClientset(node, markedPod("web-1", "node2"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { // step the fake clock whenever the wait waits on it
		for ctx.Err() == nil {
			if fc.HasWaiters() {
				fc.Step(time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	c := NewCache(kc, Target{App: "fortio-chain", Topology: "single", Namespaces: []string{"app"}, AppSelector: "app=web"})
	c.Clock = fc
	c.Start(ctx)
	defer c.Stop()
	_, err := c.WaitReady(ctx, 10*time.Second, nil)
	var nn *NodeNotReadyError
	if !errors.As(err, &nn) || !strings.Contains(err.Error(), "node node2: Ready=Unknown for 3") {
		t.Fatalf("WaitReady = %v, want a NodeNotReadyError naming node2 past its grace", err)
	}
	if moved := fc.Since(start); moved < nodeGrace || moved > nodeGrace+2*resync {
		t.Errorf("the fake clock moved %v, want nodeGrace (%v) and at most two resyncs more", moved, nodeGrace)
	}
}
