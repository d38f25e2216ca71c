package main

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/hack/kwokfleet"
)

const (
	// ScaleLabel marks every object of the harness (value: the run ID); its existence selects leftovers of any run.
	ScaleLabel = "meshbench.dev/mesh-scale"
	// TaintKey is the fake nodes' taint.
	TaintKey = "meshbench.dev/mesh-scale"
	// NamespacePrefix names the namespaces (mb-scale-00 ...).
	NamespacePrefix = "mb-scale"
	// TargetName is the one real workload (a meshbench-agent server on a real node) the load goes to: the fake
	// pods run nothing, so no request could reach them.
	TargetName = "frontend"
	// TargetPort is its HTTP port (workloads.chainHTTPPort).
	TargetPort = 8080
	// AppLabel selects a workload's pods.
	AppLabel = "app"
)

// Fleet is the harness' fake nodes.
func Fleet(kc kubernetes.Interface, runID string) kwokfleet.Fleet {
	return kwokfleet.Fleet{Kube: kc, Label: ScaleLabel, RunID: runID, TaintKey: TaintKey}
}

// Workload is one Deployment (and its Service) of fake pods.
type Workload struct {
	Namespace, Name string
	Replicas        int
}

// Layout spreads pods over namespaces in Deployments of podsPerWorkload (the last one takes the rest), round robin,
// so every namespace holds pods when there are enough. It is pure.
func Layout(pods, namespaces, podsPerWorkload int) []Workload {
	var out []Workload
	for i := 0; pods > 0; i++ {
		n := min(podsPerWorkload, pods)
		out = append(out, Workload{Namespace: NamespaceName(i % namespaces), Name: fmt.Sprintf("svc-%04d", i), Replicas: n})
		pods -= n
	}
	return out
}

// NamespaceName is the i-th namespace.
func NamespaceName(i int) string { return fmt.Sprintf("%s-%02d", NamespacePrefix, i) }

// appLabels are the labels of the app's objects: the run's, without app.kubernetes.io/managed-by=meshbench, which
// would make them meshbench's own objects rather than the user's (workloads.ExistingAppSelector leaves those out).
func appLabels(f kwokfleet.Fleet, extra map[string]string) map[string]string {
	out := map[string]string{ScaleLabel: f.RunID}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// Namespace is one namespace of the app (no mode label: meshbench sets it per mode and restores it).
func Namespace(f kwokfleet.Fleet, name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: appLabels(f, nil)}}
}

// Deployment is a workload of fake pods: they select and tolerate only the fake nodes; one container that never
// runs (kwok fakes its status); the injector adds istio-proxy in sidecar mode.
func Deployment(f kwokfleet.Fleet, w Workload, image string) *appsv1.Deployment {
	replicas := int32(w.Replicas)
	zero := int64(0)
	history := int32(1)
	lbl := map[string]string{AppLabel: w.Name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: appLabels(f, lbl)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, RevisionHistoryLimit: &history,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: appLabels(f, lbl)},
				Spec: corev1.PodSpec{
					NodeSelector:                  kwokfleet.NodeSelector(),
					Tolerations:                   []corev1.Toleration{f.Toleration()},
					TerminationGracePeriodSeconds: &zero,
					Containers: []corev1.Container{{
						Name: "app", Image: image,
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: TargetPort, Protocol: corev1.ProtocolTCP}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Mi")}},
					}},
				},
			},
		},
	}
}

// Service publishes a workload's pods (port 80 -> 8080, named http).
func Service(f kwokfleet.Fleet, ns, name string, port int) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: appLabels(f, map[string]string{AppLabel: name})},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{AppLabel: name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: int32(port), TargetPort: intstr.FromInt32(TargetPort), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// Target is the real load target: meshbench-agent's server (as a fortio-chain leaf runs it) on a real node (it does
// not tolerate the fake nodes' taint), so the load clients measure a real path while the other pods are fake.
func Target(f kwokfleet.Fleet, ns, image string) *appsv1.Deployment {
	one := int32(1)
	grace := int64(5)
	lbl := map[string]string{AppLabel: TargetName}
	nonRoot := true
	uid := int64(65532)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: TargetName, Namespace: ns, Labels: appLabels(f, lbl)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: appLabels(f, lbl)},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &uid},
					Containers: []corev1.Container{{
						Name: "app", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Args:  []string{"serve", "--http-port", strconv.Itoa(TargetPort)},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: TargetPort, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(TargetPort)}},
							PeriodSeconds: 2},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
					}},
				},
			},
		},
	}
}

// Objects are everything the harness applies: the namespaces, the fake workloads with their Services, the real
// target and its Service in the first namespace. It is pure.
func Objects(f kwokfleet.Fleet, pods, namespaces, podsPerWorkload int, image, targetImage string) []runtime.Object {
	var out []runtime.Object
	for i := range namespaces {
		out = append(out, Namespace(f, NamespaceName(i)))
	}
	for _, w := range Layout(pods, namespaces, podsPerWorkload) {
		out = append(out, Service(f, w.Namespace, w.Name, 80), Deployment(f, w, image))
	}
	return append(out, Service(f, NamespaceName(0), TargetName, TargetPort), Target(f, NamespaceName(0), targetImage))
}
