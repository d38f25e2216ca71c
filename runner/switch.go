package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// switchError is why a case could not be switched to its topology and mode: the runner step that failed (ensure,
// mode-switch, wait-ready, verify, load-clients, settle), what it was doing in words, and the adapter's error. Its
// text is the reason recorded with the failed case.
type switchError struct {
	Step string
	What string
	Err  error
}

func (e *switchError) Error() string { return e.What + ": " + e.Err.Error() }

func (e *switchError) Unwrap() error { return e.Err }

// switchTo deploys the case's topology if needed and puts it into the case's mode in the one order: Ensure -> Apply ->
// WaitReady -> Verify -> Prepare -> variant -> settle, skipping steps whose adapter the run lacks. A switch between a
// mode and one of its variants (variantOnly) only verifies the mode again and changes the variant. It returns nil on
// success, else a *SwitchError saying why the case cannot be measured.
func (r *Runner) switchTo(ctx context.Context, st *state, c scenario.Case, cr *caseRun) error {
	clk := r.clock()
	variantOnly := st.variantOnly(c)
	if st.applied {
		if err := cr.timed("remove-variant", func() error { return r.removeVariant(ctx, st) }); err != nil {
			return &switchError{Step: "remove-variant", What: "remove the variant " + st.variant, Err: err}
		}
	}
	if st.target == nil || st.topo != c.Topology.Name {
		if st.target == nil && st.leftover != nil {
			st.target, st.leftover = st.leftover, nil // what an earlier failed Ensure left goes first
		}
		if st.target != nil && !r.Keep {
			r.teardown(ctx, st)
		}
		var t target.Target
		if err := cr.timed("ensure", func() error {
			var err error
			t, err = r.Workloads.Ensure(ctx, c.Topology)
			return err
		}); err != nil {
			st.target = nil
			if len(t.Namespaces) > 0 {
				st.leftover = &t
			}
			what := "deploy"
			if c.Topology.Name != "" {
				what += " topology " + c.Topology.Name
			}
			return &switchError{Step: "ensure", What: what, Err: err}
		}
		st.leftover = nil
		st.target, st.topo, st.targetFacts = &t, c.Topology.Name, t.Facts
	}
	st.mode, st.variant, st.ready = c.Mode, c.Variant, false
	t := *st.target
	steps := r.modeSteps(ctx, t, c.Mode, c.Policy.RestartApp)
	if variantOnly {
		// The app, its mode and the load clients stay as they are; the mode's proof is read again for this case.
		steps = slices.DeleteFunc(steps, func(s switchStep) bool { return s.name != "verify" })
	}
	for _, s := range append(steps, r.variantSteps(ctx, st, t, c)...) {
		var facts map[results.FactKey]string
		err := cr.timed(s.name, func() error {
			var err error
			facts, err = s.f()
			return err
		})
		cr.facts(facts)
		if err != nil {
			return &switchError{Step: s.name, What: s.what, Err: err}
		}
	}
	if sr, ok := r.Workloads.(StartupReporter); ok {
		cr.res.PodStartups = st.newStartups(sr.PodStartups())
	}
	st.quietSince = clk.Now()
	if err := cr.timed("settle", func() error { return clk.Sleep(ctx, c.Policy.Settle) }); err != nil {
		return &switchError{Step: "settle", What: "settle", Err: err}
	}
	st.ready = true
	return nil
}

// variantOnly reports whether switching to case c changes only the variant: the target is deployed and ready in c's
// topology and mode, and c asks for no restart.
func (st *state) variantOnly(c scenario.Case) bool {
	return st.ready && st.target != nil && st.topo == c.Topology.Name && st.mode == c.Mode && st.variant != c.Variant && !c.Policy.RestartApp
}

// newStartups is ps without the pods a case recorded already (the pods this switch started), which it remembers.
func (st *state) newStartups(ps []results.PodStartup) []results.PodStartup {
	if st.startedPods == nil {
		st.startedPods = map[string]bool{}
	}
	var out []results.PodStartup
	for _, p := range ps {
		if !st.startedPods[p.UID] {
			st.startedPods[p.UID] = true
			out = append(out, p)
		}
	}
	return out
}

// switchStep is one timed step of a switch: its name (the timing and an interruption's phase), what it does in the
// words of a failure, and the call.
type switchStep struct {
	name, what string
	f          func() (map[results.FactKey]string, error)
}

