package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
)

// failedLoad returns what it was given: a failed run's result (facts, windows) and its error.
type failedLoad struct {
	*calls
	lr  LoadResult
	err error
}

func (f failedLoad) Run(_ context.Context, _ target.Target, req LoadRequest) (LoadResult, error) {
	f.add("load %s", req.Case.ID)
	return f.lr, f.err
}

// A failed load fails its case like any other: its facts and windows are kept, nothing is collected, the run goes
// on. The reason is a *NotMeasuredError's own words (the generator says what failed, sample by sample), any other
// error's after "load: ".
func TestFailedLoad(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sampleWindows := []results.Window{{Kind: results.WindowTest, Start: start, End: start.Add(time.Second)},
		{Kind: results.WindowTest, Start: start.Add(time.Second), End: start.Add(2 * time.Second)}}
	notMeasured := &NotMeasuredError{Err: errors.New("sample 1: iperf3: connection refused; sample 2: iperf3: connection refused")}
	for _, tc := range []struct {
		name       string
		err        error
		wantReason string
	}{
		{name: "not measured: the generator's own words", err: notMeasured, wantReason: notMeasured.Err.Error()},
		{name: "not measured, wrapped", err: fmt.Errorf("bench: %w", notMeasured), wantReason: notMeasured.Err.Error()},
		{name: "any other error", err: errors.New("exec: pod client: connection reset"), wantReason: "load: exec: pod client: connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &calls{}
			clk := &fakeClock{now: start}
			st := &memStore{}
			plan := cniPlan()
			plan.Cases = plan.Cases[1:2] // same-node/tcp
			second := plan.Cases[0]
			second.ID, second.Index = "same-node/udp", 2
			plan.Cases = append(plan.Cases, second)
			lr := LoadResult{Windows: sampleWindows, Facts: map[results.FactKey]string{"raw.1": "raw/1.json"}}
			r := &Runner{Plan: plan, RunID: "cni-1", Workloads: testPods{c}, Load: failedLoad{c, lr, tc.err},
				Collector: fakeCollector{c}, Store: st, Clock: clk}
			out, err := r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Failed) != 2 || len(st.cases) != 2 {
				t.Fatalf("outcome %+v: want both cases run and failed", out)
			}
			rec := st.cases[0]
			if rec.Status != results.StatusFailed || rec.Reason != tc.wantReason {
				t.Errorf("status %s reason %q, want failed %q", rec.Status, rec.Reason, tc.wantReason)
			}
			if rec.Facts["raw.1"] == "" || !slices.Equal(rec.Windows, sampleWindows) {
				t.Errorf("facts %v windows %v: want the failed run's kept", rec.Facts, rec.Windows)
			}
			if want := []string{"ensure", "load same-node/tcp", "load same-node/udp", "teardown cni (ctx ok: true)"}; !slices.Equal(c.log, want) {
				t.Errorf("calls %q, want %q (nothing collected for a failed load)", c.log, want)
			}
		})
	}
}
