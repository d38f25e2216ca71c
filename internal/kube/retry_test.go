package kube

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// pauseClock is a fake clock whose timers fire at once, moving the clock on by their duration, and which records
// each duration: a Retry's pauses run in fake time and can be read back.
type pauseClock struct {
	*clocktesting.FakeClock
	pauses []time.Duration
}

func newPauseClock() *pauseClock {
	return &pauseClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}
}

func (c *pauseClock) NewTimer(d time.Duration) clock.Timer {
	c.pauses = append(c.pauses, d)
	t := c.FakeClock.NewTimer(d)
	c.Step(d)
	return t
}

// TestRetryBackoffOnTheClock: TransientRetry pauses 500 ms, doubling to at most 8 s, on the clock it is given,
// until the operation succeeds; a final error or the end of ctx ends it at once with the operation's last error.
func TestRetryBackoffOnTheClock(t *testing.T) {
	t.Parallel()
	clk := newPauseClock()
	start := clk.Now()
	calls := 0
	n, err := TransientRetry(clk).Do(t.Context(), func() error {
		if calls++; calls < 7 {
			return apierrors.NewServiceUnavailable("restarting")
		}
		return nil
	})
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if err != nil || n != 7 || !slices.Equal(clk.pauses, want) {
		t.Errorf("Do = %d, %v with pauses %v; want 7 calls, nil, pauses %v", n, err, clk.pauses, want)
	}
	if got := clk.Since(start); got != 23500*time.Millisecond {
		t.Errorf("the fake clock moved %v, want the pauses' sum 23.5s", got)
	}

	final := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("rbac"))
	clk = newPauseClock()
	if n, err := TransientRetry(clk).Do(t.Context(), func() error { return final }); n != 1 || !errors.Is(err, final) || len(clk.pauses) != 0 {
		t.Errorf("final error: %d calls, %v, pauses %v; want 1 call, the error, no pause", n, err, clk.pauses)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := TransientRetry(newPauseClock())
	r.OnRetry = func(int, error) { cancel() } // ctx ends before the first pause
	if n, err := r.Do(ctx, func() error { return apierrors.NewServiceUnavailable("down") }); n != 1 || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("ctx ended: %d calls, %v; want 1 call and the last transient error", n, err)
	}
}

// TestRetryBounds: Attempts and Budget bound the calls; OnRetry hears each retried attempt; a constant backoff keeps
// its pause.
func TestRetryBounds(t *testing.T) {
	t.Parallel()
	down := errors.New("down")
	for _, tc := range []struct {
		name       string
		r          Retry
		wantCalls  int
		wantPauses []time.Duration
	}{
		{"attempts", Retry{Backoff: Backoff{Initial: 2 * time.Second}, Attempts: 3}, 3, []time.Duration{2 * time.Second, 2 * time.Second}},
		// Attempts begin at 0, 10 s and 20 s; one at 30 s would pass the budget.
		{"budget", Retry{Backoff: Backoff{Initial: 10 * time.Second}, Budget: 25 * time.Second}, 3, []time.Duration{10 * time.Second, 10 * time.Second}},
		{"capped first pause", Retry{Backoff: Backoff{Initial: time.Minute, Factor: 2, Max: 5 * time.Second}, Attempts: 2}, 2, []time.Duration{5 * time.Second}},
		{"not retryable", Retry{Backoff: Backoff{Initial: time.Second}, Retryable: func(error) bool { return false }}, 1, nil},
	} {
		clk := newPauseClock()
		tc.r.Clock = clk
		var heard []int
		tc.r.OnRetry = func(attempt int, err error) {
			if errors.Is(err, down) {
				heard = append(heard, attempt)
			}
		}
		calls := 0
		n, err := tc.r.Do(t.Context(), func() error { calls++; return down })
		if n != tc.wantCalls || calls != n || !errors.Is(err, down) || !slices.Equal(clk.pauses, tc.wantPauses) {
			t.Errorf("%s: Do = %d (%d calls), %v, pauses %v; want %d, the last error, pauses %v", tc.name, n, calls, err, clk.pauses, tc.wantCalls, tc.wantPauses)
		}
		if len(heard) != len(tc.wantPauses) || (len(heard) > 0 && heard[len(heard)-1] != len(heard)) {
			t.Errorf("%s: OnRetry heard attempts %v, want 1..%d", tc.name, heard, len(tc.wantPauses))
		}
	}
}