// modeSteps are the steps that put deployed target t into mode, in order: those the run's adapters have; restart
// rolls the app out again after the switch (scenario.CasePolicy.RestartApp).
func (r *Runner) modeSteps(ctx context.Context, t target.Target, mode scenario.Mode, restart bool) []switchStep {
	var steps []switchStep
	if r.Mesh != nil {
		steps = append(steps, switchStep{"mode-switch", "apply mode " + string(mode), func() (map[results.FactKey]string, error) { return r.Mesh.Apply(ctx, t, mode) }})
	}
	if ar, ok := r.Mesh.(AppRestarter); ok && restart {
		steps = append(steps, switchStep{"restart-app", "restart the app in mode " + string(mode), func() (map[results.FactKey]string, error) { return ar.RestartApp(ctx, t) }})
	}
	if w, ok := r.Workloads.(ReadyWaiter); ok {
		steps = append(steps, switchStep{"wait-ready", "workloads not ready after switching to mode " + string(mode), func() (map[results.FactKey]string, error) {
			if err := w.WaitReady(ctx, t); err != nil {
				return nil, err
			}
			rec, ok := r.Mesh.(Reconciler)
			if !ok {
				return nil, nil
			}
			facts, restarted, err := rec.Reconcile(ctx, t, mode)
			if err == nil && restarted {
				err = w.WaitReady(ctx, t)
			}
			return facts, err
		}})
	}
	if r.Mesh != nil {
		steps = append(steps, switchStep{"verify", "not measured: verification of mode " + string(mode) + " failed", func() (map[results.FactKey]string, error) {
			return r.Mesh.Verify(ctx, t, mode)
		}})
	}
	if lc, ok := r.Load.(LoadClients); ok {
		steps = append(steps, switchStep{"load-clients", "load clients not ready in mode " + string(mode), func() (map[results.FactKey]string, error) {
			return nil, lc.Prepare(ctx, t, mode)
		}})
	}
	return steps
}

// variantSteps put case c's variant on target t, switched and verified in c.Mode, and verify it (none for a plain
// mode's case). The variant counts as applied from the first call on: a failed apply is removed like a finished one.
func (r *Runner) variantSteps(ctx context.Context, st *state, t target.Target, c scenario.Case) []switchStep {
	if c.Variant == scenario.VariantNone {
		return nil
	}
	va, ok := r.Mesh.(VariantApplier)
	if !ok {
		return []switchStep{{"variant", "not measured: variant " + c.Variant, func() (map[results.FactKey]string, error) {
			return nil, errors.New("this run cannot apply mesh settings")
		}}}
	}
	return []switchStep{{"variant", "not measured: variant " + c.Variant + " did not take effect in mode " + string(c.Mode), func() (map[results.FactKey]string, error) {
		st.applied = true
		return va.ApplyVariant(ctx, t, c.Mode, c.Variant)
	}}}
}

// removeVariant deletes what the last variant created on the current target, if any (the next switch starts from the
// plain mode); a removal that failed is tried again at the next switch and at the end.
func (r *Runner) removeVariant(ctx context.Context, st *state) error {
	va, ok := r.Mesh.(VariantApplier)
	if !ok || !st.applied || st.target == nil {
		return nil
	}
	if err := va.RemoveVariant(ctx, *st.target); err != nil {
		return err
	}
	st.applied = false
	return nil
}

// teardown removes the current target's variant objects, load clients and workloads; failures are logged (the next
// topology can still run; cleanup finds leftovers by label).
func (r *Runner) teardown(ctx context.Context, st *state) {
	t := *st.target
	if err := r.removeVariant(ctx, st); err != nil {
		r.log().Warn("remove the variant", "topology", t.Topology, "err", err)
	}
	if lc, ok := r.Load.(LoadClients); ok {
		if err := lc.Teardown(ctx, t); err != nil {
			r.log().Warn("tear down load clients", "topology", t.Topology, "err", err)
		}
	}
	if err := r.Workloads.Teardown(ctx, t); err != nil {
		r.log().Warn("tear down workloads", "topology", t.Topology, "err", err)
	}
	st.target, st.ready = nil, false
}

// finalize runs after the last case or after cancellation, with a fresh context bounded by DeleteTimeout.
func (r *Runner) finalize(ctx context.Context, st *state) error {
	if r.Keep {
		if st.target != nil {
			r.log().Info("keeping resources (--keep)", "topology", st.target.Topology, "namespaces", st.target.Namespaces)
		}
		return nil
	}
	d := r.DeleteTimeout
	if d <= 0 {
		d = DefaultDeleteTimeout
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	var errs []error
	if st.target == nil && st.leftover != nil {
		st.target = st.leftover
	}
	if st.target != nil {
		t := *st.target
		r.log().Info("tearing down", "topology", t.Topology, "namespaces", t.Namespaces)
		if err := r.retryTransient(fctx, func() error { return r.removeVariant(fctx, st) }); err != nil {
			errs = append(errs, fmt.Errorf("remove the variant %s: %w", st.variant, err))
		}
		// An API server that restarts or is overloaded right now must not leave the run's objects behind: each
		// step is retried while its error is transient, within the finalize budget.
		if lc, ok := r.Load.(LoadClients); ok {
			if err := r.retryTransient(fctx, func() error { return lc.Teardown(fctx, t) }); err != nil {
				errs = append(errs, fmt.Errorf("tear down load clients: %w", err))
			}
		}
		if err := r.retryTransient(fctx, func() error { return r.Workloads.Teardown(fctx, t) }); err != nil {
			errs = append(errs, fmt.Errorf("tear down workloads: %w", err))
		}
	}
	if r.Mesh != nil {
		if err := r.retryTransient(fctx, func() error { return r.Mesh.Restore(fctx) }); err != nil {
			errs = append(errs, fmt.Errorf("restore namespace labels and workload annotations: %w", err))
		}
	}
	return errors.Join(errs...)
}
