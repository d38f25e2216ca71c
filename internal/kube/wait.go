package kube

import (
	"context"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// ErrWaitTimeout is returned by WaitFor when its own timeout passed (the caller's ctx is still alive).
var ErrWaitTimeout = errors.New("timed out")

// WatchOpener opens one watch; WaitFor re-opens it when the server closes it.
type WatchOpener func(ctx context.Context) (watch.Interface, error)

// resync bounds how long WaitFor trusts a quiet watch: it re-checks at least this often.
const resync = 5 * time.Second

// WaitFor runs check now, after every event of the watches and at least every resync, until check reports done,
// ctx ends (its error is returned) or timeout passes (ErrWaitTimeout). The watches only trigger re-checks; check
// reads the truth, so a missed or coalesced event costs at most one resync.
func WaitFor(ctx context.Context, timeout time.Duration, watches []WatchOpener, check func(ctx context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	trigger := make(chan struct{}, 1)
	for _, open := range watches {
		go pump(wctx, open, trigger)
	}
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		done, err := check(wctx)
		if err != nil && wctx.Err() == nil && !deadlineErr(err) {
			return err
		}
		if done && err == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ErrWaitTimeout
		case <-trigger:
		case <-tick.C:
		}
	}
}

// deadlineErr reports whether err means "the deadline is (about to be) reached". client-go's rate limiter refuses a
// request whose wait would pass the context deadline before the deadline has passed, with an error that does not
// wrap context.DeadlineExceeded: that is a timeout, not a failure of the check.
func deadlineErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline")
}

// pump forwards the events of a (re-opened) watch as coalesced triggers until ctx ends.
func pump(ctx context.Context, open WatchOpener, trigger chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := open(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		drain(ctx, w, trigger)
		w.Stop()
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
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
