package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// DefaultDeleteTimeout bounds teardown and label restore after the run (or after Ctrl-C).
const DefaultDeleteTimeout = 10 * time.Minute

// Runner executes a plan case by case as each case's policy (scenario.CasePolicy) says, never asking its kind, and
// records each case at once (a crash loses nothing); a failed case keeps its reason and the run goes on. The loop,
// retries, node skips and finalizers: docs/architecture.md (The case loop).
type Runner struct {
	Plan  scenario.Plan
	RunID string
	// Workloads deploys each topology; when it is also a ReadyWaiter, the switch waits for the rollout with it.
	Workloads Workloads
	// Mesh is nil when the plan has cni cases only: no mode is ever applied, verified or restored.
	Mesh meshSwitcher
	// Load runs each case's load; when it is also a LoadClients, the switch places its clients and the teardown
	// removes them.
	Load LoadGenerator
	// Collector is nil when resource use is not measured.
	Collector collector
	Store     Store
	// Done are the cases a resumed run already recorded as ok or skipped (results.Run.DoneCases); they are not run again.
	Done map[string]results.CaseResult
	// Keep keeps the app, the load clients and the mode labels after the run.
	Keep bool
	// DeleteTimeout bounds the finalizers (default DefaultDeleteTimeout).
	DeleteTimeout time.Duration
	Clock         runClock
	Log           *slog.Logger
	// Progress receives human progress bars for idle windows and load runs (stderr); nil disables them.
	Progress io.Writer
	// Requests counts the run's API requests; each case records its share (nil: not recorded).
	Requests requestCounter
	// Nodes, after a case failed on nodes (target.FailedNodes of a step's error), decides before each later case
	// whether it can run (nil: later cases run as they come).
	Nodes nodeGate
}

// Outcome summarises one invocation of Run.
type Outcome struct {
	Total       int      // cases in the plan
	Resumed     int      // skipped because a previous invocation recorded them
	OK          int      // measured in this invocation
	Skipped     int      // recorded skipped (the plan's Skip, or a node still unusable: Nodes) in this invocation
	Failed      []string // "<case id>: <reason>" of the cases that failed in this invocation
	Interrupted bool     // the context was cancelled before the plan finished
	// Where the interruption met the run: the case running or about to start, its step when it was running (a
	// step name of CaseResult.Timings: ensure, mode-switch, ..., load, collect-load; "" between cases), and when.
	InterruptedCase, InterruptedPhase string
	InterruptedAt                     time.Time
	// NotRun are the planned cases left without a record by an interruption, in plan order (the interrupted case
	// first): what --resume runs.
	NotRun []string
}

// Recorded is how many planned cases have a record after this invocation (earlier invocations' included).
func (o Outcome) Recorded() int { return o.Resumed + o.OK + o.Skipped + len(o.Failed) }

// interrupted fills the interruption fields: the run stopped at case i of the plan, in step phase.
func (r *Runner) interrupted(out *Outcome, i int, phase string) {
	out.Interrupted, out.InterruptedAt = true, r.clock().Now()
	out.InterruptedCase, out.InterruptedPhase = r.Plan.Cases[i].ID, phase
	for _, c := range r.Plan.Cases[i:] {
		if _, ok := r.Done[c.ID]; !ok {
			out.NotRun = append(out.NotRun, c.ID)
		}
	}
}

// state is what the cluster currently holds.
type state struct {
	target *target.Target
	// leftover is what a failed Ensure created: torn down by the finalizer.
	leftover    *target.Target
	topo        string
	mode        scenario.Mode
	variant     string    // the variant of the last switch (scenario.VariantNone: the plain mode)
	applied     bool      // a variant's objects may be on the target: removed before the next switch and at the end
	ready       bool      // switched, verified and load clients placed for (topo, mode, variant)
	failedKey   string    // topology/mode whose switch failed, for the rest of its consecutive cases
	failErr     error     // why (a *SwitchError)
	quietSince  time.Time // end of the last activity (switch, load) the next idle window must not see
	targetFacts map[results.FactKey]string
	// step is the case step running or last run (caseRun.timed), where an interruption finds the case.
	step string
	// downNodes are the nodes a case failed on that no check has seen usable since: the nodes target.FailedNodes
	// finds in a failed step's error (a switch's *target.NodeNotReadyError, a load's or collection's
	// *target.KubeletError), each once. Empty: the gate is never asked.
	downNodes []string
	// startedPods are the UIDs of the pods whose start a case recorded.
	startedPods map[string]bool
}

func (r *Runner) clock() runClock {
	if r.Clock == nil {
		return realClock{}
	}
	return r.Clock
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r.Log
}

