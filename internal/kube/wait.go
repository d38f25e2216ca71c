package kube

import (
	"context"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// ErrWaitTimeout is returned by a wait when its own timeout passed (the caller's ctx is still alive).
var ErrWaitTimeout = errors.New("timed out")

// WatchOpener opens one watch; a wait re-opens it when the server closes it.
type WatchOpener func(ctx context.Context) (watch.Interface, error)

// resync bounds how long a watched wait trusts a quiet watch: it re-checks at least this often.
const resync = 5 * time.Second

// Wait is the one way meshbench waits for a condition: check runs at once, after every event of the Watches and at
// least every Interval, until it is done, ctx ends or Timeout passes (ErrWaitTimeout). Watches only trigger re-checks,
// so a missed event costs at most one Interval. An error from check ends the wait at once unless it is a deadline's.
type Wait struct {
	// Timeout bounds the wait; 0 leaves it to ctx. It is a context deadline (wall time), so it also ends a check
	// that hangs in a call.
	Timeout time.Duration
	// Watches trigger re-checks on their events.
	Watches []WatchOpener
	// Interval re-checks at least this often: 0 means 5 s, the resync of a watched wait; polls without watches
	// set their own.
	Interval time.Duration
	// Clock times the re-checks (nil = the wall clock); tests pass a fake.
	Clock clock.Clock
	// Trigger, when set, also re-checks on every receive: informers' event handlers (a cache the check reads)
	// send on it, without blocking, where a watch would.
	Trigger <-chan struct{}
	// Pace, when set, is the least time between a check and the next one an event triggers (events meanwhile
	// coalesce), on Clock: a check that walks a cache of thousands of pods must not run once per event of a rollout.
	Pace time.Duration
}

// WaitFor is Wait{Timeout: timeout, Watches: watches}.Until(ctx, check): a watched wait with the default resync.
func WaitFor(ctx context.Context, timeout time.Duration, watches []WatchOpener, check func(ctx context.Context) (bool, error)) error {
	return Wait{Timeout: timeout, Watches: watches}.Until(ctx, check)
}

// Until runs the wait (see Wait).
func (w Wait) Until(ctx context.Context, check func(ctx context.Context) (bool, error)) error {
	var (
		wctx   context.Context
		cancel context.CancelFunc
	)
	if w.Timeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, w.Timeout)
	} else {
		wctx, cancel = context.WithCancel(ctx) // the watches' pumps end with the wait
	}
	defer cancel()
	trigger := make(chan struct{}, 1)
	for _, open := range w.Watches {
		go pump(wctx, open, trigger)
	}
	interval := w.Interval
	if interval <= 0 {
		interval = resync
	}
	clk := orReal(w.Clock)
	for {
		done, err := check(wctx)
		if err != nil && wctx.Err() == nil && !deadlineErr(err) {
			return err
		}
		if done && err == nil {
			return nil
		}
		t := clk.NewTimer(interval)
		var paced error
		select {
		case <-wctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ErrWaitTimeout
		case <-trigger:
			paced = w.pace(wctx)
		case <-w.Trigger:
			paced = w.pace(wctx)
		case <-t.C():
		}
		t.Stop()
		if paced != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ErrWaitTimeout
		}
	}
}

// pace waits w.Pace on w.Clock after an event (nil at once without one); ctx's error when it ended first.
func (w Wait) pace(ctx context.Context) error {
	if w.Pace <= 0 {
		return nil
	}
	return Sleep(ctx, w.Clock, w.Pace)
}

// deadlineErr reports whether err means "the deadline is (about to be) reached", including client-go's rate limiter
// refusing a request whose wait would pass the deadline: an untyped error, so its text is the only mark.
func deadlineErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline")
}

// pump forwards the events of a (re-opened) watch as coalesced triggers until ctx ends. Its re-open pauses are
// wall time on purpose: they pace reconnects to a real server, and a fake clock that fires at once would spin.
func pump(ctx context.Context, open WatchOpener, trigger chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := open(ctx)
		if err != nil {
			if Sleep(ctx, nil, time.Second) != nil {
				return
			}
			continue
		}
		drain(ctx, w, trigger)
		w.Stop()
		if Sleep(ctx, nil, 200*time.Millisecond) != nil {
			return
		}
	}
}

// drain forwards events until the watch closes or ctx ends (fake watches never close by themselves).
func drain(ctx context.Context, w watch.Interface, trigger chan<- struct{}) {
	ch := w.ResultChan()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			select {
			case trigger <- struct{}{}:
			default:
			}
		}
	}
}
