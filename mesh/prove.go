package mesh

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Observed data-plane states of a pod.
const (
	observedNone            = "none"
	observedSidecar         = "sidecar"
	observedSidecarNotReady = "sidecar-not-ready"
	observedAmbient         = "ambient"
	ObservedAmbientPending  = "ambient-pending"
	observedTerminating     = "terminating"
)

// PodProof is the evidence that one pod is (or is not) in the expected mode.
type PodProof struct {
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Node      string        `json:"node,omitempty"`
	Mode      scenario.Mode `json:"mode"`
	// Proved is true when the pod shows exactly the expected data plane.
	Proved bool `json:"proved"`
	// Observed is what the pod shows: none | sidecar | sidecar-not-ready | ambient | ambient-pending | terminating
	// (sidecar wins over an ambient annotation, as in Istio).
	Observed string `json:"observed"`
	// NativeSidecar is true when istio-proxy runs as a native sidecar (init container, restartPolicy Always).
	NativeSidecar bool `json:"nativeSidecar,omitempty"`
	// Ready is the pod's Ready condition (Verify also needs it; prove does not).
	Ready bool `json:"ready"`
	// StandIn is true when the pod is annotated as running a hack/ stand-in proxy.
	StandIn bool `json:"standIn,omitempty"`
	// DataPlane is what the pod's sidecar is (podDataPlane), when it has one.
	DataPlane results.DataPlaneKind `json:"dataPlane,omitempty"`
	// Evidence lists what was seen, e.g. "annotation sidecar.istio.io/status", "istio-proxy native sidecar ready".
	Evidence []string `json:"evidence,omitempty"`
	// Problem says, when not proved, what is wrong and what to fix.
	Problem string `json:"problem,omitempty"`
}

// prove decides from the pod alone whether it is in mode. It is pure.
func prove(mode scenario.Mode, pod corev1.Pod) PodProof {
	p := PodProof{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, Mode: mode, Ready: podReady(pod)}
	p.StandIn = pod.Annotations[StandInAnnotation] == "true"
	s := readPodSigns(pod)
	p.NativeSidecar = s.proxy.native
	p.Evidence = s.evidence()
	if s.sidecar() {
		p.DataPlane = podDataPlane(&pod)
	}
	p.Observed = s.observed(pod.DeletionTimestamp != nil)
	if p.Observed == observedTerminating {
		p.Problem = "pod is terminating (old replica of a rollout); wait until it is gone"
		return p
	}
	node := p.Node
	if node == "" {
		node = "(not scheduled)"
	}
	p.Proved, p.Problem = s.judge(mode, p.Observed, pod, node)
	return p
}

// podSigns are the marks of a data plane a pod carries: the injector's status annotation, the proxy container, and
// istio-cni's redirection annotation.
type podSigns struct {
	hasStatus, hasRedirection bool
	redirection               string
	proxy                     proxyInfo
}

func readPodSigns(pod corev1.Pod) podSigns {
	s := podSigns{proxy: findProxy(pod)}
	_, s.hasStatus = pod.Annotations[AnnotationSidecarStatus]
	s.redirection, s.hasRedirection = pod.Annotations[AnnotationRedirection]
	return s
}

func (s podSigns) sidecar() bool { return s.hasStatus || s.proxy.found }

// evidence says what was seen, in the order status annotation, proxy container, redirection annotation.
func (s podSigns) evidence() []string {
	var ev []string
	if s.hasStatus {
		ev = append(ev, "annotation "+AnnotationSidecarStatus)
	}
	switch {
	case s.proxy.found && s.proxy.native:
		ev = append(ev, fmt.Sprintf("%s native sidecar (init container, restartPolicy Always), ready=%v", ProxyContainer, s.proxy.ready))
	case s.proxy.found:
		ev = append(ev, fmt.Sprintf("%s container, ready=%v", ProxyContainer, s.proxy.ready))
	}
	if s.hasRedirection {
		ev = append(ev, AnnotationRedirection+"="+s.redirection)
	}
	return ev
}

