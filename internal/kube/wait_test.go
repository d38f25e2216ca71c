package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
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
