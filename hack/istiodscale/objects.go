package main

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshbench/meshbench/internal/kube"
)

// Labels and names of what the tool creates.
const (
	// ScaleLabel marks every object of the tool (value: the run ID); its existence selects leftovers of any run.
	ScaleLabel = "meshbench.dev/istiod-scale"
	// FakeNodeLabel selects the fake nodes: kwok manages exactly these (--manage-nodes-with-label-selector), the
	// tool's pods select them.
	FakeNodeLabel = "meshbench.dev/kwok-node"
	// Taint keeps every pod without its toleration off the fake nodes.
	TaintKey = "meshbench.dev/istiod-scale"
	// AppLabel selects a workload's pods (Deployment selector, Service selector).
	AppLabel = "app"
	// NodePrefix and NamespacePrefix name the fake nodes and the namespaces.
	NodePrefix      = "mb-kwok"
	NamespacePrefix = "mb-istiod-scale"
	// kwokAnnotation is the annotation kwok's docs put on fake nodes (kwok-manage-nodes-and-pods.md); the label is
	// what selects them here, the annotation says what they are to anyone reading the node.
	kwokAnnotation = "kwok.x-k8s.io/node"
	// firstPodCIDR is the third octet of the first fake node's pod CIDR in the local cluster's 10.244.0.0/16
	// (hack/localcluster/lib.sh: node1 10.244.0.0/24, node2 10.244.1.0/24); the controller-manager's range allocator
	// marks a pre-set podCIDR inside its cluster CIDR as used. kwok assigns pod IPs from the node's podCIDR (and from
	// its single --cidr when a node has none, which 2000 pods would exhaust).
	firstPodCIDR = 100
	maxFakeNodes = 256 - firstPodCIDR
	// ContainerPort is the app container's (never started) port, published by each Service as port 80.
	ContainerPort = 8080
)

// Selector selects every object of the tool, of any run.
func Selector() string { return ScaleLabel }

// Labels of one run's objects.
func Labels(runID string, extra map[string]string) map[string]string {
	return kube.MergeLabels(map[string]string{kube.ManagedByLabel: kube.ManagedByValue, ScaleLabel: runID}, extra)
}

// NodeName is the i-th fake node.
func NodeName(i int) string { return fmt.Sprintf("%s-%03d", NodePrefix, i) }

// FakeNode is the i-th fake node: labelled for kwok, tainted NoSchedule, with a /24 pod CIDR of its own. Its
// capacity (status) is set by NodeStatus after creation.
func FakeNode(runID string, i int) (*corev1.Node, error) {
	if i < 0 || i >= maxFakeNodes {
		return nil, fmt.Errorf("fake node %d: at most %d fake nodes fit the pod CIDRs 10.244.%d-255.0/24", i, maxFakeNodes, firstPodCIDR)
	}
	name := NodeName(i)
	cidr := fmt.Sprintf("10.244.%d.0/24", firstPodCIDR+i)
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: Labels(runID, map[string]string{
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
			Taints:   []corev1.Taint{{Key: TaintKey, Value: "kwok", Effect: corev1.TaintEffectNoSchedule}},
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

// ParseLabel reads "key=value" (the injection label of the namespaces).
func ParseLabel(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("label %q is not key=value", s)
	}
	return k, v, nil
}

// Namespace is one namespace of the mesh, labelled for sidecar injection (key=value, e.g. istio-injection=enabled).
func Namespace(runID, name, injectKey, injectValue string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: Labels(runID, map[string]string{injectKey: injectValue})},
	}
}

// Deployment is a workload's pods: they select and tolerate only the fake nodes, one container that never runs
// (kwok fakes its status), the injector adds istio-proxy.
func Deployment(runID string, w Workload, image string) *appsv1.Deployment {
	replicas := int32(w.Replicas)
	zero := int64(0)
	history := int32(1)
	podLabels := Labels(runID, map[string]string{AppLabel: w.Name})
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: Labels(runID, map[string]string{AppLabel: w.Name})},
		Spec: appsv1.DeploymentSpec{
			Replicas:             &replicas,
			RevisionHistoryLimit: &history,
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: w.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{FakeNodeLabel: "true"},
					Tolerations:                   []corev1.Toleration{{Key: TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					TerminationGracePeriodSeconds: &zero,
					Containers: []corev1.Container{{
						Name:  "app",
						Image: image,
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: ContainerPort, Protocol: corev1.ProtocolTCP}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Mi"),
						}},
					}},
				},
			},
		},
	}
}

// Service publishes a workload's pods (port 80 -> 8080, named http so istiod treats it as HTTP).
func Service(runID string, w Workload) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: Labels(runID, map[string]string{AppLabel: w.Name})},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{AppLabel: w.Name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(ContainerPort), Protocol: corev1.ProtocolTCP}},
		},
	}
}
