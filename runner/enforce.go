package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// removeTimeout bounds the removal of a deny policy after its case was interrupted or its change failed.
const removeTimeout = 30 * time.Second

// measureEnforce runs enforce case c (target t switched and verified in c.Mode): the load, half of it the denied
// slice, each slice recorded per second, and beside it the deny policy applied Before into the load and removed Hold
// later, both moments recorded. Its samples are not kept (the denied slice's refusals are the point, not an error
// rate). The policy never outlives the case: a failed or interrupted change removes it on a fresh context.
func (r *Runner) measureEnforce(ctx context.Context, st *state, cr *caseRun, t target.Target, c scenario.Case) (results.CaseResult, []results.Sample) {
	en, ok := r.Mesh.(PolicyEnforcer)
	if !ok {
		return cr.fail("not measured: this run cannot apply policies to the mesh")
	}
	clk := r.clock()
	ep := c.Policy.Enforce
	rec := &results.Enforcement{Mode: results.Mode(c.Mode)}
	cr.res.Enforcement = rec
	out, changeErr := r.underLoad(ctx, cr, t, c, func() error {
		if err := cr.timed("before-policy", func() error { return clk.Sleep(ctx, ep.Before) }); err != nil {
			return err
		}
		if err := cr.timed("apply-policy", func() error { return en.ApplyDeny(ctx, t, c.Mode) }); err != nil {
			return errors.Join(fmt.Errorf("apply the deny policy: %w", err), removeAfter(ctx, en, t))
		}
		rec.Applied = clk.Now()
		if err := cr.timed("hold-policy", func() error { return clk.Sleep(ctx, ep.Hold) }); err != nil {
			return errors.Join(err, removeAfter(ctx, en, t))
		}
		if err := cr.timed("remove-policy", func() error { return en.RemoveDeny(ctx, t) }); err != nil {
			return errors.Join(fmt.Errorf("remove the deny policy: %w", err), removeAfter(ctx, en, t))
		}
		rec.Removed = clk.Now()
		return nil
	})
	st.quietSince = clk.Now()
	rec.Allowed, rec.Denied = out.lr.Slices[results.SliceAllowed], out.lr.Slices[results.SliceDenied]
	if reason := recordUnderLoad(st, cr, out, changeErr); reason != "" {
		return cr.fail(reason)
	}
	if len(rec.Denied) == 0 {
		return cr.fail("load: no per-second record of the denied slice (the load generator kept none)")
	}
	return cr.ok()
}

// removeAfter removes the deny policy on a context of its own (ctx may be cancelled: Ctrl-C), bounded by removeTimeout.
func removeAfter(ctx context.Context, en PolicyEnforcer, t target.Target) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	if err := en.RemoveDeny(rctx, t); err != nil {
		return fmt.Errorf("remove the deny policy: %w", err)
	}
	return nil
}
