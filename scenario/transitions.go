package scenario

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Transitions measures moves between modes under load (docs/transitions.md): the load runs on while meshbench
// moves the app from one mode to the other, and a per-second record shows what the move cost.
type Transitions struct {
	// Moves are the mode changes to measure, each once per repetition; both modes must be in spec.modes.
	Moves []Move `json:"moves,omitempty"`
	// QPS is the load that runs through each move (default: the first of load.qps).
	QPS QPS `json:"qps,omitzero" mb:"defaulted"`
	// Before is the steady load in the old mode before the move starts.
	Before Duration `json:"before,omitzero" mb:"defaulted"`
	// Budget is how long the move may take (mode applied, pods rolled out and Ready, mode verified): the load runs
	// before + budget + after, whatever the move took.
	Budget Duration `json:"budget,omitzero" mb:"defaulted"`
	// After is the load after the budget, in the new mode.
	After Duration `json:"after,omitzero" mb:"defaulted"`
}

// Move is one mode change.
type Move struct {
	// From is the mode the app is in, verified, when the load starts.
	From Mode `json:"from"`
	// To is the mode meshbench moves the app to while the load runs.
	To Mode `json:"to"`
}

// String is the move as a case ID's part: "none-to-sidecar".
func (m Move) String() string { return string(m.From) + "-to-" + string(m.To) }

func (t Transitions) configured() bool { return len(t.Moves) > 0 }

// setTransitionDefaults fills transitions' unset fields; firstQPS is the first of load.qps.
func setTransitionDefaults(t *Transitions, firstQPS QPS) {
	if t.QPS == (QPS{}) {
		t.QPS = firstQPS
	}
	setDefault(&t.Before, D(20*time.Second))
	setDefault(&t.Budget, D(3*time.Minute))
	setDefault(&t.After, D(30*time.Second))
}

// validateTransitions checks spec.transitions against spec.modes.
func validateTransitions(c *collector, p *field.Path, t Transitions, modes []Mode) {
	for i, m := range t.Moves {
		mp := p.Child("moves").Index(i)
		for _, side := range []struct {
			name string
			mode Mode
		}{{"from", m.From}, {"to", m.To}} {
			if !slices.Contains(modes, side.mode) {
				c.add(mp.Child(side.name), "mode %q is not in spec.modes %v: add it there (its installation is checked before the run) or move between listed modes", side.mode, modes)
			}
		}
		if m.From == m.To {
			c.add(mp, "moves from %q to itself; a move needs two different modes", m.From)
		}
		if slices.Index(t.Moves, m) < i {
			c.add(mp, "lists the move %s twice; each move is measured once per repetition", m)
		}
	}
	if t.QPS.Max {
		c.add(p.Child("qps"), "must be a rate, not max: a move is measured at a fixed rate, so that the requests it delays or fails show")
	}
	c.atLeast(p, []minDuration{{"before", t.Before, 5 * time.Second}, {"budget", t.Budget, 10 * time.Second}, {"after", t.After, 5 * time.Second}})
}

// minDuration is a duration setting of a change under load and the least it may be: the per-second record needs a
// few seconds on each side of a change.
type minDuration struct {
	name string
	v    Duration
	min  time.Duration
}

// atLeast reports every setting of ds below its least value, under p.
func (c *collector) atLeast(p *field.Path, ds []minDuration) {
	for _, d := range ds {
		if d.v.Duration < d.min {
			c.add(p.Child(d.name), "must be at least %s (got %s)", d.min, d.v.Duration)
		}
	}
}
