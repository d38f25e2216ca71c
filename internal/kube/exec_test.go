package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilexec "k8s.io/client-go/util/exec"
)

// TestExecPathFailed: what a gone kubelet does to an exec (refused, broken stream, the API server's 5xx) is a path
// failure; the command's own exit, the API server's refusals and an ended context are not. The errors are wrapped
// as PodExecer wraps them.
func TestExecPathFailed(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error {
		return fmt.Errorf("exec %q in %s/%s: %w (stderr: %s)", "meshbench-agent load", "mb-single", "lg-a", err, "")
	}
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"non-zero exit", wrap(utilexec.CodeExitError{Err: errors.New("command terminated with exit code 1"), Code: 1}), false},
		{"connection refused", wrap(fmt.Errorf("dial tcp 172.18.0.3:10250: connect: %w", syscall.ECONNREFUSED)), true},
		{"stream broken", wrap(io.ErrUnexpectedEOF), true},
		{"websocket close", wrap(errors.New("websocket: close 1006 (abnormal closure): unexpected EOF")), true},
		{"error dialing backend (500)", wrap(apierrors.NewInternalError(errors.New("error dialing backend: dial tcp 172.18.0.3:10250: connect: connection refused"))), true},
		{"proxy unavailable (503)", wrap(apierrors.NewServiceUnavailable("error trying to reach service")), true},
		{"forbidden", wrap(apierrors.NewForbidden(pods, "lg-a", errors.New("pods/exec"))), false},
		{"unauthorized", wrap(apierrors.NewUnauthorized("token expired")), false},
		{"pod not found", wrap(apierrors.NewNotFound(pods, "lg-a")), false},
		{"cancelled", wrap(context.Canceled), false},
		{"deadline", wrap(context.DeadlineExceeded), false},
	} {
		if got := ExecPathFailed(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