// observed is the pod's data-plane state; a sidecar wins over an ambient annotation, as in Istio.
func (s podSigns) observed(terminating bool) string {
	switch {
	case terminating:
		return observedTerminating
	case s.sidecar() && s.hasStatus && s.proxy.found && s.proxy.ready:
		return observedSidecar
	case s.sidecar():
		return observedSidecarNotReady
	case s.hasRedirection && s.redirection == RedirectionEnabled:
		return observedAmbient
	case s.hasRedirection:
		return ObservedAmbientPending
	default:
		return observedNone
	}
}

// judge says whether a pod observed so is in mode, and when not, what is wrong and what to fix.
func (s podSigns) judge(mode scenario.Mode, observed string, pod corev1.Pod, node string) (bool, string) {
	switch mode {
	case scenario.ModeSidecar:
		return s.judgeSidecar(observed, pod, node)
	case scenario.ModeAmbient, scenario.ModeWaypoint:
		switch {
		case s.sidecar():
			return false, "pod has a sidecar, which wins over ambient: it must be re-created (rollout restart) without injection"
		case observed == observedAmbient:
			return true, ""
		case observed == ObservedAmbientPending:
			return false, fmt.Sprintf("%s=%s: partially captured, traffic blocked; is ztunnel running on node %s?", AnnotationRedirection, s.redirection, node)
		default:
			return false, fmt.Sprintf("not captured by ambient (no %s annotation): is istio-cni running on node %s, and does the namespace carry %s=ambient (and the pod no %s=none)?",
				AnnotationRedirection, node, LabelDataplaneMode, LabelDataplaneMode)
		}
	case scenario.ModeNone:
		switch {
		case s.sidecar():
			return false, "pod still has a sidecar: it must be re-created (rollout restart) after removing the injection label"
		case s.hasRedirection:
			return false, fmt.Sprintf("still captured by ambient (%s=%s): remove %s from the namespace; istio-cni removes the annotation within seconds", AnnotationRedirection, s.redirection, LabelDataplaneMode)
		default:
			return true, ""
		}
	default:
		return false, fmt.Sprintf("unknown mode %q", mode)
	}
}

func (s podSigns) judgeSidecar(observed string, pod corev1.Pod, node string) (bool, string) {
	switch {
	case observed == observedSidecar:
		return true, ""
	case !s.hasStatus && !s.proxy.found:
		return false, "no sidecar injected: the pod was created without injection. Is istiod's injection webhook installed " +
			"(kubectl get mutatingwebhookconfiguration istio-sidecar-injector) and does the namespace carry " +
			"istio-injection=enabled? Injection happens only at pod creation: restart the workload after labelling"
	case s.hasStatus && !s.proxy.found:
		return false, fmt.Sprintf("annotation %s present but no %s container (neither in containers nor as a native sidecar in initContainers)", AnnotationSidecarStatus, ProxyContainer)
	case !s.hasStatus:
		return false, fmt.Sprintf("%s container present but no %s annotation: not injected by Istio's webhook", ProxyContainer, AnnotationSidecarStatus)
	default:
		return false, fmt.Sprintf("%s is not ready on node %s: check `kubectl logs -n %s %s -c %s` (can it reach istiod?)", ProxyContainer, node, pod.Namespace, pod.Name, ProxyContainer)
	}
}

type proxyInfo struct{ found, native, ready bool }

// findProxy looks for istio-proxy in both spec lists (a classic container, or a native sidecar: an init container
// with restartPolicy Always) and its readiness in both status lists.
func findProxy(pod corev1.Pod) proxyInfo {
	var pi proxyInfo
	for _, c := range pod.Spec.Containers {
		if c.Name == ProxyContainer {
			pi.found = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == ProxyContainer && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			pi.found, pi.native = true, true
		}
	}
	if !pi.found {
		return pi
	}
	statuses := pod.Status.ContainerStatuses
	if pi.native {
		statuses = pod.Status.InitContainerStatuses
	}
	for _, s := range statuses {
		if s.Name == ProxyContainer {
			pi.ready = s.Ready
		}
	}
	return pi
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// summarize groups proofs by what was observed ("3 ambient, 1 ambient-pending") for messages.
func summarize(ps []PodProof) string {
	counts := map[string]int{}
	var order []string
	for _, p := range ps {
		if counts[p.Observed] == 0 {
			order = append(order, p.Observed)
		}
		counts[p.Observed]++
	}
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[o], o)
	}
	return strings.Join(parts, ", ")
}
