package report

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// clusterMismatchError refuses to put two runs of different clusters in one report: the pod network underneath one
// cluster says nothing about what a mesh adds on another.
type clusterMismatchError struct {
	Mesh, CNI string   // the run IDs
	Diffs     []string // what differs, one fact each
}

func (e *clusterMismatchError) Error() string {
	return fmt.Sprintf("runs %s and %s were not measured on the same cluster (%s): a combined report needs a mesh run and a cni run of one cluster",
		e.Mesh, e.CNI, strings.Join(e.Diffs, "; "))
}

// Combine builds one report from one run (as Build), or from a mesh run and a cni run of the same cluster in either
// order: the mesh run is the report and the cni run its baseline (the network underneath what each mode adds). Runs
// of different clusters (nodes, Kubernetes version) or any other combination are an error saying what to give.
func Combine(runs ...*results.Run) (Report, error) {
	switch len(runs) {
	case 0:
		return Report{}, errors.New("no run directory given")
	case 1:
		return Build(runs[0]), nil
	case 2:
	default:
		return Report{}, fmt.Errorf("%d run directories given: a report holds one run, or one mesh run and one cni run", len(runs))
	}
	mesh, cni := runs[0], runs[1]
	if mesh.Meta.Command == results.CommandCNI {
		mesh, cni = cni, mesh
	}
	if mesh.Meta.Command == results.CommandCNI || cni.Meta.Command != results.CommandCNI {
		return Report{}, fmt.Errorf("runs %s (command %q) and %s (command %q): a combined report needs one mesh run (meshbench run) and one cni run (meshbench cni)",
			runs[0].Meta.RunID, orText(runs[0].Meta.Command, "run"), runs[1].Meta.RunID, orText(runs[1].Meta.Command, "run"))
	}
	if diffs := clusterDiffs(mesh.Meta.Cluster, cni.Meta.Cluster); len(diffs) > 0 {
		return Report{}, &clusterMismatchError{Mesh: mesh.Meta.RunID, CNI: cni.Meta.RunID, Diffs: diffs}
	}
	r := Build(mesh)
	b := Build(cni)
	r.baseline = &b
	// The baseline's caveats (a stand-in data plane, its notes) are the report's too: every rendering shows them.
	for _, line := range b.Banner() {
		if !slices.Contains(r.Banner(), line) {
			r.Meta.Notes = append(r.Meta.Notes, "cni run "+b.Meta.RunID+": "+line)
		}
	}
	return r, nil
}

// clusterDiffs compares the cluster facts two runs recorded: the Kubernetes version and the set of node names.
// A fact either run did not record cannot show the runs shared a cluster, so it counts as a difference.
func clusterDiffs(a, b results.ClusterFacts) []string {
	var out []string
	switch {
	case a.KubernetesVersion == "" || b.KubernetesVersion == "":
		out = append(out, "Kubernetes version not recorded by both runs")
	case a.KubernetesVersion != b.KubernetesVersion:
		out = append(out, fmt.Sprintf("Kubernetes %s vs %s", a.KubernetesVersion, b.KubernetesVersion))
	}
	names := func(c results.ClusterFacts) []string {
		var ns []string
		for _, n := range c.Nodes {
			ns = append(ns, n.Name)
		}
		slices.Sort(ns)
		return ns
	}
	na, nb := names(a), names(b)
	switch {
	case len(na) == 0 || len(nb) == 0:
		out = append(out, "nodes not recorded by both runs")
	case !slices.Equal(na, nb):
		out = append(out, fmt.Sprintf("nodes %s vs %s", strings.Join(na, ", "), strings.Join(nb, ", ")))
	}
	return out
}

// baselineFact is the facts row naming the cni run a combined report holds.
func (r Report) baselineFact() []string {
	b := r.baseline
	var nodes []string
	for _, n := range b.Meta.Cluster.Nodes {
		nodes = append(nodes, n.Name)
	}
	return []string{"pod network baseline", fmt.Sprintf("cni run %s, started %s, same cluster (Kubernetes %s, nodes %s)",
		b.Meta.RunID, fmtTime(b.Meta.Start), b.Meta.Cluster.KubernetesVersion, strings.Join(nodes, ", "))}
}

// baselineHeadlines put the pod network underneath (the cni run) first, then per mode what the app sees on top of
// it: its latency and the mesh's CPU under load.
func (r Report) baselineHeadlines() []string {
	if r.baseline == nil {
		return nil
	}
	rows := results.CNIRows(r.baseline.Summary)
	var items []string
	for _, path := range []results.CNIPath{results.CNIPathCrossNode, results.CNIPathSameNode} {
		var parts []string
		for _, rw := range rows {
			if rw.Path != string(path) || rw.N == 0 {
				continue
			}
			p := fmt.Sprintf("%s %s %s", rw.Test, charts.FormatValue(rw.Mean), rw.Unit)
			if d := rw.Detail(); d != "" && (rw.Test == string(results.CNITestRR) || rw.Test == string(results.CNITestCRR)) {
				p += " (" + d + ")"
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			items = append(items, fmt.Sprintf("Pod network underneath, pod to pod %s (cni run %s): %s", path, r.baseline.Meta.RunID, strings.Join(parts, "; ")))
		}
	}
	cpuUnit := r.unitOf(string(results.MetricCPU))
	for _, sel := range charts.LatencySelections(r.Summary) {
		metric := r.latencyMetric(sel)
		_, modes, unit := r.latencyStatsModes(metric, sel)
		for _, mode := range modes {
			var parts, lat []string
			for _, st := range []results.Stat{results.StatP50, results.StatP99} {
				if x, ok := r.latencySeries(metric, sel.Topology, mode, sel.Load, st); ok {
					lat = append(lat, fmt.Sprintf("%s %s %s", st, charts.FormatValue(x.Mean), unit))
				}
			}
			if len(lat) > 0 {
				parts = append(parts, "app latency "+strings.Join(lat, ", "))
			}
			mesh := "no mesh"
			if x, ok := r.series(results.Key{Topology: sel.Topology, Mode: mode, Load: sel.Load, Window: results.WindowLoad,
				Component: results.ComponentMesh, Metric: results.MetricCPU, Stat: results.StatAvg, Unit: results.Unit(cpuUnit)}); ok {
				mesh = "mesh CPU " + charts.FormatValue(x.Mean) + " " + cpuUnit
			}
			parts = append(parts, mesh)
			items = append(items, fmt.Sprintf("On top, mode %s (topology %s, %s): %s", mode, sel.Topology, windowLabel(results.WindowLoad, sel.Load), strings.Join(parts, ", ")))
		}
	}
	return items
}

// baselineWarnings are the cni run's warnings, named as such.
func (r Report) baselineWarnings() []string {
	if r.baseline == nil {
		return nil
	}
	var out []string
	for _, w := range r.baseline.warnings {
		out = append(out, "cni run "+r.baseline.Meta.RunID+": "+w)
	}
	return out
}
