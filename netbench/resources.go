package netbench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// collectTimeout bounds reading one window's resource use (the kubelet sampler waits for a sampling round after
// the window; Prometheus for ingestion).
const collectTimeout = 2 * time.Minute

// labelledSet is a pod set whose resource samples get labels (path, test, tool).
type labelledSet struct {
	set    podset.PodSet
	labels map[string]string
}

// sets are the pod sets of a case's window: the idle case reads each path that runs (its test pods) and the nodes
// of all of them; a path x test case its path's pods and their nodes.
func (r *Bench) sets(pc scenario.Case) []labelledSet {
	if pc.IdleOnly() {
		var sets []labelledSet
		var all []Role
		for _, p := range r.cfg.CNI.Paths {
			if r.runs(p) {
				sets = append(sets, labelledSet{set: r.podSet(p), labels: map[string]string{LabelPath: string(p)}})
				all = append(all, pathRoles(p)...)
			}
		}
		return append(sets, labelledSet{set: r.nodeSet(all), labels: map[string]string{LabelPath: "all"}})
	}
	c, ok := r.caseOf(pc.ID)
	if !ok {
		return nil
	}
	return []labelledSet{{set: r.podSet(c.Path), labels: c.Labels()}, {set: r.nodeSet(pathRoles(c.Path)), labels: c.Labels()}}
}

// Resources reads the resource use of a case's window (the idle window or Measure's resource window) for each of
// its pod sets and labels the samples. Problems become the case's "resources" fact, never a failure of the
// measurement; a case whose CPU is not attributable (caseWindow) keeps its memory only.
func (r *Bench) Resources(ctx context.Context, pc scenario.Case, w results.Window) ([]results.Sample, map[string]string) {
	if r.d.Resources == nil {
		return nil, nil
	}
	var out []results.Sample
	var notes []string
	noCPU := r.noCPU[pc.ID]
	if noCPU != "" {
		notes = append(notes, noCPU)
	}
	for _, ls := range r.sets(pc) {
		if ls.set.Empty() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, collectTimeout)
		col, err := r.d.Resources.Collect(cctx, w, []podset.PodSet{ls.set})
		cancel()
		notes = append(notes, col.Warnings...)
		r.noteNodes(col.Warnings)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s resource use not collected: %v", ls.set.Component, err))
			continue
		}
		for _, s := range col.Samples {
			if noCPU != "" && s.Metric == results.MetricCPU {
				continue
			}
			// The case's labels, plus the collector's own (node and series of a node sample).
			labels := maps.Clone(ls.labels)
			maps.Copy(labels, s.Labels)
			s.Labels = labels
			out = append(out, s)
		}
	}
	if len(notes) == 0 {
		return out, nil
	}
	return out, map[string]string{"resources": strings.Join(notes, "; ")}
}

// noteNodes keeps, once per run, the collector's reasons why a test node's CPU and memory are absent: the same
// reason in every case's facts is easy to miss, the run's notes are printed with the table.
func (r *Bench) noteNodes(warnings []string) {
	for _, w := range warnings {
		if strings.HasPrefix(w, podset.NodeNotCollected) && !slices.Contains(r.nodeNotes, w) {
			r.nodeNotes = append(r.nodeNotes, w)
		}
	}
}
