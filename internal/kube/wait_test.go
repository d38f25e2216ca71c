package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestWaitForErrors(t *testing.T) {
	t.Parallel()
	permanent := errors.New("pods is forbidden")
	tests := []struct {
		name  string
		check func(ctx context.Context, calls int) (bool, error)
		want  error
	}{
		{"done", func(context.Context, int) (bool, error) { return true, nil }, nil},
		{"never done", func(context.Context, int) (bool, error) { return false, nil }, ErrWaitTimeout},
		{"permanent error returned at once", func(context.Context, int) (bool, error) { return false, permanent }, permanent},
		{
			// client-go's limiter refuses a wait that would pass the deadline before the deadline passes: a timeout.
			"rate limiter near the deadline", func(ctx context.Context, _ int) (bool, error) {
				rl := flowcontrol.NewTokenBucketRateLimiter(0.001, 1)
				rl.Accept()
				if err := rl.Wait(ctx); err != nil {
					return false, fmt.Errorf("list pods: client rate limiter Wait returned an error: %w", err)
				}
				return false, errors.New("limiter did not refuse")
			}, ErrWaitTimeout,
		},
		{"deadline exceeded wrapped", func(context.Context, int) (bool, error) {
			return false, fmt.Errorf("get: %w", context.DeadlineExceeded)
		}, ErrWaitTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			start := time.Now()
			err := WaitFor(context.Background(), 300*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
				calls++
				return tc.check(ctx, calls)
			})
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("WaitFor = %v, want %v", err, tc.want)
			}
			if errors.Is(tc.want, permanent) && time.Since(start) > 250*time.Millisecond {
				t.Errorf("a permanent error must end the wait at once, took %v", time.Since(start))
			}
		})
	}
}

func TestWaitForCallerCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WaitFor(ctx, time.Minute, nil, func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// stepWhenWaiting moves the fake clock on by d whenever something waits on it, until ctx ends.
func stepWhenWaiting(ctx context.Context, fc *clocktesting.FakeClock, d time.Duration) {
	for ctx.Err() == nil {
		if fc.HasWaiters() {
			fc.Step(d)
		}
		time.Sleep(time.Millisecond)
	}
}

// A poll re-checks on its Interval as read from its Clock: an hour on the fake clock, no wall time.
func TestWaitIntervalOnClock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	go stepWhenWaiting(ctx, fc, time.Hour)
	start := fc.Now()
	calls := 0
	err := Wait{Interval: time.Hour, Clock: fc}.Until(ctx, func(context.Context) (bool, error) {
		calls++
		return calls == 3, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Until = %v after %d checks, want nil after 3", err, calls)
	}
	if got := fc.Since(start); got != 2*time.Hour {
		t.Errorf("the fake clock moved %v, want two intervals (2h)", got)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	go stepWhenWaiting(ctx, fc, time.Second)
	start := fc.Now()
	if err := Sleep(ctx, fc, 3*time.Second); err != nil || fc.Since(start) < 3*time.Second {
		t.Fatalf("Sleep = %v after %v on the fake clock, want nil after 3s", err, fc.Since(start))
	}
	if err := SleepUntil(ctx, fc, fc.Now().Add(-time.Second)); err != nil {
		t.Errorf("SleepUntil a past instant = %v, want nil at once", err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if err := Sleep(cctx, nil, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep with a cancelled ctx = %v, want context.Canceled", err)
	}
	if err := Sleep(cctx, nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// TestWaitPace: a flood of events (one every 2 ms for 400 ms) makes a paced wait check about every Pace, not once
// per event; an unpaced one checks far more often.
func TestWaitPace(t *testing.T) {
	t.Parallel()
	run := func(pace time.Duration) int {
		ch := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				select {
				case ch <- struct{}{}:
				default:
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		checks := 0
		start := time.Now()
		err := Wait{Timeout: 10 * time.Second, Trigger: ch, Pace: pace}.Until(ctx, func(context.Context) (bool, error) {
			checks++
			return time.Since(start) > 400*time.Millisecond, nil
		})
		if err != nil {
			t.Fatalf("pace %s: %v", pace, err)
		}
		return checks
	}
	paced, unpaced := run(100*time.Millisecond), run(0)
	if paced > 7 || paced < 3 {
		t.Errorf("paced wait checked %d times in 400 ms at a 100 ms pace, want about 5", paced)
	}
	if unpaced < 3*paced {
		t.Errorf("unpaced wait checked %d times, paced %d: the pace did not bound the checks", unpaced, paced)
	}
}
