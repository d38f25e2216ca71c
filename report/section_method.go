package report

import (
	"slices"

	"github.com/meshbench/meshbench/results"
)

func (r Report) methodSection() (section, bool) {
	s := section{Title: "Method and warnings"}
	s.list([]string{
		"Resource figures come from the per-window min, max and average of each component's CPU (millicores) and memory (MiB) as the recorded source measured them over fixed windows.",
		"Means are over repetitions; intervals are Student t " + confPct(r.Summary.Confidence) + " confidence intervals of the mean; differences between modes use Welch's interval (unequal variances).",
		"Files next to this report: series.csv (every statistic), deltas.csv (every comparison, per-1000-rps included), cases.csv (every case with status and reason), charts/*.svg.",
	})
	if shared := r.sharedComponents(); len(shared) > 0 {
		s.heading("Shared components")
		s.list(shared)
	}
	if warnings := append(slices.Clone(r.warnings), r.baselineWarnings()...); len(warnings) > 0 {
		s.heading("Warnings")
		s.list(warnings)
	} else {
		s.para("No warnings were recorded while reading and summarising the run.")
	}
	return s, true
}

// sharedComponents explains, for each shared Istio component the run measured, what its figures cover: they are part
// of the mesh total, but one instance serves more than this app.
func (r Report) sharedComponents() []string {
	seen := map[results.Component]bool{}
	for _, sm := range r.samples {
		seen[sm.Component] = true
	}
	rev := ""
	if ist := r.Meta.Cluster.Istio; ist != nil && ist.Revision != "" {
		rev = " (revision " + ist.Revision + ")"
	}
	var out []string
	if seen[results.ComponentZtunnel] {
		out = append(out, "ztunnel runs one per node and carries every ambient pod of its node, not only this app's: only the ztunnels on the nodes running the app and its waypoints are counted, and only in the ambient modes (those of nodes that run load clients only are the benchmark's, "+string(results.ComponentLoadgenProxy)+"). Its figure is shared; on a busy node it includes other workloads' traffic, and on a node with a load client that client's outbound proxying.")
	}
	if seen[results.ComponentIstioCNI] {
		out = append(out, "istio-cni runs one per node and enrols every ambient pod of its node: counted on the test nodes (those of the app, its waypoints and its load clients) and in the ambient modes only; it is in no total.")
	}
	if seen[results.ComponentIstiod] {
		out = append(out, "istiod"+rev+" is the control plane of the whole mesh: counted in every mode with a mesh; its cost grows with every proxy and service in the mesh, not only this app's.")
	}
	if len(out) > 0 {
		out = append(out, "Waypoints are the run's own (found by the gateway-name of the Gateways it created), never other apps' waypoints. The mesh total adds sidecars, ztunnel, waypoints and istiod, so it includes the shared parts above.")
	}
	return out
}
