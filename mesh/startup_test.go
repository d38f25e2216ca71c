package mesh

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/results"
)

func TestPodStartup(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	cond := func(ty corev1.PodConditionType, s int) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: corev1.ConditionTrue, LastTransitionTime: at(s)}
	}
	running := func(name string, s int) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(s)}}}
	}
	pod := func(ann map[string]string, st corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", CreationTimestamp: at(0), Annotations: ann}, Status: st}
	}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		want       map[results.StartupPhase]float64
		redirected bool
	}{
		{"plain pod, two containers: the last one started counts", pod(nil, corev1.PodStatus{
			Conditions:        []corev1.PodCondition{cond(corev1.PodScheduled, 1), cond(corev1.PodInitialized, 1), cond(corev1.PodReady, 6)},
			ContainerStatuses: []corev1.ContainerStatus{running("app", 3), running("side", 4)},
		}), map[results.StartupPhase]float64{results.PhaseScheduled: 1, results.PhaseInitialized: 1, results.PhaseContainersStarted: 4, results.PhaseReady: 6}, false},
		{"native sidecar: istio-proxy among the init containers", pod(map[string]string{AnnotationSidecarStatus: "{}"}, corev1.PodStatus{
			Conditions:            []corev1.PodCondition{cond(corev1.PodScheduled, 0), cond(corev1.PodInitialized, 5), cond(corev1.PodReady, 9)},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "istio-validation"}, running(ProxyContainer, 3)},
			ContainerStatuses:     []corev1.ContainerStatus{running("app", 7)},
		}), map[results.StartupPhase]float64{results.PhaseScheduled: 0, results.PhaseInitialized: 5, results.PhaseProxyStarted: 3, results.PhaseContainersStarted: 7, results.PhaseReady: 9}, false},
		{"classic sidecar: istio-proxy a container, not counted as the app's", pod(nil, corev1.PodStatus{
			Conditions:        []corev1.PodCondition{cond(corev1.PodScheduled, 1)},
			ContainerStatuses: []corev1.ContainerStatus{running("app", 4), running(ProxyContainer, 8)},
		}), map[results.StartupPhase]float64{results.PhaseScheduled: 1, results.PhaseProxyStarted: 8, results.PhaseContainersStarted: 4}, false},
		{"ambient, not ready yet: a container waiting, Ready false", pod(map[string]string{AnnotationRedirection: RedirectionEnabled}, corev1.PodStatus{
			Conditions:        []corev1.PodCondition{cond(corev1.PodScheduled, 2), {Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(2)}},
			ContainerStatuses: []corev1.ContainerStatus{running("app", 4), {Name: "b"}},
		}), map[results.StartupPhase]float64{results.PhaseScheduled: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodStartup(tc.pod)
			if got.Pod != "ns/p" || got.UID != "u1" || !got.Created.Equal(t0) || got.Redirected != tc.redirected {
				t.Errorf("identity %+v", got)
			}
			if !reflect.DeepEqual(got.Seconds, tc.want) {
				t.Errorf("seconds %v, want %v", got.Seconds, tc.want)
			}
		})
	}
}
