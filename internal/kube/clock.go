package kube

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// The one clock abstraction of meshbench is k8s.io/utils/clock.Clock (the Kubernetes projects' own): production
// code takes a clock.Clock field that defaults to clock.RealClock{}, tests pass a fake (k8s.io/utils/clock/testing,
// or one whose timers fire at once). Sleep is the one context-aware sleep on it.

// orReal is clk, or the wall clock when clk is nil (the zero value of a struct with a Clock field).
func orReal(clk clock.Clock) clock.Clock {
	if clk == nil {
		return clock.RealClock{}
	}
	return clk
}

// Sleep waits d on clk (nil = the wall clock) or until ctx ends, whichever comes first; it returns ctx's error when
// ctx ended first (also when it had ended before), nil otherwise. A d <= 0 does not wait.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	t := orReal(clk).NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// SleepUntil waits until clk reads at (nil = the wall clock) or ctx ends, like Sleep.
func SleepUntil(ctx context.Context, clk clock.Clock, at time.Time) error {
	clk = orReal(clk)
	return Sleep(ctx, clk, at.Sub(clk.Now()))
}
