package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// cniTopology names the target of a pod network benchmark in the runner's logs.
const cniTopology = "cni"

// cniWorkloads is the bench's test pods as the runner's Workloads. It is no runner.ReadyWaiter: Deploy waits for
// every test pod and listening server itself.
type cniWorkloads struct{ b *cni.Bench }

// Ensure deploys the test pods; a namespace it created is in the target also on failure, for the finalizer.
func (a cniWorkloads) Ensure(ctx context.Context, _ scenario.Topology) (target.Target, error) {
	facts, err := a.b.Deploy(ctx)
	t := target.Target{Facts: factKeys(facts)}
	if a.b.Created() {
		t.Topology, t.Namespaces = cniTopology, []string{a.b.Namespace()}
	}
	return t, err
}

func (a cniWorkloads) Teardown(ctx context.Context, _ target.Target) error { return a.b.Teardown(ctx) }

// cniLoad is the bench's samples as the runner's LoadGenerator. It is no runner.LoadClients: the samples run in
// the test pods cniWorkloads deployed.
type cniLoad struct{ b *cni.Bench }

// Run runs the case's samples back to back; a case none of whose samples succeeded is a *runner.NotMeasuredError
// saying why, sample by sample.
func (a cniLoad) Run(ctx context.Context, _ target.Target, req runner.LoadRequest) (runner.LoadResult, error) {
	m, err := a.b.Measure(ctx, req.Case)
	lr := runner.LoadResult{Window: m.Window, Windows: m.SampleWindows, Samples: m.Samples, Facts: factKeys(m.Facts), Warnings: m.Warnings,
		Requests: int64(m.Ran), Errors: int64(m.Failed), Partial: m.Partial}
	if err != nil {
		return lr, &runner.NotMeasuredError{Err: err}
	}
	return lr, nil
}

// cniCollector is the bench's resource reading as the runner's Collector.
type cniCollector struct {
	b     *cni.Bench
	guard time.Duration
}

func (a cniCollector) Collect(ctx context.Context, _ target.Target, c scenario.Case, w results.Window) (runner.Collection, error) {
	samples, facts := a.b.Resources(ctx, c, w)
	return runner.Collection{Window: w, Samples: samples, Facts: factKeys(facts)}, nil
}

func (a cniCollector) LeadIn() time.Duration { return a.b.RateRange() }

// Guard is the resource collector's: the runner keeps it after the idle case's window, before the first test's
// traffic.
func (a cniCollector) Guard() time.Duration { return a.guard }

// kubeClock is a k8s.io/utils/clock.Clock (cni's time) as the runner's Clock, so that one clock drives both.
type kubeClock struct{ c clock.Clock }

func (k kubeClock) Now() time.Time { return k.c.Now().UTC() }

func (k kubeClock) Sleep(ctx context.Context, d time.Duration) error { return kube.Sleep(ctx, k.c, d) }

// CNICases is one pod network benchmark's cases run through runner.Runner: the same case loop, recording,
// interruption and finalizer semantics as meshbench run.
type CNICases struct {
	Bench *cni.Bench
	RunID string
	Store runner.Store
	// Done are the cases a resumed run keeps (Bench.Resume, through NewCNIBench): the runner does not run them again.
	Done map[string]results.CaseResult
	// Measured says whether resource use is read (the bench has a ResourceCollector).
	Measured bool
	// Guard is the resource collector's guard (Collector.Guard), kept after the idle case's window.
	Guard time.Duration
	// Keep keeps the namespace and pods after the run (--keep).
	Keep          bool
	DeleteTimeout time.Duration
	// Clock is the bench's clock (nil: the wall clock).
	Clock    clock.Clock
	Log      *slog.Logger
	Progress io.Writer
}

// RunCNICases runs the bench's cases. The error is the runner's, or wraps context.Canceled when the run was
// interrupted, or is a *cni.CasesFailedError naming the cases that failed.
func RunCNICases(ctx context.Context, c CNICases) (runner.Outcome, error) {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &runner.Runner{
		Plan: scenario.Plan{Cases: c.Bench.Cases()}, RunID: c.RunID, Store: c.Store, Done: c.Done, Keep: c.Keep,
		DeleteTimeout: c.DeleteTimeout, Clock: kubeClock{clk}, Log: c.Log, Progress: c.Progress,
		Workloads: cniWorkloads{c.Bench}, Load: cniLoad{c.Bench},
	}
	if c.Measured {
		r.Collector = cniCollector{b: c.Bench, guard: c.Guard}
	}
	out, err := r.Run(ctx)
	switch {
	case err != nil:
		return out, err
	case out.Interrupted:
		return out, fmt.Errorf("interrupted after %d of %d cases: %w", out.Recorded(), out.Total, context.Cause(ctx))
	case len(out.Failed) > 0:
		var ids []string
		for _, f := range out.Failed {
			id, _, _ := strings.Cut(f, ": ")
			ids = append(ids, id)
		}
		return out, &cni.CasesFailedError{Cases: ids}
	}
	return out, nil
}

// NewCNIBench is cni.New for a new run (recorded nil) or a resumed one (kept cases' nodes pinned, the plan checked
// against the record, a killed session's leftovers removed: cni.Bench.Resume); done is what the runner keeps. The
// bench is returned with New's error too (its report holds the refused placement).
func NewCNIBench(ctx context.Context, nc cni.Config, d cni.Deps, recorded *results.Run) (b *cni.Bench, done map[string]results.CaseResult, err error) {
	if recorded != nil {
		pin, ok, err := cni.RecordedPlacement(recorded.DoneCases())
		if err != nil {
			return nil, nil, inputError(fmt.Errorf("resume %s: %w", recorded.Dir, err))
		}
		if ok {
			nc.CNI.Placement = pin
		}
		b, err = cni.New(ctx, nc, d)
		if err != nil && ok {
			return b, nil, fmt.Errorf("resume %s: the kept cases ran on node-a %q node-b %q: %w; start a new run without --resume",
				recorded.Dir, pin.ClientNode, pin.ServerNode, err)
		}
	} else {
		b, err = cni.New(ctx, nc, d)
	}
	if err != nil || recorded == nil {
		return b, nil, err
	}
	done, err = b.Resume(ctx, recorded.Cases)
	if errors.Is(err, cni.ErrPlanChanged) {
		return b, nil, inputError(fmt.Errorf("resume %s: %w; start a new run (meshbench cni -f SCENARIO, without --resume)", recorded.Dir, err))
	}
	if err != nil {
		return b, nil, fmt.Errorf("resume %s: %w", recorded.Dir, err)
	}
	return b, done, nil
}

// factKeys are the bench's case facts as the runner records them: cni names its own keys (the results.Fact*
// constants where a reader shares them, raw.<n>, client, server, ...).
func factKeys(m map[string]string) map[results.FactKey]string {
	if m == nil {
		return nil
	}
	out := make(map[results.FactKey]string, len(m))
	for k, v := range m {
		out[results.FactKey(k)] = v
	}
	return out
}
