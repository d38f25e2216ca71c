package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// A killed earlier run left namespaces, pods, fake nodes (one with a ztunnel DaemonSet pod) and a lease: Cleanup
// removes all of it and nothing else (a real node, its pods, another namespace and lease stay).
func TestCleanupRemovesLeftoversOnly(t *testing.T) {
	old := metav1.NewTime(time.Now().Add(-time.Minute))
	n0, _ := FakeNode("old", 0)
	n1, _ := FakeNode("old", 1)
	objs := []runtime.Object{
		n0, n1,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}},
		Namespace("old", NamespaceName(NamespacePrefix, 0), "istio-injection", "enabled"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "svc-0000-a", Namespace: NamespaceName(NamespacePrefix, 0), Labels: Labels("old", nil), DeletionTimestamp: &old, Finalizers: []string{"x"}},
			Spec: corev1.PodSpec{NodeName: NodeName(0)}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ztunnel-abc", Namespace: "istio-system"}, Spec: corev1.PodSpec{NodeName: NodeName(1)}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ztunnel-real", Namespace: "istio-system"}, Spec: corev1.PodSpec{NodeName: "node1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "istiod-x", Namespace: "istio-system"}, Spec: corev1.PodSpec{NodeName: "node1"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: NodeName(0), Namespace: corev1.NamespaceNodeLease}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node1", Namespace: corev1.NamespaceNodeLease}},
	}
	kc := fake.NewClientset(objs...)
	c := &Cluster{Kube: kc, RunID: "new", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	left, err := c.Leftovers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"namespace mb-istiod-scale-00", "node mb-kwok-000", "node mb-kwok-001", "pod mb-istiod-scale-00/svc-0000-a on mb-kwok-000",
		"pod istio-system/ztunnel-abc on mb-kwok-001", "lease kube-node-lease/mb-kwok-000"}
	for _, w := range want {
		if !slices.Contains(left, w) {
			t.Errorf("Leftovers misses %q: %v", w, left)
		}
	}
	if len(left) != len(want) {
		t.Errorf("Leftovers = %v, want exactly %v", left, want)
	}
	if err := c.Cleanup(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if left, err := c.Leftovers(ctx); err != nil || len(left) != 0 {
		t.Fatalf("after Cleanup: %v, %v", left, err)
	}
	for _, p := range []string{"ztunnel-real", "istiod-x"} {
		if _, err := kc.CoreV1().Pods("istio-system").Get(ctx, p, metav1.GetOptions{}); err != nil {
			t.Errorf("Cleanup deleted pod %s, which is not the tool's: %v", p, err)
		}
	}
	if _, err := kc.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{}); err != nil {
		t.Errorf("Cleanup deleted the real node: %v", err)
	}
	if _, err := kc.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node1", metav1.GetOptions{}); err != nil {
		t.Errorf("Cleanup deleted the real node's lease: %v", err)
	}
	if _, err := kc.CoreV1().Namespaces().Get(ctx, "istio-system", metav1.GetOptions{}); err != nil {
		t.Errorf("Cleanup deleted istio-system: %v", err)
	}
}
