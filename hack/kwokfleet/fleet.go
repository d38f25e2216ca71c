package kwokfleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/kube"
)

const (
	// FakeNodeLabel selects the fake nodes: kwok manages exactly these (--manage-nodes-with-label-selector), the
	// fleet's pods select them.
	FakeNodeLabel = "meshbench.dev/kwok-node"
	// NodePrefix names the fake nodes (NodeName).
	NodePrefix = "mb-kwok"
	// kwokAnnotation is the annotation kwok's docs put on fake nodes (kwok-manage-nodes-and-pods.md); the label is
	// what selects them here, the annotation says what they are to anyone reading the node.
	kwokAnnotation = "kwok.x-k8s.io/node"
	// firstPodCIDR is the third octet of the first fake node's pod CIDR in the local cluster's 10.244.0.0/16
	// (hack/localcluster/lib.sh: node1 10.244.0.0/24, node2 10.244.1.0/24); the controller-manager's range allocator
	// marks a pre-set podCIDR inside its cluster CIDR as used. kwok assigns pod IPs from the node's podCIDR (and from
	// its single --cidr when a node has none, which 2000 pods would exhaust).
	firstPodCIDR = 100
	// MaxNodes is how many fake nodes fit the pod CIDRs.
	MaxNodes = 256 - firstPodCIDR
)

// Fleet is one tool's fake nodes.
type Fleet struct {
	Kube kubernetes.Interface
	// Label marks every object of the tool (value: RunID); its existence selects leftovers of any run.
	Label, RunID string
	// TaintKey is the NoSchedule taint of the nodes (value "kwok"); Toleration tolerates it.
	TaintKey string
	Log      *slog.Logger
}

// Labels are the labels of the fleet's objects, with extra.
func (f Fleet) Labels(extra map[string]string) map[string]string {
	return kube.MergeLabels(map[string]string{kube.ManagedByLabel: kube.ManagedByValue, f.Label: f.RunID}, extra)
}

// Toleration lets a pod onto the fleet's nodes.
func (f Fleet) Toleration() corev1.Toleration {
	return corev1.Toleration{Key: f.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}

// NodeSelector selects the fleet's nodes.
func NodeSelector() map[string]string { return map[string]string{FakeNodeLabel: "true"} }

// NodeName is the i-th fake node.
func NodeName(i int) string { return fmt.Sprintf("%s-%03d", NodePrefix, i) }

// Node is the i-th fake node: labelled for kwok, tainted NoSchedule, with a /24 pod CIDR of its own. Its capacity
// (status) is set by NodeStatus after creation. It is pure.
func (f Fleet) Node(i int) (*corev1.Node, error) {
	if i < 0 || i >= MaxNodes {
		return nil, fmt.Errorf("fake node %d: at most %d fake nodes fit the pod CIDRs 10.244.%d-255.0/24", i, MaxNodes, firstPodCIDR)
	}
	name := NodeName(i)
	cidr := fmt.Sprintf("10.244.%d.0/24", firstPodCIDR+i)
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: f.Labels(map[string]string{
				FakeNodeLabel:                   "true",
				"type":                          "kwok",
				corev1.LabelHostname:            name,
				corev1.LabelOSStable:            "linux",
				corev1.LabelArchStable:          "amd64",
				"node-role.kubernetes.io/agent": "",
			}),
			Annotations: map[string]string{kwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  cidr,
			PodCIDRs: []string{cidr},
			Taints:   []corev1.Taint{{Key: f.TaintKey, Value: "kwok", Effect: corev1.TaintEffectNoSchedule}},
		},
	}, nil
}

// NodeStatus is the capacity the fake nodes advertise: kwok's node-initialize stage keeps a status.allocatable and
// status.capacity that are set (and writes 1k CPUs, 1Ti, 1M pods otherwise). maxPods caps the pods the scheduler
// puts on one node below the 254 addresses of its /24.
func NodeStatus(maxPods int) corev1.NodeStatus {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
	return corev1.NodeStatus{Capacity: rl, Allocatable: rl.DeepCopy()}
}

// NodesFor is how many fake nodes hold pods at podsPerNode.
func NodesFor(pods, podsPerNode int) int { return max(1, (pods+podsPerNode-1)/podsPerNode) }

