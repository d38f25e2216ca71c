package mesh

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// DryRunRunID is the run id printed by `meshbench plan --show-objects` (real runs get a generated one).
const DryRunRunID = "dry-run"

// AppObjects builds the app's objects of a topology, Namespaces first, and its target: workloads.Objects. The caller
// passes it in, so that mesh does not import workloads (adapters never import each other).
type AppObjects func(s *scenario.Scenario, topo scenario.Topology, runID string) ([]runtime.Object, target.Target, error)

// CaseObjects returns every object a case in topology topo and mode would apply, in apply order: the Namespaces
// with the mode's labels, the waypoint Gateways of mode waypoint, then the app's objects (from app). It is pure when
// app is (offline: the revision is spec.istio.revision as written, not the one a run would detect; workloads.Objects
// puts placeholder text in the jwt-key Secret).
func CaseObjects(s *scenario.Scenario, topo scenario.Topology, mode scenario.Mode, runID string, app AppObjects) ([]runtime.Object, target.Target, error) {
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
func WriteDryRun(w io.Writer, s *scenario.Scenario, p scenario.Plan, app AppObjects) error {
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
