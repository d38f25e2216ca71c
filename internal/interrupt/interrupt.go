package interrupt

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// SignalError is the cause of a context cancelled by a signal.
type SignalError struct {
	Signal syscall.Signal
}

func (e *SignalError) Error() string { return "interrupted by " + e.Name() }

// Name is the signal's conventional name: SIGINT, SIGTERM, or "signal N" for others.
func (e *SignalError) Name() string {
	switch e.Signal {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return "signal " + strconv.Itoa(int(e.Signal))
}

// ExitCode is the shell convention for a process ended by a signal: 128 + its number (130 SIGINT, 143 SIGTERM), so a
// CronJob or a script can tell an interruption from a failed run (exit 1).
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

// FromContext returns the *SignalError ctx was cancelled with, or nil (not cancelled, or cancelled otherwise).
func FromContext(ctx context.Context) *SignalError {
	return From(context.Cause(ctx))
}

// From returns the *SignalError in err's chain, or nil.
func From(err error) *SignalError {
	var se *SignalError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// Handler says what happens on the signals Notify watches. Both callbacks are optional.
type Handler struct {
	// OnFirst runs when the first signal arrives, before the context is cancelled (to tell the user that cleanup
	// is running and what a second signal does).
	OnFirst func(*SignalError)
	// OnSecond runs when a second signal arrives while the context's users still clean up; it gets the first
	// signal's error (the exit code stays the one of the interruption). main's OnSecond exits the process.
	OnSecond func(first, second *SignalError)
}

// Notify returns a copy of parent cancelled with a *SignalError cause when one of sigs arrives (default SIGINT and
// SIGTERM). stop releases the signals (they then have their default effect again) and cancels the context; it may be
// called more than once.
func Notify(parent context.Context, h Handler, sigs ...os.Signal) (ctx context.Context, stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	}
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var first *SignalError
		select {
		case s := <-ch:
			first = asError(s)
		case <-done:
			return
		}
		if h.OnFirst != nil {
			h.OnFirst(first)
		}
		cancel(first)
		select {
		case s := <-ch:
			if h.OnSecond != nil {
				h.OnSecond(first, asError(s))
			}
		case <-done:
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			wg.Wait()
			cancel(context.Canceled)
		})
	}
	return ctx, stop
}

func asError(s os.Signal) *SignalError {
	if ss, ok := s.(syscall.Signal); ok {
		return &SignalError{Signal: ss}
	}
	return &SignalError{Signal: syscall.SIGINT} // os.Interrupt is a syscall.Signal on every platform meshbench runs on
}
