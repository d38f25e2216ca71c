package target

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kube"
)

func TestPodProblem(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want string // substring; "" = ready
	}{
		{"ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, ""},
		{"terminating", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Conditions: ready}}, "terminating"},
		{"unschedulable", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient cpu.",
		}}}}, "Pending, not scheduled: Unschedulable: 0/2 nodes are available: 2 Insufficient cpu."},
		{"image pull", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: notReady, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "frontend", Image: "example.com/frontend:v1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
		}}}}, "container frontend: ImagePullBackOff for image example.com/frontend:v1: Back-off pulling image"},
		{"err image pull in init", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.31",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}},
		}}}}, "container istio-proxy: ErrImagePull for image docker.io/istio/proxyv2:1.31"},
		{"crash loop", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}},
		}}}}, "CrashLoopBackOff (4 restarts), last exit: OOMKilled (exit code 137)"},
		{"config error", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `configmap "x" not found`}},
		}}}}, `CreateContainerConfigError: configmap "x" not found`},
		{"probe failing", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}}}, "running but not ready"},
		{"creating", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}}}}, "Pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PodProblem(tc.pod)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("PodProblem = %q, want %q", got, tc.want)
			}
			// The readiness cache holds slim pods (kube.SlimPod): a full spec, slimmed, reads the same.
			fat := *tc.pod.DeepCopy()
			fat.Spec.Containers = []corev1.Container{{Name: "app", Image: "example.com/app:v1", Args: []string{"serve"},
				Env: []corev1.EnvVar{{Name: "PORT", Value: "8080"}}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}}}}
			fat.Spec.Volumes = []corev1.Volume{{Name: "data"}}
			slim, _ := kube.SlimPod(fat.DeepCopy())
			if a, b := PodProblem(fat), PodProblem(*slim.(*corev1.Pod)); a != b || a != got || markedByNode(fat) != markedByNode(*slim.(*corev1.Pod)) {
				t.Errorf("a slim pod reads differently: full %q, slim %q, plain %q", a, b, got)
			}
		})
	}
}

func TestDeploymentAndStatefulSetReady(t *testing.T) {
	t.Parallel()
	two := int32(2)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.DeploymentSpec{Replicas: &two},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}}
	if ok, why := DeploymentReady(d); !ok {
		t.Errorf("rolled out deployment not ready: %s", why)
	}
	old := d.DeepCopy()
	old.Status.ObservedGeneration = 2
	if ok, _ := DeploymentReady(old); ok {
		t.Error("a deployment whose controller has not seen the latest generation is not ready")
	}
	surge := d.DeepCopy()
	surge.Status.Replicas = 3
	if ok, why := DeploymentReady(surge); ok || !strings.Contains(why, "old replicas") {
		t.Errorf("old pods still around: ok=%v why=%q", ok, why)
	}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.StatefulSetSpec{Replicas: &two},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "a", UpdateRevision: "a"}}
	if ok, why := StatefulSetReady(s); !ok {
		t.Errorf("statefulset not ready: %s", why)
	}
	s.Status.UpdateRevision = "b"
	if ok, _ := StatefulSetReady(s); ok {
		t.Error("statefulset rolling to a new revision is not ready")
	}
}
