package kube

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Backoff paces the attempts of a Retry: the first pause is Initial, each next one Factor times the last (Factor
// <= 1: every pause is Initial), never more than Max (0: no cap).
type Backoff struct {
	Initial time.Duration
	Factor  float64
	Max     time.Duration
}

// pause is the pause after the pause p (0: the first one).
func (b Backoff) pause(p time.Duration) time.Duration {
	if p == 0 {
		p = b.Initial
	} else if b.Factor > 1 {
		p = time.Duration(float64(p) * b.Factor)
	}
	if b.Max > 0 {
		p = min(p, b.Max)
	}
	return p
}

// Retry is the one way meshbench retries an operation that may fail for a moment (an API server or Prometheus
// restarting, a connection not yet set up): attempts paced by Backoff on the injected Clock, so tests run the
// pauses in fake time. Waiting for a condition is Wait, not Retry.
type Retry struct {
	Backoff Backoff
	// Attempts bounds the calls (0: until ctx ends).
	Attempts int
	// Budget bounds the time over all attempts: no pause is taken that would start an attempt later than Budget
	// after the first began (0: no bound).
	Budget time.Duration
	// Retryable says which errors another attempt may cure (nil: every error).
	Retryable func(error) bool
	// OnRetry, when set, hears of each failed attempt (1 for the first) that is retried, before its pause.
	OnRetry func(attempt int, err error)
	// Clock times the pauses and the budget (nil = the wall clock).
	Clock clock.Clock
}

// TransientRetry retries what an API server that restarts or sheds load refuses for a moment (transient), with
// pauses doubling from 500 ms to 8 s on clk (nil = the wall clock), until ctx ends: for steps that must not be lost
// to a restart, such as the teardown of what a run created.
func TransientRetry(clk clock.Clock) Retry {
	return Retry{Backoff: Backoff{Initial: 500 * time.Millisecond, Factor: 2, Max: 8 * time.Second}, Retryable: transient, Clock: clk}
}

// Do calls f until it succeeds, fails with an error Retryable refuses, the attempts or the budget are used up, or
// ctx ends (checked after each call and during the pauses). It returns the number of calls and f's last error
// (nil on success): never an error of its own, so a caller that must tell an interrupt apart checks ctx.
func (r Retry) Do(ctx context.Context, f func() error) (int, error) {
	clk := orReal(r.Clock)
	began := clk.Now()
	var pause time.Duration
	for n := 1; ; n++ {
		err := f()
		if err == nil || ctx.Err() != nil || (r.Retryable != nil && !r.Retryable(err)) || (r.Attempts > 0 && n >= r.Attempts) {
			return n, err
		}
		pause = r.Backoff.pause(pause)
		if r.Budget > 0 && clk.Since(began)+pause > r.Budget {
			return n, err
		}
		if r.OnRetry != nil {
			r.OnRetry(n, err)
		}
		if Sleep(ctx, clk, pause) != nil {
			return n, err
		}
	}
}
