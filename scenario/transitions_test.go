package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const transitionsBase = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: moves}
spec:
  workload: {app: fortio-chain}
  modes: [none, sidecar, ambient]
  load: {qps: [100, 500]}
  windows: {repetitions: 2}
`

// TestTransitionCases: each move once per repetition after the topology's mesh cases, from its From mode (a switch
// when the case before ended elsewhere) at transitions.qps (default: the first load level), its window before +
// budget + after, recorded per second.
func TestTransitionCases(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(transitionsBase + "  transitions:\n    moves: [{from: none, to: sidecar}, {from: sidecar, to: ambient}]\n    budget: 2m\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(s)
	var ids []string
	var moves []Case
	for _, c := range p.Cases {
		if c.Kind == CaseTransition {
			ids = append(ids, c.ID)
			moves = append(moves, c)
		}
	}
	want := []string{"single.none-to-sidecar.q100.r1", "single.sidecar-to-ambient.q100.r1", "single.none-to-sidecar.q100.r2", "single.sidecar-to-ambient.q100.r2"}
	if !slices.Equal(ids, want) {
		t.Fatalf("transition cases %q, want %q", ids, want)
	}
	if last := p.Cases[len(p.Cases)-len(want)-1]; last.Kind != CaseMesh {
		t.Errorf("the moves do not follow the mesh cases: %s before them", last.ID)
	}
	for i, c := range moves {
		pol := c.Policy
		if pol.Transition == nil || pol.Load == nil || !pol.Load.PerSecond || pol.Load.Window != 20*time.Second+2*time.Minute+30*time.Second ||
			pol.Transition.Before != 20*time.Second || pol.Transition.Budget != 2*time.Minute || pol.Idle != 0 {
			t.Errorf("%s: policy %+v load %+v transition %+v", c.ID, pol, pol.Load, pol.Transition)
		}
		// Serpentine: the mesh cases end in none, so the first move starts without a switch, and each move ends where
		// the next starts but for the second none-to-sidecar, after sidecar-to-ambient.
		if wantSwitch := i == 2; c.Switch != wantSwitch {
			t.Errorf("%s: switch %v, want %v", c.ID, c.Switch, wantSwitch)
		}
	}
}

func TestTransitionsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"    moves: [{from: none, to: waypoint}]\n", `spec.transitions.moves[0].to: Invalid value: "": mode "waypoint" is not in spec.modes`},
		{"    moves: [{from: none, to: none}]\n", `spec.transitions.moves[0]: Invalid value: "": moves from "none" to itself`},
		{"    moves: [{from: none, to: sidecar}, {from: none, to: sidecar}]\n", "spec.transitions.moves[1]: Invalid value: \"\": lists the move none-to-sidecar twice"},
		{"    moves: [{from: none, to: sidecar}]\n    qps: max\n", "spec.transitions.qps: Invalid value: \"\": must be a rate, not max"},
		{"    moves: [{from: none, to: sidecar}]\n    before: 1s\n", "spec.transitions.before: Invalid value: \"\": must be at least 5s (got 1s)"},
	} {
		_, err := Parse([]byte(transitionsBase + "  transitions:\n" + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), strings.Split(tc.want, ": Invalid value: \"\": ")[0]) || !strings.Contains(err.Error(), strings.Split(tc.want, ": Invalid value: \"\": ")[1]) {
			t.Errorf("%s: err %v, want %q", strings.TrimSpace(tc.yaml), err, tc.want)
		}
	}
}