// Run executes every case not in Done. It returns an error only when results cannot be recorded or finalizers fail;
// failed cases are in the Outcome (and recorded in the store).
func (r *Runner) Run(ctx context.Context) (out Outcome, err error) {
	out.Total = len(r.Plan.Cases)
	st := &state{}
	defer func() {
		if ferr := r.finalize(ctx, st); ferr != nil {
			err = errors.Join(err, ferr)
		}
	}()
	for i, c := range r.Plan.Cases {
		if ctx.Err() != nil {
			r.interrupted(&out, i, "")
			return out, nil
		}
		if _, ok := r.Done[c.ID]; ok {
			out.Resumed++
			r.log().Info("case already recorded, skipping", "case", c.ID)
			continue
		}
		r.log().Info("case", "n", fmt.Sprintf("%d/%d", c.Index, out.Total), "id", c.ID)
		var res results.CaseResult
		var samples []results.Sample
		if c.Skip != "" {
			res = r.newCase(c).res
			res.Status, res.Reason, res.End = results.StatusSkipped, c.Skip, res.Start
		} else {
			st.step = ""
			res, samples = r.countRequests(func() (results.CaseResult, []results.Sample) {
				if chk := r.nodeSkip(ctx, st, c); chk.Skip != "" {
					res := r.newCase(c).res
					res.Status, res.Reason, res.End = results.StatusSkipped, chk.Skip, res.Start
					res.Facts[results.FactSkippedNode] = chk.Node // --resume runs it again
					return res, nil
				}
				return r.runCase(ctx, st, c)
			})
		}
		if ctx.Err() != nil {
			// An interrupted case is not recorded: --resume runs it again.
			r.log().Warn("interrupted: case not recorded", "case", c.ID, "step", st.step)
			r.interrupted(&out, i, st.step)
			return out, nil
		}
		if err := r.Store.AppendCase(res, samples); err != nil {
			return out, fmt.Errorf("record case %s: %w", c.ID, err)
		}
		switch res.Status {
		case results.StatusOK:
			out.OK++
			r.log().Info("case done", "case", c.ID, "samples", len(samples), "took", res.End.Sub(res.Start).Round(time.Second))
		case results.StatusSkipped:
			out.Skipped++
			r.log().Info("case skipped", "case", c.ID, "reason", res.Reason)
		default:
			out.Failed = append(out.Failed, c.ID+": "+res.Reason)
			r.log().Warn("case failed", "case", c.ID, "reason", res.Reason)
		}
	}
	return out, nil
}

// nodeSkip says why case c is skipped because a node an earlier case failed on (state.downNodes) is still not
// usable and c needs it (Skip empty when it runs); it asks r.Nodes only after such a failure. When c runs, a group
// whose switch failed on those nodes is switched again.
func (r *Runner) nodeSkip(ctx context.Context, st *state, c scenario.Case) NodeCheck {
	if r.Nodes == nil || len(st.downNodes) == 0 {
		return NodeCheck{}
	}
	var t *target.Target
	if st.target != nil && st.topo == c.Topology.Name {
		t = st.target
	}
	chk := r.Nodes.Check(ctx, t, slices.Clone(st.downNodes))
	st.downNodes = slices.DeleteFunc(st.downNodes, func(n string) bool { return slices.Contains(chk.Recovered, n) })
	if chk.Skip != "" {
		return chk
	}
	if len(target.FailedNodes(st.failErr)) > 0 {
		st.failedKey, st.failErr = "", nil
	}
	return NodeCheck{}
}

// nodesFailed adds the nodes err blames (target.FailedNodes) to downNodes, each once: the gate checks them before
// the next case.
func (st *state) nodesFailed(err error) {
	for _, n := range target.FailedNodes(err) {
		if !slices.Contains(st.downNodes, n) {
			st.downNodes = append(st.downNodes, n)
		}
	}
}

// countRequests runs a case and records the API requests sent meanwhile (by every client of the run, so a
// background reader's requests count with the case they fall into).
func (r *Runner) countRequests(run func() (results.CaseResult, []results.Sample)) (results.CaseResult, []results.Sample) {
	if r.Requests == nil {
		return run()
	}
	t0, by0 := r.Requests.Counts()
	res, samples := run()
	t1, by1 := r.Requests.Counts()
	total, by := kube.CountsSince(t1, by1, t0, by0)
	res.APIRequests = &results.APIRequests{Total: total, ByVerbResource: by}
	return res, samples
}

// caseRun accumulates one case's record.
type caseRun struct {
	res     results.CaseResult
	clock   runClock
	samples []results.Sample
	// step, when set, receives the name of each step as it starts (state.step).
	step *string
	// incomplete is set when the collection failed because a window came back incomplete (an error with
	// WindowIncomplete() true, such as collectors/prom's *IncompleteError): the case may be measured again.
	incomplete bool
}

func (cr *caseRun) timed(step string, f func() error) error {
	if cr.step != nil {
		*cr.step = step
	}
	start := cr.clock.Now()
	err := f()
	cr.res.Timings[step] = cr.clock.Now().Sub(start).Round(time.Millisecond).String()
	return err
}

