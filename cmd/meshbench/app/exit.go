package app

import (
	"errors"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/internal/interrupt"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/scenario"
)

// Exit codes (documented in the README and `meshbench --help`).
const (
	ExitOK         = 0 // success
	ExitRunFailed  = 1 // the run failed, or some cases failed (their results and reasons are still written)
	ExitBadInput   = 2 // bad flags or config; nothing in the cluster was changed
	ExitGateFailed = 3 // a regression gate (compare --fail-if) was violated
	// ExitSIGINT and ExitSIGTERM are the shell's 128+signal codes of an interrupted command (Ctrl-C, a CronJob's pod
	// being stopped): whatever was measured is kept and cleanup ran; a script can tell this from a failed run (1).
	ExitSIGINT  = 130
	ExitSIGTERM = 143
)

// ExitError carries an exit code through cobra's error return. Libraries never pick exit codes: verbs wrap.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// badInput marks err as the user's input being wrong (exit 2).
func badInput(err error) error { return &ExitError{Code: ExitBadInput, Err: err} }

// gateError is implemented by errors that mean "a regression gate failed" (compare.GateError).
type gateError interface{ GateFailed() bool }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	// An interruption wins over what it caused: a run stopped by Ctrl-C fails its current step, and an API server
	// check cut short looks like bad input, but the user stopped it.
	if se := interrupt.From(err); se != nil {
		return se.ExitCode()
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var ge gateError
	if errors.As(err, &ge) && ge.GateFailed() {
		return ExitGateFailed
	}
	var ps scenario.Problems
	if errors.As(err, &ps) {
		return ExitBadInput
	}
	var ie *orchestrate.InputError
	if errors.As(err, &ie) {
		return ExitBadInput
	}
	// A file the user named that is no regular file, or above its kind's cap, wherever it was read.
	var fe *inputfile.Error
	if errors.As(err, &fe) {
		return ExitBadInput
	}
	return ExitRunFailed
}
