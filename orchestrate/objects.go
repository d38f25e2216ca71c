package orchestrate

import (
	"fmt"
	"io"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// CaseObjects is what one case of a plan would apply (`meshbench plan --show-objects -o json`): every object, in
// apply order, for a case that switches topology or mode; none for a case that re-uses the previous case's.
type CaseObjects struct {
	Case       string           `json:"case"`
	Topology   string           `json:"topology"`
	Mode       scenario.Mode    `json:"mode"`
	Switch     bool             `json:"switch"`
	Namespaces []string         `json:"namespaces,omitempty"`
	EntryURL   string           `json:"entryURL,omitempty"`
	Objects    []map[string]any `json:"objects,omitempty"`
	Note       string           `json:"note,omitempty"`
}

// PlanObjects lists, for every case of p, the objects it would apply, with the run id mesh.DryRunRunID. It is pure
// and deterministic (the objects of mesh.CaseObjects).
func PlanObjects(s *scenario.Scenario, p scenario.Plan) ([]CaseObjects, error) {
	out := make([]CaseObjects, 0, len(p.Cases))
	r := new(workloads.Renderer) // app manifests: read once for every case
	for _, c := range p.Cases {
		co := CaseObjects{Case: c.ID, Topology: c.Topology.Name, Mode: c.Mode, Switch: c.Switch}
		if !c.Switch {
			co.Note = "same topology and mode as the previous case: nothing new is applied"
			out = append(out, co)
			continue
		}
		objs, t, err := mesh.CaseObjects(s, c.Topology, c.Mode, mesh.DryRunRunID, r.Objects)
		if err != nil {
			return nil, fmt.Errorf("objects of case %s: %w", c.ID, err)
		}
		co.Namespaces, co.EntryURL = t.Namespaces, t.EntryURL
		for _, o := range objs {
			u, err := kube.ToUnstructured(o)
			if err != nil {
				return nil, fmt.Errorf("objects of case %s: %w", c.ID, err)
			}
			co.Objects = append(co.Objects, u.Object)
		}
		out = append(out, co)
	}
	return out, nil
}

// WritePlanObjects writes the same as one YAML stream with a comment per case.
func WritePlanObjects(w io.Writer, s *scenario.Scenario, p scenario.Plan) error {
	return mesh.WriteDryRun(w, s, p, new(workloads.Renderer).Objects) // app manifests: read once for every case
}