func (cr *caseRun) facts(m map[results.FactKey]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		cr.res.Facts[k] = m[k]
	}
}

func (cr *caseRun) fail(reason string) (results.CaseResult, []results.Sample) {
	cr.res.Status, cr.res.Reason = results.StatusFailed, reason
	cr.res.End = cr.clock.Now()
	return cr.res, cr.samples
}

func (cr *caseRun) ok() (results.CaseResult, []results.Sample) {
	cr.res.Status, cr.res.End = results.StatusOK, cr.clock.Now()
	return cr.res, cr.samples
}

// newCase starts a case's record: its policy's facts and, when the policy names the case, its mode, topology, load
// level and repetition.
func (r *Runner) newCase(c scenario.Case) *caseRun {
	clk := r.clock()
	cr := &caseRun{clock: clk, res: results.CaseResult{
		RunID: r.RunID, CaseID: c.ID, Start: clk.Now(), Timings: map[string]string{}, Facts: map[results.FactKey]string{},
	}}
	for k, v := range c.Policy.Facts { // scenario imports no results: its keys are the results.FactKey constants' text
		cr.res.Facts[results.FactKey(k)] = v
	}
	if c.Policy.Named {
		cr.res.Mode, cr.res.Variant, cr.res.Topology, cr.res.Load, cr.res.Repetition = results.Mode(c.Mode), c.Variant, c.Topology.Name, c.QPS.String(), c.Repetition
	}
	return cr
}

// add fills the case fields of samples and keeps them: the run and case, and when the policy names the case its
// mode, topology, repetition and load level (none on samples of an idle window).
func (cr *caseRun) add(c scenario.Case, samples []results.Sample, idle bool) {
	for _, s := range samples {
		s.RunID, s.CaseID = cr.res.RunID, c.ID
		if c.Policy.Named {
			s.Mode, s.Variant, s.Topology, s.Load, s.Repetition = results.Mode(c.Mode), c.Variant, c.Topology.Name, c.QPS.String(), c.Repetition
			if idle {
				s.Load = ""
			}
		}
		cr.samples = append(cr.samples, s)
	}
}

func (r *Runner) runCase(ctx context.Context, st *state, c scenario.Case) (results.CaseResult, []results.Sample) {
	clk := r.clock()
	cr := r.newCase(c)
	cr.step = &st.step
	mode := c.StartMode() // a transition case is switched to the mode it moves from
	key := c.Topology.Name + "/" + string(mode) + "+" + c.Variant
	if !st.ready || st.topo != c.Topology.Name || st.mode != mode || st.variant != c.Variant {
		if st.failedKey == key && st.topo == c.Topology.Name && st.mode == mode && st.variant == c.Variant {
			if r.Mesh == nil {
				return cr.fail("not measured: " + st.failErr.Error())
			}
			return cr.fail("not measured: switching to mode " + string(mode) + " failed earlier in this group: " + st.failErr.Error())
		}
		sc := c
		sc.Mode = mode
		if err := r.switchTo(ctx, st, sc, cr); err != nil {
			st.topo, st.mode, st.variant, st.ready, st.failedKey, st.failErr = c.Topology.Name, mode, c.Variant, false, key, err
			st.nodesFailed(err)
			return cr.fail(err.Error())
		}
		st.failedKey, st.failErr = "", nil
	}
	cr.facts(st.targetFacts)
	t := *st.target
	attempts := max(1, c.Policy.Attempts)
	for n := 1; ; n++ {
		before, timingsBefore := maps.Clone(cr.res.Facts), maps.Clone(cr.res.Timings)
		start := clk.Now()
		res, samples := r.measure(ctx, st, cr, t, c)
		if res.Status != results.StatusFailed || !cr.incomplete || n >= attempts || ctx.Err() != nil {
			if n > 1 {
				res.Facts[results.FactAttempts] = strconv.Itoa(n)
			}
			return res, samples
		}
		r.log().Warn("window incomplete: measuring the case again", "case", c.ID, "measurement", n+1, "of", attempts, "reason", res.Reason)
		// The discarded measurement leaves its reason and its length; its windows, samples and facts go.
		reason := cr.res.Reason
		cr.res.Facts, cr.res.Timings = before, timingsBefore
		cr.res.Facts[results.FactAttempt(n)] = reason
		cr.res.Timings[string(results.FactAttempt(n))] = clk.Now().Sub(start).Round(time.Millisecond).String()
		cr.res.Status, cr.res.Reason, cr.res.End, cr.res.Windows, cr.samples, cr.incomplete = "", "", time.Time{}, nil, nil, false
		cr.res.Partial, cr.res.CollectorWarnings, cr.res.SampleWarnings = "", nil, nil
	}
}
