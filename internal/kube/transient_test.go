package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	gr := schema.GroupResource{Resource: "namespaces"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused (API server restarting)", fmt.Errorf("delete namespace: %w", refused), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"not found", apierrors.NewNotFound(gr, "x"), false},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("rbac")), false},
		{"plain", errors.New("boom"), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRetryTransient: transient errors are retried until success; a final error or the end of ctx stops at once.
func TestRetryTransient(t *testing.T) {
	t.Parallel()
	calls := 0
	err := RetryTransient(context.Background(), func() error {
		calls++
		if calls < 3 {
			return apierrors.NewServiceUnavailable("restarting")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("err %v after %d calls, want success on the 3rd", err, calls)
	}
	calls = 0
	final := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("rbac"))
	if err := RetryTransient(context.Background(), func() error { calls++; return final }); !errors.Is(err, final) || calls != 1 {
		t.Errorf("final error: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	err = RetryTransient(ctx, func() error { return apierrors.NewServiceUnavailable("down") })
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("ctx ended: %v, want the last transient error", err)
	}
}
