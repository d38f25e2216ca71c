package results

import (
	"fmt"
	"slices"
	"strings"
)

// Per-workload breakdown: the app and sidecar figures of each of the app's Deployments and StatefulSets. They repeat,
// split up, what the app and sidecar totals already count, so they are recorded under components of their own: a
// consumer that sums a component's samples across labels (per-node samples are summed that way, and so are the mesh
// total, the shared split and capacity's per-pod fits) never meets them, and the totals stay what they were.
// Summarize keeps them out of Series and Deltas too (Summary.Workloads, Summary.WorkloadDeltas).
const (
	// ComponentAppByWorkload is the application containers of one workload's pods (label LabelWorkload).
	ComponentAppByWorkload = "app-by-workload"
	// ComponentSidecarByWorkload is the istio-proxy containers of one workload's pods (label LabelWorkload); the
	// load clients' proxies, counted in the sidecar total, belong to no app workload.
	ComponentSidecarByWorkload = "sidecar-by-workload"
	// ComponentWorkloadTotal is derived by Summarize: app plus sidecar of one workload, per window (the average of a
	// sum is the sum of the averages; see the mesh total). Its delta against mode none is what the mesh costs the
	// workload's pods: in none the total is the app alone.
	ComponentWorkloadTotal = "workload-total"
	// LabelWorkload names the workload of a per-workload sample: WorkloadKey's "Kind/namespace/name".
	LabelWorkload = "workload"
)

// workloadComponents are the per-workload components, in Series order.
var workloadComponents = []string{ComponentAppByWorkload, ComponentSidecarByWorkload, ComponentWorkloadTotal}

// WorkloadKey is the LabelWorkload value of a workload: "Deployment/bank/frontend". Kind, namespace and name together
// are unique in a cluster and stay the same across runs, so figures of one workload compare between runs.
func WorkloadKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// ByWorkload is the per-workload component of a component that has one (app, sidecar), and ok.
func ByWorkload(component string) (string, bool) {
	switch component {
	case ComponentApp:
		return ComponentAppByWorkload, true
	case ComponentSidecar:
		return ComponentSidecarByWorkload, true
	}
	return "", false
}

// IsWorkloadComponent reports whether component is one of the per-workload breakdown (never part of a total).
func IsWorkloadComponent(component string) bool {
	return slices.Contains(workloadComponents, component)
}

// workloadTotals derives the ComponentWorkloadTotal samples: per case, attempt, window, metric (cpu, memory) and
// workload, the sum of the app and sidecar "avg" samples. A window whose parts disagree on the unit gets no total
// (warning).
func (sz *summarizer) workloadTotals(items []item) []item {
	type groupKey struct {
		win              windowID
		metric, workload string
	}
	type group struct {
		total *Sample
		units []string
	}
	groups := map[groupKey]*group{}
	var order []groupKey
	for _, s := range items {
		if s.Stat != statAvg || (s.Metric != MetricCPU && s.Metric != MetricMemory) ||
			(s.Component != ComponentAppByWorkload && s.Component != ComponentSidecarByWorkload) {
			continue
		}
		k := groupKey{windowOf(s.Sample), s.Metric, s.Labels[LabelWorkload]}
		g := groups[k]
		if g == nil {
			total := *s.Sample
			total.Component, total.Source, total.Value = ComponentWorkloadTotal, sourceDerive, 0
			total.Labels = map[string]string{LabelWorkload: k.workload}
			g = &group{total: &total}
			groups[k] = g
			order = append(order, k)
		}
		g.total.Value += s.Value
		if !slices.Contains(g.units, s.Unit) {
			g.units = append(g.units, s.Unit)
		}
	}
	out := make([]item, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if len(g.units) > 1 {
			sz.warn(fmt.Sprintf("case %q %s window: no %s %s total of workload %s: its parts use different units %s",
				k.win.caseID, k.win.kind, ComponentWorkloadTotal, k.metric, k.workload, strings.Join(g.units, ", ")))
			continue
		}
		out = append(out, item{g.total, keyOf(g.total)})
	}
	return out
}
