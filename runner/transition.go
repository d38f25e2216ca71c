package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// transitionPhases are the moments the steps of a move reach, by step name (modeSteps).
var transitionPhases = map[string]results.TransitionPhase{
	"mode-switch": results.PhaseModeApplied,
	"wait-ready":  results.PhasePodsReady,
	"verify":      results.PhaseModeVerified,
}

// measureTransition runs transition case c (target t switched and verified in c.From): the load with a per-second
// record, and Before into it the move to c.Mode through the mode's steps (but placing load clients: the load's
// clients stay as they are), each step's end a phase of the record. The load runs its whole window whatever the move
// took; a move that failed or took longer than its budget is said so, the record kept either way. Its samples are
// not kept: they mix two modes. After it the target is in c.Mode, its load clients not yet placed for it.
func (r *Runner) measureTransition(ctx context.Context, st *state, cr *caseRun, t target.Target, c scenario.Case) (results.CaseResult, []results.Sample) {
	clk := r.clock()
	tp := c.Policy.Transition
	tr := &results.Transition{From: results.Mode(c.From), To: results.Mode(c.Mode)}
	cr.res.Transition = tr
	start := clk.Now()
	out, moveErr := r.underLoad(ctx, cr, t, c, func() error { return r.move(ctx, st, cr, t, c, tr) })
	st.quietSince = clk.Now()
	st.mode, st.ready = c.Mode, false // the load clients were placed for c.From
	tr.Seconds = out.lr.Seconds
	if reason := recordUnderLoad(st, cr, out, moveErr); reason != "" {
		return cr.fail(reason)
	}
	if at, ok := tr.At(results.PhaseModeVerified); ok && at.Sub(start) > tp.Before+tp.Budget {
		cr.res.Facts[results.FactMoveOverBudget] = fmt.Sprintf("the move was verified %s after the load started, past its budget (%s before + %s): the load ran on less after it",
			at.Sub(start).Round(time.Millisecond), tp.Before, tp.Budget)
	}
	return cr.ok()
}

// move waits Before into the load, then moves the target to c.Mode, recording each phase reached in tr; its error is
// the case's failure reason.
func (r *Runner) move(ctx context.Context, st *state, cr *caseRun, t target.Target, c scenario.Case, tr *results.Transition) error {
	clk := r.clock()
	if err := cr.timed("before-move", func() error { return clk.Sleep(ctx, c.Policy.Transition.Before) }); err != nil {
		return err
	}
	tr.Phases = append(tr.Phases, results.TransitionMoment{Phase: results.PhaseMoveStarted, At: clk.Now()})
	for _, s := range r.modeSteps(ctx, t, c.Mode, false) {
		phase, ok := transitionPhases[s.name]
		if !ok {
			continue // load-clients: the load's clients stay
		}
		var facts map[results.FactKey]string
		err := cr.timed("move-"+s.name, func() error {
			var err error
			facts, err = s.f()
			return err
		})
		cr.facts(facts)
		if err != nil {
			return fmt.Errorf("move from %s to %s: %s: %w", c.From, c.Mode, s.what, err)
		}
		tr.Phases = append(tr.Phases, results.TransitionMoment{Phase: phase, At: clk.Now()})
		if s.name == "wait-ready" {
			if sr, ok := r.Workloads.(StartupReporter); ok {
				cr.res.PodStartups = st.newStartups(sr.PodStartups())
			}
		}
	}
	return nil
}
