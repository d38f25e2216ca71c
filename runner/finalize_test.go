package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// flakyTeardown is fakeWorkloads whose Teardown the API server refuses (503) the first `fails` times; it notes the
// runner clock's time of each call.
type flakyTeardown struct {
	fakeWorkloads
	fails int
	at    *[]time.Time
}

func (f flakyTeardown) Teardown(ctx context.Context, t target.Target) error {
	*f.at = append(*f.at, f.clock.Now())
	if len(*f.at) <= f.fails {
		return apierrors.NewServiceUnavailable("restarting")
	}
	return f.fakeWorkloads.Teardown(ctx, t)
}

// TestFinalizeRetriesOnTheRunnerClock: a teardown the API server refuses for a moment is retried with
// kube.TransientRetry's backoff (500 ms, doubling) on the runner's clock, so its pauses pass in the fake clock's
// time, not the wall clock's.
func TestFinalizeRetriesOnTheRunnerClock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	var at []time.Time
	h.r.Workloads = flakyTeardown{fakeWorkloads: fakeWorkloads{h.calls, h.clock}, fails: 3, at: &at}
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var pauses []time.Duration
	for i := 1; i < len(at); i++ {
		pauses = append(pauses, at[i].Sub(at[i-1]))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}
	if !slices.Equal(pauses, want) {
		t.Errorf("teardown called %d times with pauses %v on the runner clock, want 4 calls and pauses %v", len(at), pauses, want)
	}
	if h.calls.log[len(h.calls.log)-2] != "teardown single (ctx ok: true)" {
		t.Errorf("the teardown did not succeed after the retries: %v", h.calls.log[len(h.calls.log)-3:])
	}
}

// blockingClock's Sleep lasts until its ctx ends.
type blockingClock struct{ fakeClock }

func (*blockingClock) Sleep(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestKubeClockTimer: a timer of the runner's clock fires when the clock's Sleep ends, and Stop and Reset end a
// pending wait without a tick.
func TestKubeClockTimer(t *testing.T) {
	t.Parallel()
	fc := &fakeClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	tm := kubeClock{fc}.NewTimer(2 * time.Second)
	if got := <-tm.C(); !got.Equal(fc.now) || fc.now.Sub(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) != 2*time.Second {
		t.Errorf("tick %v at %v: want the fake clock moved on 2s", got, fc.now)
	}
	if tm.Stop() {
		t.Error("Stop after the tick: want false (nothing pending)")
	}
	tm = kubeClock{&blockingClock{}}.NewTimer(time.Hour)
	if !tm.Reset(time.Hour) || !tm.Stop() || tm.Stop() {
		t.Error("Reset and Stop of a pending wait: want true, true, then false")
	}
	select {
	case <-tm.C():
		t.Error("a stopped timer ticked")
	case <-time.After(10 * time.Millisecond):
	}
}
