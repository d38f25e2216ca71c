package results

import (
	"fmt"
	"slices"
	"strings"
)

// Per-workload figures repeat, split up, the app and sidecar totals, so they have components of their own: nothing
// that sums a component's samples across labels meets them, and Summarize keeps them out of Series and Deltas.
const (
	// LabelWorkload names the workload of a per-workload sample: WorkloadKey's "Kind/namespace/name".
	LabelWorkload = "workload"
)

// workloadComponents are the per-workload components, in Series order.
var workloadComponents = []Component{ComponentAppByWorkload, ComponentSidecarByWorkload, ComponentWorkloadTotal}

// WorkloadKey is the LabelWorkload value of a workload: "Deployment/bank/frontend". Kind, namespace and name together
// are unique in a cluster and stay the same across runs, so figures of one workload compare between runs.
func WorkloadKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// ByWorkload is the per-workload component of a component that has one (app, sidecar), and ok.
func ByWorkload(component Component) (Component, bool) {
	switch component {
	case ComponentApp:
		return ComponentAppByWorkload, true
	case ComponentSidecar:
		return ComponentSidecarByWorkload, true
	}
	return "", false
}

// IsWorkloadComponent reports whether component is one of the per-workload breakdown (never part of a total).
func IsWorkloadComponent(component Component) bool {
	return slices.Contains(workloadComponents, component)
}

// workloadTotals derives the ComponentWorkloadTotal samples: per case, attempt, window, metric (cpu, memory) and
// workload, the sum of the app and sidecar "avg" samples. A window whose parts disagree on the unit gets no total
// (warning).
func (sz *summarizer) workloadTotals(items []item) []item {
	type groupKey struct {
		win      windowID
		metric   Metric
		workload string
	}
	type group struct {
		total *Sample
		units []Unit
	}
	groups := map[groupKey]*group{}
	var order []groupKey
	for _, s := range items {
		if s.Stat != StatAvg || (s.Metric != MetricCPU && s.Metric != MetricMemory) ||
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
				k.win.caseID, k.win.kind, ComponentWorkloadTotal, k.metric, k.workload, join(g.units, ", ")))
			continue
		}
		out = append(out, item{g.total, keyOf(g.total)})
	}
	return out
}

// WorkloadCost is what the sidecar costs one workload in one topology and load window: the means of its pods'
// istio-proxy CPU and memory ("avg" series of sidecar-by-workload) in sidecar mode, its app CPU there, and the change
// of its total CPU (workload-total, app + sidecar) against mode none when the run measured none.
type WorkloadCost struct {
	Topology string `json:"topology,omitempty"`
	Load     string `json:"load,omitempty"`
	Workload string `json:"workload"`
	// SidecarCPU and AppCPU are in CPUUnit; SidecarMemory in MemoryUnit (nil when not measured).
	SidecarCPU    float64  `json:"sidecarCPU"`
	AppCPU        *float64 `json:"appCPU,omitempty"`
	CPUUnit       Unit     `json:"cpuUnit"`
	SidecarMemory *float64 `json:"sidecarMemory,omitempty"`
	MemoryUnit    Unit     `json:"memoryUnit,omitempty"`
	// TotalCPUDelta is workload-total cpu avg, sidecar minus none (nil without mode none).
	TotalCPUDelta *Delta `json:"totalCPUDelta,omitempty"`
}

// SidecarCosts ranks the workloads by their sidecars' mean CPU in sidecar mode's load windows, the most expensive
// first, per topology and load level (in the summary's order); ties by workload key. A summary without per-workload
// figures or without sidecar mode gives none. It is pure.
func SidecarCosts(sum Summary) []WorkloadCost {
	find := func(k Key) *Series {
		for i := range sum.Workloads {
			if sum.Workloads[i].Key == k {
				return &sum.Workloads[i]
			}
		}
		return nil
	}
	type group struct{ topology, load string }
	var order []group
	byGroup := map[group][]WorkloadCost{}
	for _, s := range sum.Workloads {
		if s.Component != ComponentSidecarByWorkload || s.Mode != ModeSidecar || s.Window != WindowLoad || s.Metric != MetricCPU || s.Stat != StatAvg {
			continue
		}
		wl := ParseLabels(s.Labels)[LabelWorkload]
		c := WorkloadCost{Topology: s.Topology, Load: s.Load, Workload: wl, SidecarCPU: s.Mean, CPUUnit: s.Unit}
		k := s.Key
		k.Component = ComponentAppByWorkload
		if a := find(k); a != nil && a.Unit == s.Unit {
			c.AppCPU = &a.Mean
		}
		k.Component, k.Metric, k.Unit = ComponentSidecarByWorkload, MetricMemory, ""
		for i := range sum.Workloads {
			m := &sum.Workloads[i]
			if mk := m.Key; mk.Unit != "" {
				mk.Unit = ""
				if mk == k {
					c.SidecarMemory, c.MemoryUnit = &m.Mean, m.Unit
					break
				}
			}
		}
		dk := s.Key
		dk.Mode, dk.Component = "", ComponentWorkloadTotal
		for i := range sum.WorkloadDeltas {
			if d := &sum.WorkloadDeltas[i]; d.Key == dk && d.Base == ModeNone && d.Other == ModeSidecar {
				c.TotalCPUDelta = d
				break
			}
		}
		g := group{s.Topology, s.Load}
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], c)
	}
	var out []WorkloadCost
	for _, g := range order {
		cs := byGroup[g]
		slices.SortStableFunc(cs, func(a, b WorkloadCost) int {
			if a.SidecarCPU != b.SidecarCPU {
				if a.SidecarCPU > b.SidecarCPU {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Workload, b.Workload)
		})
		out = append(out, cs...)
	}
	return out
}
