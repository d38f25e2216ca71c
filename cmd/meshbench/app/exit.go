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
	exitOK         = 0 // success
	exitRunFailed  = 1 // the run failed, or some cases failed (their results and reasons are still written)
	exitBadInput   = 2 // bad flags or config; nothing in the cluster was changed
	exitGateFailed = 3 // a regression gate (compare --fail-if) was violated
	// exitSIGINT and exitSIGTERM are the shell's 128+signal codes of an interrupted command (Ctrl-C, a CronJob's pod
	// being stopped): whatever was measured is kept and cleanup ran; a script can tell this from a failed run (1).
	exitSIGINT  = 130
	exitSIGTERM = 143
)

// exitError carries an exit code through cobra's error return. Libraries never pick exit codes: verbs wrap.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string { return e.Err.Error() }
func (e *exitError) Unwrap() error { return e.Err }

// badInput marks err as the user's input being wrong (exit 2).
func badInput(err error) error { return &exitError{Code: exitBadInput, Err: err} }

// gateError is implemented by errors that mean "a regression gate failed" (compare's gateError).
type gateError interface{ GateFailed() bool }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	// An interruption wins over what it caused: a run stopped by Ctrl-C fails its current step, and an API server
	// check cut short looks like bad input, but the user stopped it.
	if se := interrupt.From(err); se != nil {
		return se.ExitCode()
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var ge gateError
	if errors.As(err, &ge) && ge.GateFailed() {
		return exitGateFailed
	}
	var ps scenario.Problems
	if errors.As(err, &ps) {
		return exitBadInput
	}
	var ie *orchestrate.InputError
	if errors.As(err, &ie) {
		return exitBadInput
	}
	// A file the user named that is no regular file, or above its kind's cap, wherever it was read.
	var fe *inputfile.Error
	if errors.As(err, &fe) {
		return exitBadInput
	}
	return exitRunFailed
}
