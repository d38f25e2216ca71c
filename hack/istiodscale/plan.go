package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shape says how a pod count becomes services and namespaces.
type Shape struct {
	// PodsPerService is the replicas of each Deployment (one Service per Deployment); the last one takes the rest.
	PodsPerService int
	// ServicesPerNamespace fills a namespace before the next one starts, until MaxNamespaces; beyond that further
	// services are spread round-robin over the MaxNamespaces namespaces.
	ServicesPerNamespace int
	MaxNamespaces        int
}

// DefaultShape: services about pods/10, namespaces 1..20 (100 pods each up to 2000 pods).
var DefaultShape = Shape{PodsPerService: 10, ServicesPerNamespace: 10, MaxNamespaces: 20}

// Workload is one Deployment and its Service.
type Workload struct {
	Namespace string
	Name      string
	Replicas  int
}

// Size is one point of the sweep: the objects the mesh holds at that point.
type Size struct {
	Pods, Services, Namespaces int
	// NamespaceNames are every namespace of the size (at least one, also for 0 pods: istiod then watches one empty
	// injected namespace).
	NamespaceNames []string
	Workloads      []Workload
}

// Validate rejects shapes that cannot lay out pods.
func (s Shape) Validate() error {
	if s.PodsPerService < 1 || s.ServicesPerNamespace < 1 || s.MaxNamespaces < 1 {
		return fmt.Errorf("pods per service, services per namespace and max namespaces must be at least 1 (got %d, %d, %d)",
			s.PodsPerService, s.ServicesPerNamespace, s.MaxNamespaces)
	}
	return nil
}

// NamespaceName is the i-th namespace of a run: prefix-00, prefix-01, ...
func NamespaceName(prefix string, i int) string { return fmt.Sprintf("%s-%02d", prefix, i) }

// WorkloadName is the i-th workload: svc-0000, ...
func WorkloadName(i int) string { return fmt.Sprintf("svc-%04d", i) }

// Layout is the objects of one size. It is pure and deterministic: the same pods and shape give the same names, and
// service i keeps its name and namespace across sizes, so growing from one size to the next only adds replicas and
// objects (once MaxNamespaces namespaces are full, further services go round-robin over them).
func (s Shape) Layout(prefix string, pods int) Size {
	out := Size{Pods: pods}
	services := 0
	if pods > 0 {
		services = (pods + s.PodsPerService - 1) / s.PodsPerService
	}
	namespaces := max(1, min(s.MaxNamespaces, (services+s.ServicesPerNamespace-1)/s.ServicesPerNamespace))
	full := namespaces * s.ServicesPerNamespace
	for i := range namespaces {
		out.NamespaceNames = append(out.NamespaceNames, NamespaceName(prefix, i))
	}
	left := pods
	for i := range services {
		ns := i / s.ServicesPerNamespace
		if i >= full {
			ns = i % namespaces // every namespace is full: the rest round-robin, the first ones stay where they were
		}
		r := min(s.PodsPerService, left)
		left -= r
		out.Workloads = append(out.Workloads, Workload{Namespace: NamespaceName(prefix, ns), Name: WorkloadName(i), Replicas: r})
	}
	out.Services, out.Namespaces = services, namespaces
	return out
}

// ParseSteps reads a comma-separated list of pod counts ("0,250,500"): non-negative, strictly increasing.
func ParseSteps(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("step %q is not a non-negative pod count", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("steps must increase: %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no steps in %q", s)
	}
	return out, nil
}

// NodesFor is how many fake nodes hold the largest step at podsPerNode each (at least one). The node's pod CIDR is a
// /24 (kwok assigns pod IPs from it), so podsPerNode must leave room for the DaemonSet pods that land there too.
func NodesFor(steps []int, podsPerNode int) int {
	if podsPerNode < 1 {
		podsPerNode = 1
	}
	m := 0
	if len(steps) > 0 {
		m = slices.Max(steps)
	}
	return max(1, (m+podsPerNode-1)/podsPerNode)
}

// Span is a measurement window as offsets from the end of a size's settle time.
type Span struct{ Start, End time.Duration }

// WindowPlan is where a size's repetitions fall: reps windows of length window, spacing apart (no spacing after the
// last). Pure; reps < 1 gives none.
func WindowPlan(reps int, window, spacing time.Duration) []Span {
	var out []Span
	for i := range max(reps, 0) {
		start := time.Duration(i) * (window + spacing)
		out = append(out, Span{Start: start, End: start + window})
	}
	return out
}

// ValidateRepetitions rejects a plan that measures nothing or runs windows into each other.
func ValidateRepetitions(reps int, spacing time.Duration) error {
	if reps < 1 {
		return fmt.Errorf("repetitions %d: at least 1 window per size", reps)
	}
	if spacing < 0 {
		return fmt.Errorf("spacing %s: must be >= 0", spacing)
	}
	return nil
}

// SpacingWarning says when consecutive windows share rate samples: a window's CPU minimum and maximum come from a
// rate over rateRange that reaches back before the window's start (collectors/prom), so windows closer than
// rateRange are not independent repetitions. Empty when they are far enough apart, or there is one window.
func SpacingWarning(reps int, spacing, rateRange time.Duration) string {
	if reps < 2 || spacing >= rateRange {
		return ""
	}
	return fmt.Sprintf("spacing %s is shorter than Prometheus' rate range %s: consecutive windows share CPU rate samples (their min/max are not independent); -spacing %s or more avoids it",
		spacing, rateRange, rateRange)
}
