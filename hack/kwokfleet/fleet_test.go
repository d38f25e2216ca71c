package kwokfleet

import (
	"context"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// Two tools' fleets differ in run label and taint; a pod with the fleet's toleration and node selector lands on its
// nodes (the taint is tolerated, the labels match) and the pod CIDRs are the nodes' own.
func TestNodeAndToleration(t *testing.T) {
	f := Fleet{Label: "meshbench.dev/mesh-scale", RunID: "r1", TaintKey: "meshbench.dev/mesh-scale"}
	n, err := f.Node(2)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "mb-kwok-002" || n.Spec.PodCIDR != "10.244.102.0/24" || n.Labels["meshbench.dev/mesh-scale"] != "r1" {
		t.Errorf("node %s cidr %s labels %v", n.Name, n.Spec.PodCIDR, n.Labels)
	}
	tol := f.Toleration()
	for _, taint := range n.Spec.Taints {
		if !tol.ToleratesTaint(klog.Background(), &taint, false) {
			t.Errorf("toleration %v does not tolerate %v", tol, taint)
		}
	}
	for k, v := range NodeSelector() {
		if n.Labels[k] != v {
			t.Errorf("node selector %s=%s does not match", k, v)
		}
	}
	if _, err := f.Node(MaxNodes); err == nil {
		t.Error("node beyond the pod CIDRs: no error")
	}
	if NodesFor(1000, 200) != 5 || NodesFor(1001, 200) != 6 || NodesFor(0, 200) != 1 {
		t.Error("NodesFor")
	}
}

// CleanupNodes removes the fleet's nodes of any run, the pods bound to them and their leases, and nothing else.
func TestCleanupNodes(t *testing.T) {
	f := Fleet{Label: "meshbench.dev/mesh-scale", RunID: "new", TaintKey: "meshbench.dev/mesh-scale"}
	old := f
	old.RunID = "old"
	n0, _ := old.Node(0)
	objs := []runtime.Object{n0,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ztunnel-a", Namespace: "istio-system"}, Spec: corev1.PodSpec{NodeName: NodeName(0)}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ztunnel-b", Namespace: "istio-system"}, Spec: corev1.PodSpec{NodeName: "node1"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: NodeName(0), Namespace: corev1.NamespaceNodeLease}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: NodeName(7), Namespace: corev1.NamespaceNodeLease}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node1", Namespace: corev1.NamespaceNodeLease}},
	}
	f.Kube = fake.NewClientset(objs...)
	ctx := context.Background()
	left, err := f.Leftovers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node mb-kwok-000", "pod istio-system/ztunnel-a on mb-kwok-000", "lease kube-node-lease/mb-kwok-000", "lease kube-node-lease/mb-kwok-007"}
	if !slices.Equal(left, want) {
		t.Errorf("Leftovers = %v, want %v", left, want)
	}
	if err := f.CleanupNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := f.Leftovers(ctx, nil); len(left) != 0 {
		t.Errorf("after CleanupNodes: %v", left)
	}
	if _, err := f.Kube.CoreV1().Pods("istio-system").Get(ctx, "ztunnel-b", metav1.GetOptions{}); err != nil {
		t.Errorf("the real node's pod was deleted: %v", err)
	}
	if _, err := f.Kube.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{}); err != nil {
		t.Errorf("the real node was deleted: %v", err)
	}
	if ls, _ := f.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{}); len(ls.Items) != 1 || !strings.HasPrefix(ls.Items[0].Name, "node1") {
		t.Errorf("leases left %v, want node1's only", ls.Items)
	}
}
