package cni

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// RecordedPlacement is the placement the kept cases measured on (their node-a and node-b facts), so the resumed
// cases run on the same nodes. ok is false when no kept case names its nodes; kept cases on different nodes are an
// error.
func RecordedPlacement(done map[string]results.CaseResult) (p scenario.CNIPlacement, ok bool, err error) {
	var from string
	for _, id := range slices.Sorted(maps.Keys(done)) {
		c := done[id]
		a := c.Facts[results.FactNodeA]
		if a == "" {
			continue
		}
		got := scenario.CNIPlacement{ClientNode: a, ServerNode: c.Facts[results.FactNodeB]}
		if !ok {
			p, ok, from = got, true, id
			continue
		}
		if got != p {
			return p, ok, fmt.Errorf("recorded cases ran on different nodes: %s on node-a %q node-b %q, %s on node-a %q node-b %q",
				from, p.ClientNode, p.ServerNode, id, got.ClientNode, got.ServerNode)
		}
	}
	return p, ok, nil
}

// ErrPlanChanged marks a resume refused because the plan on this cluster is not the recorded run's.
var ErrPlanChanged = errors.New("the plan differs from the recorded run's")

// planResume is the planned cases without a kept record (done: results.Run.DoneCases), in plan order. A kept case
// the plan does not hold, or a skip that differs from the record's, means the plan is not the recorded run's: an
// error naming the cases. It is pure.
func planResume(done map[string]results.CaseResult, planned []scenario.Case) ([]scenario.Case, error) {
	var run []scenario.Case
	var errs []error
	inPlan := map[string]bool{}
	for _, c := range planned {
		inPlan[c.ID] = true
		rec, kept := done[c.ID]
		switch {
		case !kept:
			run = append(run, c)
		case rec.Status == results.StatusSkipped && c.Skip == "":
			errs = append(errs, fmt.Errorf("case %s was recorded skipped (%s) but the cluster can run it now", c.ID, rec.Reason))
		case rec.Status != results.StatusSkipped && c.Skip != "":
			errs = append(errs, fmt.Errorf("case %s was recorded %s but the cluster cannot run it now (%s)", c.ID, rec.Status, c.Skip))
		}
	}
	var extra []string
	for id := range done {
		if !inPlan[id] {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		errs = append(errs, fmt.Errorf("recorded case(s) %s are not in the plan", strings.Join(extra, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlanChanged, err)
	}
	return run, nil
}

// Resume prepares the bench to continue the recorded run whose case lines are recorded (cases.jsonl): it plans
// which cases run (planResume), deletes what a killed run of this run ID left in the cluster (cleanupLeftovers) and
// removes the raw output of the cases that run again (removeRaw). It returns the kept cases for the runner's Done.
func (r *Bench) Resume(ctx context.Context, recorded []results.CaseResult) (map[string]results.CaseResult, error) {
	done := (&results.Run{Cases: recorded}).DoneCases()
	run, err := planResume(done, r.Cases())
	if err != nil {
		return nil, err
	}
	if err := r.cleanupLeftovers(ctx); err != nil {
		return nil, err
	}
	if r.cfg.RunDir != "" {
		ids := make([]string, 0, len(run))
		for _, c := range run {
			ids = append(ids, c.ID)
		}
		removed, err := removeRaw(r.cfg.RunDir, ids)
		if err != nil {
			return nil, err
		}
		if len(removed) > 0 {
			r.d.Log.Info("removed raw output of cases that run again", "files", len(removed))
		}
	}
	r.d.Log.Info("resuming", "kept", len(done), "to run", len(run))
	return done, nil
}

// cleanupLeftovers deletes the run namespace a killed session (or --keep) left, with Teardown's deletion, so that
// Deploy starts from nothing. A namespace of that name without this run's labels is not meshbench's: an error.
func (r *Bench) cleanupLeftovers(ctx context.Context) error {
	cctx, cancel := callCtx(ctx)
	ns, err := r.d.Kube.CoreV1().Namespaces().Get(cctx, r.cfg.Namespace, metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look for leftovers of run %s: %w", r.cfg.RunID, err)
	}
	for k, v := range r.objs.labels("") {
		if ns.Labels[k] != v {
			return fmt.Errorf("namespace %s exists but is not run %s's (label %s=%q, want %q): delete or rename it, then resume again",
				ns.Name, r.cfg.RunID, k, ns.Labels[k], v)
		}
	}
	r.d.Log.Info("deleting the namespace a previous session of the run left", "namespace", ns.Name)
	dctx, cancel := context.WithTimeout(ctx, r.cfg.DeleteTimeout)
	defer cancel()
	if err := deleteNamespace(dctx, r.d.Kube, ns.Name); err != nil {
		return fmt.Errorf("clean up the previous session: %w (or run meshbench cleanup --run %s)", err, r.cfg.RunID)
	}
	return nil
}