// CreateNodes creates n fake nodes and sets their capacity (before kwok starts, so kwok's node-initialize keeps it).
func (f Fleet) CreateNodes(ctx context.Context, n, maxPods int) error {
	st := NodeStatus(maxPods)
	for i := range n {
		node, err := f.Node(i)
		if err != nil {
			return err
		}
		if _, err := f.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("create fake node %s: %w", node.Name, err)
		}
		patch := fmt.Sprintf(`{"status":{"capacity":{"cpu":%q,"memory":%q,"pods":%q},"allocatable":{"cpu":%q,"memory":%q,"pods":%q}}}`,
			st.Capacity.Cpu().String(), st.Capacity.Memory().String(), st.Capacity.Pods().String(),
			st.Allocatable.Cpu().String(), st.Allocatable.Memory().String(), st.Allocatable.Pods().String())
		if _, err := f.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("set capacity of fake node %s: %w", node.Name, err)
		}
	}
	return nil
}

// WaitNodesReady waits until the n fake nodes are Ready (kwok's node-initialize stage) and kwok still runs.
func (f Fleet) WaitNodesReady(ctx context.Context, n int, timeout time.Duration, k *Kwok) error {
	var last string
	err := kube.Wait{Timeout: timeout, Interval: 2 * time.Second}.Until(ctx, func(ctx context.Context) (bool, error) {
		if err, exited := k.Exited(); exited {
			return false, fmt.Errorf("kwok exited (see kwok.log): %w", err)
		}
		nodes, err := f.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FakeNodeLabel + "=true," + f.Label + "=" + f.RunID})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d fake nodes Ready", ready, n)
		return ready == n, nil
	})
	if err != nil {
		return fmt.Errorf("fake nodes: %s: %w", last, err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CleanupNodes removes the fleet's nodes of any run (by the existence of Label), the pods still bound to them
// (DaemonSet pods; force-deleted) and the fake nodes' leases. It tries every step and returns every failure.
func (f Fleet) CleanupNodes(ctx context.Context) error {
	var errs []error
	nodes, err := f.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: f.Label})
	if err != nil {
		errs = append(errs, fmt.Errorf("list nodes: %w", err))
	}
	var nodeNames []string
	if nodes != nil {
		for _, n := range nodes.Items {
			nodeNames = append(nodeNames, n.Name)
		}
	}
	for _, n := range nodeNames {
		if err := f.Kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete node %s: %w", n, err))
		}
	}
	for _, n := range nodeNames {
		if err := ForceDeletePods(ctx, f.Kube, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()}, 0,
			func(p *corev1.Pod) bool { return p.Spec.NodeName == n }); err != nil {
			errs = append(errs, err)
		}
	}
	// kwok's node leases (owned by their nodes, so the garbage collector removes them too; a killed run may have
	// left some whose node is gone).
	leases, err := f.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, fmt.Errorf("list leases: %w", err))
	} else {
		for _, l := range leases.Items {
			if !strings.HasPrefix(l.Name, NodePrefix+"-") {
				continue
			}
			if err := f.Kube.CoordinationV1().Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete lease %s: %w", l.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ForceDeletePods deletes the listed pods with grace period 0. With stuck > 0 only pods already terminating for
// longer than stuck are taken: while kwok runs, its pod-delete stage finishes graceful deletions itself. match
// re-checks each listed pod (the selector alone decides nothing that is deleted without a grace period).
func ForceDeletePods(ctx context.Context, kc kubernetes.Interface, opts metav1.ListOptions, stuck time.Duration, match func(*corev1.Pod) bool) error {
	pods, err := kc.CoreV1().Pods("").List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	zero := int64(0)
	var errs []error
	for i := range pods.Items {
		p := &pods.Items[i]
		if !match(p) {
			continue
		}
		if stuck > 0 && (p.DeletionTimestamp == nil || time.Since(p.DeletionTimestamp.Time) < stuck) {
			continue
		}
		if err := kc.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists the fleet's nodes of any run, the pods bound to fake nodes or matched by ours, and the fake
// nodes' leases (empty when clean).
func (f Fleet) Leftovers(ctx context.Context, ours func(*corev1.Pod) bool) ([]string, error) {
	var out []string
	nodes, err := f.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: f.Label})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range nodes.Items {
		out = append(out, "node "+n.Name)
	}
	pods, err := f.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		if (ours != nil && ours(&p)) || strings.HasPrefix(p.Spec.NodeName, NodePrefix+"-") {
			out = append(out, "pod "+p.Namespace+"/"+p.Name+" on "+p.Spec.NodeName)
		}
	}
	leases, err := f.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, NodePrefix+"-") {
			out = append(out, "lease "+l.Namespace+"/"+l.Name)
		}
	}
	return out, nil
}
