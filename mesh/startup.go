package mesh

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/results"
)

// PodStartup is pod p's start as far as it got: the seconds from its creation to scheduling, initialization, the
// istio-proxy container running (injected sidecar, as an init container with restartPolicy Always or as a container),
// the last other container running and Ready, and whether istio-cni redirected it. A phase not reached yet is absent.
// It is pure.
func PodStartup(p *corev1.Pod) results.PodStartup {
	created := p.CreationTimestamp.Time
	out := results.PodStartup{
		Pod: p.Namespace + "/" + p.Name, UID: string(p.UID), Created: created.UTC(),
		Seconds:    map[results.StartupPhase]float64{},
		Redirected: p.Annotations[AnnotationRedirection] == RedirectionEnabled,
	}
	since := func(t time.Time) float64 { return t.Sub(created).Seconds() }
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			out.Seconds[results.PhaseScheduled] = since(c.LastTransitionTime.Time)
		case corev1.PodInitialized:
			out.Seconds[results.PhaseInitialized] = since(c.LastTransitionTime.Time)
		case corev1.PodReady:
			out.Seconds[results.PhaseReady] = since(c.LastTransitionTime.Time)
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == ProxyContainer && cs.State.Running != nil {
			out.Seconds[results.PhaseProxyStarted] = since(cs.State.Running.StartedAt.Time)
		}
	}
	var last time.Time
	all := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Running == nil:
			all = false
		case cs.Name == ProxyContainer:
			out.Seconds[results.PhaseProxyStarted] = since(cs.State.Running.StartedAt.Time)
		case cs.State.Running.StartedAt.After(last):
			last = cs.State.Running.StartedAt.Time
		}
	}
	if all && !last.IsZero() {
		out.Seconds[results.PhaseContainersStarted] = since(last)
	}
	return out
}
