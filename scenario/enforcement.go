package scenario

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Enforcement measures, under load, how long a deny policy takes to be enforced by the mode's proxies and to be
// lifted again (docs/enforce.md).
type Enforcement struct {
	// Modes are the modes to measure it in: sidecar and waypoint, the data planes that enforce L7 rules; each must be
	// in spec.modes.
	Modes []Mode `json:"modes,omitempty"`
	// QPS is the load (default: the first of load.qps), half of it the denied slice.
	QPS QPS `json:"qps,omitzero" mb:"defaulted"`
	// Before is the load before the policy is applied.
	Before Duration `json:"before,omitzero" mb:"defaulted"`
	// Hold is how long the policy stays before it is removed.
	Hold Duration `json:"hold,omitzero" mb:"defaulted"`
	// After is the load after the policy is removed.
	After Duration `json:"after,omitzero" mb:"defaulted"`
}

func (e Enforcement) configured() bool { return len(e.Modes) > 0 }

// setEnforcementDefaults fills enforcement's unset fields; firstQPS is the first of load.qps.
func setEnforcementDefaults(e *Enforcement, firstQPS QPS) {
	if e.QPS == (QPS{}) {
		e.QPS = firstQPS
	}
	setDefault(&e.Before, D(20*time.Second))
	setDefault(&e.Hold, D(30*time.Second))
	setDefault(&e.After, D(30*time.Second))
}

// validateEnforcement checks spec.enforcement against spec.modes and spec.waypoint.
func validateEnforcement(c *collector, p *field.Path, e Enforcement, modes []Mode, wp Waypoint) {
	for i, m := range e.Modes {
		mp := p.Child("modes").Index(i)
		switch {
		case m != ModeSidecar && m != ModeWaypoint:
			c.add(mp, "mode %q enforces no L7 rule (ztunnel enforces L4 rules only): use sidecar or waypoint", m)
		case !slices.Contains(modes, m):
			c.add(mp, "mode %q is not in spec.modes %v: add it there (its installation is checked before the run)", m, modes)
		case m == ModeWaypoint && wp.Scope != WaypointPerNamespace:
			c.add(mp, "the deny policy attaches to each namespace's waypoint: set waypoint.scope %s (got %s)", WaypointPerNamespace, wp.Scope)
		}
		if slices.Index(e.Modes, m) < i {
			c.add(mp, "lists %q twice; each mode is measured once per repetition", m)
		}
	}
	if e.QPS.Max {
		c.add(p.Child("qps"), "must be a rate, not max: set spec.enforcement.qps (it defaults to the first of load.qps)")
	}
	c.atLeast(p, []minDuration{{"before", e.Before, 5 * time.Second}, {"hold", e.Hold, 5 * time.Second}, {"after", e.After, 5 * time.Second}})
}

// enforceCases are topology topo's time-to-enforce cases (spec.enforcement), each mode once per repetition, after its
// moves. IDs: <topology>.<mode>.enforce.q<qps>.r<repetition>.
func enforceCases(s *Scenario, topo Topology) []Case {
	e := s.Spec.Enforcement
	load := LoadPolicy{Window: e.Before.Duration + e.Hold.Duration + e.After.Duration, DeniedSlice: true}
	return underLoadCases(s, len(e.Modes), load, func(i, rep int, pol CasePolicy) Case {
		m := e.Modes[i]
		pol.Enforce = &EnforcePolicy{Before: e.Before.Duration, Hold: e.Hold.Duration}
		return Case{Kind: CaseEnforce, Topology: topo, Mode: m, QPS: e.QPS, Repetition: rep,
			ID: fmt.Sprintf("%s.%s.enforce.q%s.r%d", topo.Name, m, e.QPS, rep), Policy: pol}
	})
}
