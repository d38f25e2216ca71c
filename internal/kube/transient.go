package kube

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Transient reports whether err says the API server is briefly unavailable (restarting, overloaded, a dropped
// connection), so the same request may work a moment later: connection refused or reset, an EOF mid-response,
// 429, 500, 503, 504 and server timeouts. Everything else (not found, forbidden, invalid) is final.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// RetryTransient runs f until it succeeds, fails with an error that is not Transient, or ctx ends (then the last
// error is returned). Pauses double from 500 ms to 8 s. For steps that must not be lost to an API server restart:
// the teardown of what a run created.
func RetryTransient(ctx context.Context, f func() error) error {
	pause := 500 * time.Millisecond
	for {
		err := f()
		if !Transient(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 8*time.Second)
	}
}
