package kube

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestStripManagedFields(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	got, err := StripManagedFields(p)
	if err != nil || got.(*corev1.Pod).ManagedFields != nil || got.(*corev1.Pod).Name != "p" {
		t.Errorf("got %+v, %v", got, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p}
	if got, err := StripManagedFields(tomb); err != nil || got.(cache.DeletedFinalStateUnknown).Key != "ns/p" {
		t.Errorf("a tombstone: %+v, %v", got, err)
	}
}

// SlimPod drops what no readiness check or proof reads and keeps the rest (mesh and internal/target pin that their
// answers are the same on slim pods).
func TestSlimPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	fat := corev1.Container{Name: "istio-proxy", Image: "proxyv2", RestartPolicy: &always, Args: []string{"proxy", "sidecar"},
		Command: []string{"pilot-agent"}, Env: []corev1.EnvVar{{Name: "ISTIO_META_CLUSTER_ID", Value: "Kubernetes"}},
		EnvFrom: []corev1.EnvFromSource{{Prefix: "X"}}, VolumeMounts: []corev1.VolumeMount{{Name: "istio-envoy", MountPath: "/etc/istio/proxy"}},
		ReadinessProbe: &corev1.Probe{}, StartupProbe: &corev1.Probe{}, LivenessProbe: &corev1.Probe{}, Lifecycle: &corev1.Lifecycle{},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"sidecar.istio.io/status": "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "node1", InitContainers: []corev1.Container{fat}, Containers: []corev1.Container{{Name: "web", Env: fat.Env}},
			Volumes: []corev1.Volume{{Name: "istio-token"}}, EphemeralContainers: []corev1.EphemeralContainer{{}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{{Name: "istio-proxy", Ready: true, Image: "proxyv2"}}},
	}
	status := *p.Status.DeepCopy()
	got, err := SlimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*corev1.Pod)
	ic := s.Spec.InitContainers[0]
	if s.ManagedFields != nil || s.Spec.Volumes != nil || s.Spec.EphemeralContainers != nil || ic.Env != nil || ic.EnvFrom != nil ||
		ic.Args != nil || ic.Command != nil || ic.VolumeMounts != nil || ic.ReadinessProbe != nil || ic.StartupProbe != nil ||
		ic.LivenessProbe != nil || ic.Lifecycle != nil || ic.Resources.Requests != nil || s.Spec.Containers[0].Env != nil {
		t.Errorf("not slimmed: %+v", s)
	}
	if s.Name != "p" || s.Labels["app"] != "web" || s.Annotations["sidecar.istio.io/status"] != "{}" || s.Spec.NodeName != "node1" ||
		ic.Name != "istio-proxy" || ic.Image != "proxyv2" || ic.RestartPolicy == nil || s.Spec.Containers[0].Name != "web" ||
		!reflect.DeepEqual(s.Status, status) {
		t.Errorf("lost what proofs read: %+v", s)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	if got, err := SlimPod(ns); err != nil || got.(*corev1.Namespace).ManagedFields != nil {
		t.Errorf("another kind: %+v, %v", got, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p}
	if got, err := SlimPod(tomb); err != nil || got.(cache.DeletedFinalStateUnknown).Key != "ns/p" {
		t.Errorf("a tombstone: %+v, %v", got, err)
	}
}
