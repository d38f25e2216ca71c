package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

func (r *Runner) leadIn() time.Duration {
	if r.Collector == nil {
		return 0
	}
	return r.Collector.LeadIn()
}

// guard is the collector's Guard: how long a window keeps from the next phase change (0 without a collector).
func (r *Runner) guard() time.Duration {
	if r.Collector == nil {
		return 0
	}
	return r.Collector.Guard()
}

// measure runs case c's windows on target t (switched and verified) as its policy says: the idle window, the load,
// and the collection of both.
func (r *Runner) measure(ctx context.Context, st *state, cr *caseRun, t target.Target, c scenario.Case) (results.CaseResult, []results.Sample) {
	switch {
	case c.Policy.Transition != nil:
		return r.measureTransition(ctx, st, cr, t, c)
	case c.Policy.Enforce != nil:
		return r.measureEnforce(ctx, st, cr, t, c)
	}
	// Every window keeps from a phase change: lead before it (the rate range: its first rate point looks back that
	// far), guard after it (two median sample spacings: the counters are interpolated at its end from the sample after it).
	lead, guard := max(r.leadIn(), r.guard()), r.guard()
	cr.res.Facts[results.FactCollectorLeadIn] = lead.String()
	if guard > 0 {
		cr.res.Facts[results.FactGuard] = guard.String()
	}
	var windows []results.Window
	if c.Policy.Idle > 0 {
		w, err := r.idleWindow(ctx, st, cr, c, lead, guard)
		if err != nil {
			return cr.fail("idle window: " + err.Error())
		}
		windows = append(windows, w)
		cr.res.Windows = append(cr.res.Windows, w)
	}
	if c.Policy.Load == nil {
		if err := r.collect(ctx, st, cr, t, c, windows); err != nil {
			return cr.fail(err.Error())
		}
		return cr.ok()
	}
	return r.loadAndCollect(ctx, st, cr, t, c, windows, lead, guard)
}

// idleWindow waits until nothing ran for one lead-in (the window's first rate point looks back that far), measures
// the policy's idle window, and keeps quiet one guard after it.
func (r *Runner) idleWindow(ctx context.Context, st *state, cr *caseRun, c scenario.Case, lead, guard time.Duration) (results.Window, error) {
	clk := r.clock()
	var w results.Window
	err := cr.timed("idle", func() error {
		if err := clk.Sleep(ctx, st.quietSince.Add(lead).Sub(clk.Now())); err != nil {
			return err
		}
		w.Kind, w.Start = results.WindowIdle, clk.Now()
		stop := timeBar(r.Progress, c.ID+" idle window", c.Policy.Idle)
		err := clk.Sleep(ctx, c.Policy.Idle)
		stop()
		w.End = clk.Now()
		if err != nil {
			return err
		}
		// The load (this case's, or the next case's after a case without load) starts one guard after the window:
		// the first sample after its end must still be idle (the load's lead-in used to start the moment the window
		// ended, and the demo's idle app CPU read 4x too high).
		return clk.Sleep(ctx, guard)
	})
	return w, err
}

// loadRequest is case c's load as its policy shapes it. A load around its window starts at least one lead-in before
// it and runs on at least one guard after it, so that the window's first rate point and the sample after its end
// see load only; the case records when either was raised. A back-to-back load is its window alone.
func loadRequest(cr *caseRun, c scenario.Case, lead, guard time.Duration) LoadRequest {
	lp := c.Policy.Load
	warm := lp.WarmUp + lp.TrimStart
	req := LoadRequest{Case: c, LeadIn: max(warm, lead), Window: lp.Window, CoolDown: lp.CoolDown}
	if lp.BackToBack {
		return req
	}
	if req.LeadIn > warm {
		cr.res.Facts[results.FactLeadIn] = fmt.Sprintf("%s (warm-up %s + trim %s raised to the rate range %s: the window's first rate point must see load only)",
			req.LeadIn, lp.WarmUp, lp.TrimStart, lead)
	}
	if guard > req.CoolDown {
		cr.res.Facts[results.FactCoolDown] = fmt.Sprintf("%s (%s raised to the guard %s: the sample after the window's end must see load only)",
			guard, req.CoolDown, guard)
		req.CoolDown = guard
	}
	return req
}

// loadLabel is the progress bar of a load and how long it runs.
func loadLabel(c scenario.Case, req LoadRequest) (string, time.Duration) {
	if c.Policy.Load.BackToBack {
		// The runs follow each other; the lead-in is trimmed from the resource window, not added before it.
		return fmt.Sprintf("%s %d sample(s), %s", c.ID, c.Samples, req.Window), req.Window
	}
	return fmt.Sprintf("%s load (lead-in %s, window %s, cool-down %s)", c.ID, req.LeadIn, req.Window, req.CoolDown),
		req.LeadIn + req.Window + req.CoolDown
}

