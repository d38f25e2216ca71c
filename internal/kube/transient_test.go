package kube

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

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
		if got := transient(tc.err); got != tc.want {
			t.Errorf("%s: transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}
