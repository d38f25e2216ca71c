package mesh

import (
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// DryRunRunID is the run id printed by `meshbench plan --show-objects` (real runs get a generated one).
const DryRunRunID = "dry-run"

// appObjects builds the app's objects of a topology, Namespaces first, and its target: workloads.Objects. The caller
// passes it in, so that mesh does not import workloads (adapters never import each other).
type appObjects func(s *scenario.Scenario, topo scenario.Topology, runID string) ([]runtime.Object, target.Target, error)

// CaseObjects returns every object a case in topology topo and mode would apply, in apply order (Namespaces with
// the mode's labels, waypoint Gateways, then app's objects), and the Target. Pure when app is; app existing has no
// objects (only labels and restart annotations change: ExistingPlan), so its Target holds only the namespaces.
func CaseObjects(s *scenario.Scenario, topo scenario.Topology, mode scenario.Mode, runID string, app appObjects) ([]runtime.Object, target.Target, error) {
	if s.Spec.Workload.App == scenario.AppExisting && s.Spec.Workload.Existing != nil {
		return nil, target.Target{App: scenario.AppExisting, Topology: topo.Name,
			Namespaces: append([]string(nil), s.Spec.Workload.Existing.Namespaces...)}, nil
	}
	objs, t, err := app(s, topo, runID)
	if err != nil {
		return nil, t, err
	}
	wp := s.Spec.Waypoint
	var out []runtime.Object
	i := 0
	for ; i < len(objs); i++ {
		ns, ok := objs[i].(*corev1.Namespace)
		if !ok {
			break
		}
		ns = ns.DeepCopy()
		for k, v := range NamespaceLabels(mode, ns.Name, wp, waypointNamespaceFor(t, wp, ns.Name), s.Spec.Istio.Revision) {
			if v != nil {
				ns.Labels = kube.MergeLabels(ns.Labels, map[string]string{k: *v})
			}
		}
		out = append(out, ns)
	}
	if mode == scenario.ModeWaypoint {
		for _, gw := range WaypointGateways(t, wp, runID, s.Spec.Istio.Revision) {
			out = append(out, gw)
		}
	}
	out = append(out, objs[i:]...)
	return out, t, nil
}

// WriteDryRun writes, for every case of the plan, the objects it would apply, as one YAML stream: a case that switches
// topology or mode lists all of its objects; a case that does not is a comment (it re-applies the same objects).
// Output is deterministic (run id DryRunRunID) when app is.
func WriteDryRun(w io.Writer, s *scenario.Scenario, p scenario.Plan, app appObjects) error {
	if _, err := fmt.Fprintf(w, "# meshbench plan --show-objects: scenario %q, %d cases, run id %q\n", s.Metadata.Name, len(p.Cases), DryRunRunID); err != nil {
		return err
	}
	for _, c := range p.Cases {
		if !c.Switch {
			if _, err := fmt.Fprintf(w, "# case %s: same topology and mode as the previous case: nothing new is applied\n", c.ID); err != nil {
				return err
			}
			continue
		}
		objs, t, err := CaseObjects(s, c.Topology, c.Mode, DryRunRunID, app)
		if err != nil {
			return fmt.Errorf("dry-run case %s: %w", c.ID, err)
		}
		if s.Spec.Workload.App == scenario.AppExisting {
			if err := writeExistingDryRun(w, s, c.ID, c.Mode, t); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(w, "# case %s: topology %s, mode %s: %d objects, namespaces %v, load %s\n",
			c.ID, c.Topology.Name, c.Mode, len(objs), t.Namespaces, t.EntryURL); err != nil {
			return err
		}
		if err := kube.RenderYAML(w, objs); err != nil {
			return fmt.Errorf("dry-run case %s: %w", c.ID, err)
		}
	}
	return nil
}

// writeExistingDryRun says what a case of app existing changes: no objects, only each namespace's mode labels and
// the restart annotation of mismatched workloads (both recorded and restored).
func writeExistingDryRun(w io.Writer, s *scenario.Scenario, id string, mode scenario.Mode, t target.Target) error {
	if _, err := fmt.Fprintf(w, "# case %s: app existing, mode %s: no objects are applied (the app is discovered in the cluster); "+
		"namespace labels set (recorded in namespace-labels.json and restored):\n", id, mode); err != nil {
		return err
	}
	for _, ns := range t.Namespaces {
		if _, err := fmt.Fprintf(w, "#   %s: %s\n", ns, FormatLabelPlan(NamespaceLabels(mode, ns, s.Spec.Waypoint,
			waypointNamespaceFor(t, s.Spec.Waypoint, ns), s.Spec.Istio.Revision))); err != nil {
			return err
		}
	}
	// Which workloads restart depends on their pods now: offline, only the rule; preflight lists them.
	_, err := fmt.Fprintf(w, "#   workloads whose pods' sidecar does not match mode %s are rollout-restarted (their restart annotation "+
		"recorded first and restored after the labels); `meshbench preflight` lists them\n", mode)
	return err
}

// FormatLabelPlan renders a label plan (value nil: removed) sorted by key: "a=b, -c".
func FormatLabelPlan(plan map[string]*string) string {
	keys := make([]string, 0, len(plan))
	for k := range plan {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if v := plan[k]; v != nil {
			parts = append(parts, k+"="+*v)
		} else {
			parts = append(parts, "-"+k)
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}