// loadAndCollect runs case c's load after its idle windows, proves its data path where the mesh can, collects
// every window and decides the case's status.
func (r *Runner) loadAndCollect(ctx context.Context, st *state, cr *caseRun, t target.Target, c scenario.Case, windows []results.Window, lead, guard time.Duration) (results.CaseResult, []results.Sample) {
	req := loadRequest(cr, c, lead, guard)
	prover, _ := r.Mesh.(PathProver)
	var mark PathMark
	if prover != nil {
		var err error
		if mark, err = prover.BeforeLoad(ctx, t, c.Mode); err != nil {
			return cr.fail("before the load: " + err.Error())
		}
	}
	var lr LoadResult
	err := cr.timed("load", func() error {
		label, total := loadLabel(c, req)
		stop := timeBar(r.Progress, label, total)
		defer stop()
		var err error
		lr, err = r.Load.Run(ctx, t, req)
		return err
	})
	st.quietSince = r.clock().Now()
	// Also of a failed run: what it kept (raw output paths, the windows its runs took) explains the failure.
	cr.facts(lr.Facts)
	cr.res.SampleWarnings = lr.Warnings
	cr.res.LoadShortfall = lr.Shortfall
	cr.res.Windows = append(cr.res.Windows, lr.Windows...)
	if err != nil {
		st.nodesFailed(err) // a client's exec broken through its node's kubelet: the node is checked before the next case
		return cr.fail(loadFailure(err))
	}
	if len(lr.Notes) > 0 {
		cr.res.Facts[results.FactLoadNotes] = strings.Join(lr.Notes, "; ")
	}
	if !lr.Window.Start.IsZero() {
		windows = append(windows, lr.Window)
	}
	cr.add(c, lr.Samples, false)
	var pathErr error
	if prover != nil {
		var facts map[results.FactKey]string
		facts, pathErr = prover.AfterLoad(ctx, t, c.Mode, mark, lr.Requests)
		cr.facts(facts)
	}
	if err := r.collect(ctx, st, cr, t, c, windows); err != nil {
		return cr.fail(err.Error())
	}
	switch {
	case lr.Requests == 0:
		return cr.fail("load: no request completed in the measured window")
	case lr.Errors == lr.Requests:
		return cr.fail(fmt.Sprintf("load: every one of %d requests failed (see the responses samples for the status codes)", lr.Requests))
	}
	cr.res.Partial = lr.Partial
	res, samples := cr.ok()
	if pathErr != nil {
		// Measured, but not the mode: the figures are kept, the case does not count.
		res.Status, res.Reason = results.StatusFailed, "not the mode's data path: "+pathErr.Error()
	}
	return res, samples
}

// loadFailure is the recorded reason of a failed load: a *NotMeasuredError's own words, any other error after
// "load: ".
func loadFailure(err error) string {
	var nm *NotMeasuredError
	if errors.As(err, &nm) {
		return nm.Error()
	}
	return "load: " + err.Error()
}

// collect reads the resource use of the case's windows; its error is the case's failure reason.
func (r *Runner) collect(ctx context.Context, st *state, cr *caseRun, t target.Target, c scenario.Case, windows []results.Window) error {
	if r.Collector == nil {
		return nil
	}
	var warnings []string
	defer func() { cr.res.CollectorWarnings = warnings }()
	for _, w := range windows {
		var col Collection
		err := cr.timed("collect-"+w.Kind, func() error {
			var err error
			col, err = r.Collector.Collect(ctx, t, c, w)
			return err
		})
		warnings = append(warnings, col.Warnings...)
		cr.facts(col.Facts)
		if col.IngestWait > 0 {
			cr.res.Timings["collect-wait-"+w.Kind] = col.IngestWait.Round(time.Millisecond).String()
		}
		if !col.Window.Start.IsZero() {
			// What the figures cover, measured: the configured window length is a request, not a fact.
			cr.res.Facts[results.FactResourceWindowOf(w.Kind)] = col.Window.Duration().Round(time.Millisecond).String()
		}
		cr.add(c, col.Samples, w.Kind == results.WindowIdle)
		if err != nil {
			st.nodesFailed(err) // as for the load: an error that blames a node arms the gate
			var inc interface{ WindowIncomplete() bool }
			cr.incomplete = errors.As(err, &inc) && inc.WindowIncomplete()
			return fmt.Errorf("collect %s window: %w", w.Kind, err)
		}
	}
	return nil
}
