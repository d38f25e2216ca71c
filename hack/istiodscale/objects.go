package main

import (
	"fmt"
	"log/slog"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/hack/kwokfleet"
	"github.com/meshbench/meshbench/internal/kube"
)

// Labels and names of what the tool creates.
const (
	// ScaleLabel marks every object of the tool (value: the run ID); its existence selects leftovers of any run.
	ScaleLabel = "meshbench.dev/istiod-scale"
	// FakeNodeLabel selects the fake nodes (kwokfleet).
	FakeNodeLabel = kwokfleet.FakeNodeLabel
	// Taint keeps every pod without its toleration off the fake nodes.
	TaintKey = "meshbench.dev/istiod-scale"
	// AppLabel selects a workload's pods (Deployment selector, Service selector).
	AppLabel = "app"
	// NodePrefix and NamespacePrefix name the fake nodes and the namespaces.
	NodePrefix      = kwokfleet.NodePrefix
	NamespacePrefix = "mb-istiod-scale"
	// ContainerPort is the app container's (never started) port, published by each Service as port 80.
	ContainerPort = 8080
)

// Selector selects every object of the tool, of any run.
func Selector() string { return ScaleLabel }

// Labels of one run's objects.
func Labels(runID string, extra map[string]string) map[string]string {
	return kube.MergeLabels(map[string]string{kube.ManagedByLabel: kube.ManagedByValue, ScaleLabel: runID}, extra)
}

// Fleet is the tool's fake nodes for run runID.
func Fleet(kc kubernetes.Interface, runID string, log *slog.Logger) kwokfleet.Fleet {
	return kwokfleet.Fleet{Kube: kc, Label: ScaleLabel, RunID: runID, TaintKey: TaintKey, Log: log}
}

// NodeName is the i-th fake node.
func NodeName(i int) string { return kwokfleet.NodeName(i) }

// FakeNode is the i-th fake node of run runID (kwokfleet.Fleet.Node).
func FakeNode(runID string, i int) (*corev1.Node, error) { return Fleet(nil, runID, nil).Node(i) }

// NodeStatus is the fake nodes' capacity (kwokfleet.NodeStatus).
func NodeStatus(maxPods int) corev1.NodeStatus { return kwokfleet.NodeStatus(maxPods) }

// KwokArgs are kwok's flags (kwokfleet.KwokArgs).
func KwokArgs(kubeconfig, stagesFile string) []string {
	return kwokfleet.KwokArgs(kubeconfig, stagesFile)
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
					NodeSelector:                  kwokfleet.NodeSelector(),
					Tolerations:                   []corev1.Toleration{Fleet(nil, runID, nil).Toleration()},
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
