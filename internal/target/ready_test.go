package target

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

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
	if ok, why := statefulSetReady(s); !ok {
		t.Errorf("statefulset not ready: %s", why)
	}
	s.Status.UpdateRevision = "b"
	if ok, _ := statefulSetReady(s); ok {
		t.Error("statefulset rolling to a new revision is not ready")
	}
}

// rolledOutFixture is a Deployment web (2 replicas) restarted at "t2" whose controller has seen the spec but not yet
// reported the rollout, and its two new pods, Ready; the injector rewrote their prometheus.io annotations.
func rolledOutFixture() (*appsv1.Deployment, []*corev1.Pod) {
	two := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 4},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"},
					Annotations: map[string]string{RestartedAtAnnotation: "t2", "prometheus.io/port": "8080"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:v1"}}}}},
		// What the Deployment reports while its controller has not synced the end of the rollout yet.
		Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2},
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
				Labels:      map[string]string{"app": "web", "tier": "front", "pod-template-hash": "new", "security.istio.io/tlsMode": "istio"},
				Annotations: map[string]string{RestartedAtAnnotation: "t2", "prometheus.io/port": "15020", "sidecar.istio.io/status": "{}"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:v1"},
				{Name: "istio-proxy", Image: "registry.example/proxyv2:1.31"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	return d, []*corev1.Pod{pod("web-new-a"), pod("web-new-b")}
}

func TestPodsRolledOut(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		mutate func(d *appsv1.Deployment, pods []*corev1.Pod) []*corev1.Pod
		want   bool
	}{
		{"every pod new and Ready, the status behind", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod { return p }, true},
		{"another workload's pod is not counted", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			other := p[0].DeepCopy()
			other.Name, other.Labels = "db-0", map[string]string{"app": "db"}
			return append(p, other)
		}, true},
		{"an old pod still running", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			old := p[0].DeepCopy()
			old.Name, old.Annotations = "web-old-a", map[string]string{RestartedAtAnnotation: "t1"}
			return append(p, old)
		}, false},
		{"an old pod terminating", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			old := p[0].DeepCopy()
			old.Name, old.DeletionTimestamp = "web-old-a", &now
			return append(p, old)
		}, false},
		{"a new pod not Ready", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			p[1].Status.Conditions[0].Status = corev1.ConditionFalse
			return p
		}, false},
		{"one of two replicas", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod { return p[:1] }, false},
		{"surge: a third new pod", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			extra := p[0].DeepCopy()
			extra.Name = "web-new-c"
			return append(p, extra)
		}, false},
		{"the old image", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			p[0].Spec.Containers[0].Image = "registry.example/web:v0"
			return p
		}, false},
		{"a template label missing on a pod", func(_ *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			delete(p[1].Labels, "tier")
			return p
		}, false},
		{"never restarted, pods without the annotation", func(d *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			delete(d.Spec.Template.Annotations, RestartedAtAnnotation)
			for _, x := range p {
				delete(x.Annotations, RestartedAtAnnotation)
			}
			return p
		}, true},
		{"the controller has not seen the spec", func(d *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			d.Status.ObservedGeneration = 3
			return p
		}, false},
		{"minReadySeconds is the controller's to judge", func(d *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			d.Spec.MinReadySeconds = 10
			return p
		}, false},
		{"paused", func(d *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			d.Spec.Paused = true
			return p
		}, false},
		{"progress deadline exceeded", func(d *appsv1.Deployment, p []*corev1.Pod) []*corev1.Pod {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
			return p
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, pods := rolledOutFixture()
			pods = tc.mutate(d, pods)
			if got := podsRolledOut(d, pods); got != tc.want {
				t.Errorf("podsRolledOut = %v, want %v", got, tc.want)
			}
			if ok, _ := DeploymentReady(d); ok {
				t.Fatal("fixture: the Deployment's status must not yet say rolled out")
			}
		})
	}
}

// TestCacheWaitReadyOnThePods: a wait on the informer cache ends when the pods show the rollout done although the
// Deployment's status still lags, and not while an old replica is left.
func TestCacheWaitReadyOnThePods(t *testing.T) {
	t.Parallel()
	d, pods := rolledOutFixture()
	tg := Target{App: "shop", Topology: "single", Namespaces: []string{"shop"}, AppSelector: "app=web",
		Workloads: []WorkloadRef{{Kind: KindDeployment, Namespace: "shop", Name: "web"}}}
	objs := []runtime.Object{d, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	for _, p := range pods {
		objs = append(objs, p)
	}
	old := pods[0].DeepCopy()
	old.Name, old.Annotations = "web-old-a", map[string]string{RestartedAtAnnotation: "t1"}
	kc := fake.NewClientset(append(objs, old)...)
	ctx := t.Context()
	c := NewCache(kc, tg)
	c.Start(ctx)
	defer c.Stop()
	_, err := c.WaitReady(ctx, 2*time.Second, nil)
	var nre *NotReadyError
	if !errors.As(err, &nre) || !strings.Contains(err.Error(), "old replicas") {
		t.Fatalf("with an old replica left: want a NotReadyError naming the old replicas, got %v", err)
	}
	if err := kc.CoreV1().Pods("shop").Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := c.WaitReady(ctx, 10*time.Second, nil)
	if err != nil || !r.Ready() || r.ReadyPods != 2 {
		t.Fatalf("pods rolled out, status behind: want ready with 2 pods, got %+v, %v", r, err)
	}
}
