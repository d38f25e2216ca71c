package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/cgroupstat"
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
				sets = append(sets, labelledSet{set: r.podSet(p), labels: map[string]string{labelPath: string(p)}})
				all = append(all, pathRoles(p)...)
			}
		}
		return append(sets, labelledSet{set: r.nodeSet(all), labels: map[string]string{labelPath: "all"}})
	}
	c, ok := r.caseOf(pc.ID)
	if !ok {
		return nil
	}
	return []labelledSet{{set: r.podSet(c.Path), labels: c.labels()}, {set: r.nodeSet(pathRoles(c.Path)), labels: c.labels()}}
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
			// The case's labels, plus the collector's own (node and series of a node sample), plus its source.
			labels := maps.Clone(ls.labels)
			maps.Copy(labels, s.Labels)
			labels[results.CNILabelSource] = s.Source
			s.Labels = labels
			out = append(out, s)
		}
	}
	// The 1 s cgroup samples of the test pods: no rate range, so short cases keep their CPU.
	for _, ls := range r.sets(pc) {
		if ls.set.Component != results.ComponentCNITest || ls.set.Empty() {
			continue
		}
		cs, note := r.cgroupResources(ctx, ls, w)
		out = append(out, cs...)
		if note != "" {
			notes = append(notes, note)
		} else if noCPU != "" {
			r.cgroupCPU[pc.ID] = true
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

// cgroupDumpTimeout bounds one `cgroups dump` exec.
const cgroupDumpTimeout = 30 * time.Second

// cgroupResources reads the window's cgroup-1s samples of the set's pods (one `meshbench-agent cgroups dump` per pod)
// as CPU and memory min/avg/max per pod and for the pods together. A pod that cannot be read leaves the total out;
// the reason is the returned note, never a failure of the case.
func (r *Bench) cgroupResources(ctx context.Context, ls labelledSet, w results.Window) ([]results.Sample, string) {
	var out, all []results.Sample
	var problems []string
	var series [][]cgroupstat.Sample
	complete := true
	for _, pod := range podNames(ls.set) {
		dump, err := r.cgroupDump(ctx, Role(pod), w)
		if err != nil {
			problems, complete = append(problems, fmt.Sprintf("%s: %v", pod, err)), false
			continue
		}
		var podSeries [][]cgroupstat.Sample
		for _, name := range slices.Sorted(maps.Keys(dump.Containers)) {
			podSeries = append(podSeries, dump.Containers[name])
		}
		for name, e := range dump.Errors {
			problems, complete = append(problems, fmt.Sprintf("%s/%s: %s", pod, name, e)), false
		}
		sum, err := cgroupstat.Sum(podSeries, w.Start, w.End)
		if err != nil {
			problems, complete = append(problems, fmt.Sprintf("%s: %v", pod, err)), false
			continue
		}
		labels := maps.Clone(ls.labels)
		labels[results.CNILabelPod] = pod
		out = append(out, cgroupSamples(w, sum, labels)...)
		series = append(series, podSeries...)
	}
	if complete && len(series) > 0 {
		if sum, err := cgroupstat.Sum(series, w.Start, w.End); err == nil {
			all = cgroupSamples(w, sum, ls.labels)
		}
	}
	out = append(all, out...)
	if len(problems) > 0 {
		return out, fmt.Sprintf("%s %s resource use incomplete (%s)", results.CNISourceCgroup, ls.set.Component, strings.Join(problems, "; "))
	}
	return out, ""
}

// cgroupDump execs `meshbench-agent cgroups dump` for the window in the pod's first container.
func (r *Bench) cgroupDump(ctx context.Context, role Role, w results.Window) (cgroupstat.Dump, error) {
	p := r.pods[role]
	if p == nil || len(p.Spec.Containers) == 0 {
		return cgroupstat.Dump{}, errors.New("pod not deployed")
	}
	c := p.Spec.Containers[0]
	cmd := []string{r.objs.agentIn(c), "cgroups", "dump", "--dir", cgroupsDir,
		"--since", w.Start.UTC().Format(time.RFC3339Nano), "--until", w.End.UTC().Format(time.RFC3339Nano)}
	cctx, cancel := context.WithTimeout(ctx, cgroupDumpTimeout)
	defer cancel()
	stdout, stderr, err := r.d.Exec.Exec(cctx, r.cfg.Namespace, string(role), c.Name, cmd, nil)
	if err != nil {
		if msg := strings.TrimSpace(string(stderr)); msg != "" {
			return cgroupstat.Dump{}, fmt.Errorf("cgroups dump: %s: %w", oneLine(msg, 200), err)
		}
		return cgroupstat.Dump{}, fmt.Errorf("cgroups dump: %w", err)
	}
	var d cgroupstat.Dump
	if err := json.Unmarshal(stdout, &d); err != nil {
		return cgroupstat.Dump{}, fmt.Errorf("cgroups dump output: %w", err)
	}
	return d, nil
}

// podNames are the set's pods in the run namespace, in order.
func podNames(set podset.PodSet) []string {
	var out []string
	for _, ns := range slices.Sorted(maps.Keys(set.Pods)) {
		out = append(out, set.Pods[ns]...)
	}
	return out
}

// cgroupSamples are a cgroup-1s summary's samples: CPU (millicores) and memory (MiB) min, avg and max, min and max
// only when the summed series shared a second. It is pure.
func cgroupSamples(w results.Window, sum cgroupstat.Summary, labels map[string]string) []results.Sample {
	labels = maps.Clone(labels)
	labels[results.CNILabelSource] = results.CNISourceCgroup
	var out []results.Sample
	for _, m := range []struct {
		metric results.Metric
		unit   results.Unit
		f      cgroupstat.Figure
	}{{results.MetricCPU, results.UnitMillicores, sum.CPUMillicores}, {results.MetricMemory, results.UnitMiB, sum.MemoryMiB}} {
		stats := []struct {
			stat results.Stat
			v    float64
		}{{results.StatMin, m.f.Min}, {results.StatMax, m.f.Max}, {results.StatAvg, m.f.Avg}}
		if !m.f.HasMinMax {
			stats = stats[2:]
		}
		for _, st := range stats {
			out = append(out, results.Sample{Window: w, Source: results.CNISourceCgroup, Component: results.ComponentCNITest,
				Metric: m.metric, Stat: st.stat, Value: st.v, Unit: m.unit, Labels: maps.Clone(labels)})
		}
	}
	return out
}

// caseWindow is the resource window of a case whose traffic ran from start to end, and, when its CPU figures would
// reach back into the previous case's traffic (a case shorter than two rate ranges), why they are left out ("" when
// not). The derivation of the trim: docs/cni.md ("Resource windows").
func (r *Bench) caseWindow(start, end time.Time) (*results.Window, string) {
	rate, elapsed := r.cfg.RateRange, end.Sub(start)
	trim := min(rate, elapsed/2)
	w := &results.Window{Kind: results.WindowTest, Start: start.Add(trim).UTC(), End: end.UTC()}
	if rate <= 0 || r.d.Resources == nil || elapsed >= 2*rate {
		return w, ""
	}
	return w, fmt.Sprintf("case window %s is shorter than the rate range %s: CPU not attributable to this test (it would include earlier traffic; the case needs samples x duration >= %s); lengthen cni.duration or samples",
		w.End.Sub(w.Start), rate, 2*rate)
}

// pathRoles are the pods a path's cases may use, for resource use.
func pathRoles(p scenario.CNIPath) []Role {
	switch p {
	case scenario.CNIPathSameNode:
		return []Role{RoleClient, RoleClientAgent, RoleServerLocal}
	case scenario.CNIPathHost:
		return []Role{RoleHostClient, RoleHostServer}
	default:
		return []Role{RoleClient, RoleClientAgent, RoleServerRemote}
	}
}

// podSet is the path's pods, for resource use.
func (r *Bench) podSet(p scenario.CNIPath) podset.PodSet {
	var deployed []string
	for _, role := range pathRoles(p) {
		if r.pods[role] != nil {
			deployed = append(deployed, string(role))
		}
	}
	return podset.PodSet{Component: results.ComponentCNITest, Pods: map[string][]string{r.cfg.Namespace: deployed}}
}

// nodeSet is the whole-node component of the nodes the deployed pods among roles run on (same-node: node A only;
// the other paths: A and B), each measured on its own: never the cluster's other nodes.
func (r *Bench) nodeSet(roles []Role) podset.PodSet {
	var names []string
	for _, role := range roles {
		if p := r.pods[role]; p != nil && p.Spec.NodeName != "" && !slices.Contains(names, p.Spec.NodeName) {
			names = append(names, p.Spec.NodeName)
		}
	}
	slices.Sort(names)
	set := podset.NodeSet()
	for _, n := range names {
		ref, ok := r.nodes[n]
		if !ok {
			ref = podset.NodeRef{Name: n}
		}
		set.Nodes = append(set.Nodes, ref)
	}
	// Nodes of one host (the local cluster) each report that machine: the case's facts say so.
	set.Notes = podset.SharedHostNotes(set.Nodes)
	return set
}
