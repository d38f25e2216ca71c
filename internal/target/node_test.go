package target

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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
		if got := NodeProblem(n, now, NodeGrace); got != tc.want {
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
		_, err := WaitReady(context.Background(), kc, tg, tc.timeout, nil)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
		var nn *NodeNotReadyError
		if errors.As(err, &nn) != (tc.since > NodeGrace) {
			t.Errorf("%s: NodeNotReadyError %v, want %v", tc.name, errors.As(err, &nn), tc.since > NodeGrace)
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
	go func() {
		_, err := WaitReady(context.Background(), kc, tg, time.Minute, nil)
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
