package nettool

import (
	"errors"
	"strings"
)

// SetupError is a test that never got a connection to measure over (server busy or not listening, no route, not one
// transaction): nothing was measured, so a caller may retry it. Callers decide by errors.As, never by the message.
type SetupError struct {
	Tool Tool
	// Err is the failure in the tool's words; Error() is its text unchanged.
	Err error
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// IsSetupFailure reports whether err is (or wraps) a *SetupError.
func IsSetupFailure(err error) bool {
	var se *SetupError
	return errors.As(err, &se)
}

// setupMarkers are how the tools word a connection never set up, lower case: iperf3's IEACCESSDENIED and IECONNECT
// (esnet/iperf src/iperf_error.c; testdata/iperf3-error-*.json) and the socket errors netperf and the agent print.
var setupMarkers = []string{"server is busy", "unable to connect", "connection refused", "no route to host"}

// classify returns err as a *SetupError of tool when msg, the tool's own report, says that the connection was never
// set up; else err unchanged. It is the one place where tool output text decides a failure's kind.
func classify(tool Tool, msg string, err error) error {
	if err == nil {
		return nil
	}
	m := strings.ToLower(msg)
	for _, k := range setupMarkers {
		if strings.Contains(m, k) {
			return &SetupError{Tool: tool, Err: err}
		}
	}
	return err
}

// ClassifyStderr is classify for what a tool printed on stderr when its exec failed without output to parse: err
// (the exec failure, carrying that message) becomes a *SetupError when stderr says the connection was never set up.
func ClassifyStderr(tool Tool, stderr []byte, err error) error {
	return classify(tool, string(stderr), err)
}
