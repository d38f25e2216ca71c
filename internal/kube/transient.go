package kube

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// transient reports whether err says the API server is briefly unavailable (restarting, overloaded, a dropped
// connection), so the same request may work a moment later: connection refused or reset, an EOF mid-response,
// 429, 500, 503, 504 and server timeouts. Everything else (not found, forbidden, invalid) is final.
func transient(err error) bool {
	if err == nil {
		return false
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
