package cni

import (
	"errors"
	"testing"

	"github.com/meshbench/meshbench/internal/nettool"
)

// The retry decision is on the error's type: the same words in a plain error are not a setup failure.
func TestRetryableIsTyped(t *testing.T) {
	t.Parallel()
	if retryable(errors.New("iperf3: the server is busy running a test")) {
		t.Error("an untyped error must not be retried")
	}
	if !retryable(&nettool.SetupError{Tool: nettool.ToolIperf3, Err: errors.New("x")}) {
		t.Error("a *SetupError must be retried")
	}
}
