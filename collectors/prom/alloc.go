package prom

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

const proxyContainer = "istio-proxy"

// containerFilter says which containers of a pod a set measures (by name), mirroring the set's usage matcher.
type containerFilter func(name string) bool

var (
	allContainers containerFilter = func(string) bool { return true }
	onlyProxy     containerFilter = func(n string) bool { return n == proxyContainer }
	notProxy      containerFilter = func(n string) bool { return n != proxyContainer }
)

// running are the containers of p that hold resources for the pod's lifetime: the regular containers and the native
// sidecars (init containers with restartPolicy Always: Istio 1.24+ renders istio-proxy so with native sidecars on).
func running(p corev1.Pod) []corev1.Container {
	out := append([]corev1.Container{}, p.Spec.Containers...)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

// addPod adds the requests and limits of p's running containers that keep selects to a. It is pure.
func addPod(a *podset.Allocation, p corev1.Pod, keep containerFilter) {
	n := 0
	for _, c := range running(p) {
		if !keep(c.Name) {
			continue
		}
		n++
		r := c.Resources
		if q, ok := r.Requests[corev1.ResourceCPU]; ok {
			a.CPURequest += float64(q.MilliValue())
		}
		if q, ok := r.Requests[corev1.ResourceMemory]; ok {
			a.MemoryRequest += float64(q.Value()) / (1 << 20)
		}
		if q, ok := r.Limits[corev1.ResourceCPU]; ok {
			a.CPULimit += float64(q.MilliValue())
		} else {
			a.CPUNoLimit++
		}
		if q, ok := r.Limits[corev1.ResourceMemory]; ok {
			a.MemoryLimit += float64(q.Value()) / (1 << 20)
		} else {
			a.MemoryNoLimit++
		}
	}
	if n > 0 {
		a.Pods++
		a.Containers += n
	}
}

// reservationNote says when the scheduler reserves more for p than its running containers ask for (a one-shot init
// container asking for more, Kubernetes' effective-request rule, or a RuntimeClass overhead): capacity no figure
// shows. "" when neither applies. It is pure.
func reservationNote(p corev1.Pod) string {
	var notes []string
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		var sum, sidecars, initMax int64
		val := func(c corev1.Container) int64 {
			q := c.Resources.Requests[res]
			if res == corev1.ResourceCPU {
				return q.MilliValue()
			}
			return q.Value()
		}
		for _, c := range p.Spec.Containers {
			sum += val(c)
		}
		for _, c := range p.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars += val(c)
			} else {
				initMax = max(initMax, val(c)+sidecars) // an init container runs beside the sidecars started before it
			}
		}
		if initMax > sum+sidecars {
			notes = append(notes, fmt.Sprintf("its init containers' %s request (%s) is larger than its running containers' (%s)",
				res, quantity(res, initMax), quantity(res, sum+sidecars)))
		}
	}
	if len(p.Spec.Overhead) > 0 {
		notes = append(notes, "its RuntimeClass adds an overhead")
	}
	if len(notes) == 0 {
		return ""
	}
	return fmt.Sprintf("pod %s/%s: the scheduler reserves more than its containers' requests: %s", p.Namespace, p.Name, joinAnd(notes))
}

func quantity(res corev1.ResourceName, v int64) string {
	if res == corev1.ResourceCPU {
		return fmt.Sprintf("%dm", v)
	}
	return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
}

func joinAnd(s []string) string {
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " and "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

// AllocationSamples are the allocation samples of sets over w (see results.StatRequest): per set with an
// Allocation, cpu and memory request, limit or no-limit, and the pod count. Source is results.SourcePodSpec; the
// runner stamps the case. It is pure.
func AllocationSamples(sets []podset.PodSet, w results.Window) []results.Sample {
	var out []results.Sample
	for _, set := range sets {
		a := set.Allocation
		if a == nil || a.Containers == 0 {
			continue
		}
		add := func(metric results.Metric, stat results.Stat, unit results.Unit, v float64) {
			out = append(out, results.Sample{Window: w, Source: results.SourcePodSpec, Component: set.Component,
				Metric: metric, Stat: stat, Value: v, Unit: unit})
		}
		add(results.MetricCPU, results.StatRequest, results.UnitMillicores, a.CPURequest)
		if a.CPUNoLimit == 0 {
			add(results.MetricCPU, results.StatLimit, results.UnitMillicores, a.CPULimit)
		} else {
			add(results.MetricCPU, results.StatNoLimit, results.UnitContainers, float64(a.CPUNoLimit))
		}
		add(results.MetricMemory, results.StatRequest, results.UnitMiB, a.MemoryRequest)
		if a.MemoryNoLimit == 0 {
			add(results.MetricMemory, results.StatLimit, results.UnitMiB, a.MemoryLimit)
		} else {
			add(results.MetricMemory, results.StatNoLimit, results.UnitContainers, float64(a.MemoryNoLimit))
		}
		add(results.MetricPods, results.StatCount, results.UnitPods, float64(a.Pods))
	}
	return out
}
