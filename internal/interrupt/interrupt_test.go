package interrupt

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

func TestExitCodeAndName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sig  syscall.Signal
		name string
		code int
	}{
		{syscall.SIGINT, "SIGINT", 130},
		{syscall.SIGTERM, "SIGTERM", 143},
		{syscall.SIGHUP, "SIGHUP", 129},
		{syscall.Signal(12), "signal 12", 140},
	}
	for _, tc := range tests {
		se := &SignalError{Signal: tc.sig}
		if se.Name() != tc.name || se.ExitCode() != tc.code || se.Error() != "interrupted by "+tc.name {
			t.Errorf("%d: name %q code %d error %q, want %q %d", tc.sig, se.Name(), se.ExitCode(), se.Error(), tc.name, tc.code)
		}
	}
}

func TestFrom(t *testing.T) {
	t.Parallel()
	se := &SignalError{Signal: syscall.SIGTERM}
	if got := From(fmt.Errorf("run x interrupted: %w", se)); got != se {
		t.Errorf("wrapped: got %v", got)
	}
	if got := From(errors.Join(errors.New("a"), se)); got != se {
		t.Errorf("joined: got %v", got)
	}
	if got := From(context.Canceled); got != nil {
		t.Errorf("plain cancel: got %v", got)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if FromContext(ctx) != nil {
		t.Error("live context has a signal cause")
	}
	cancel(se)
	if FromContext(ctx) != se {
		t.Errorf("cause: %v", context.Cause(ctx))
	}
}

// TestNotifyRealSignals sends real signals to the test process: the first cancels with its *SignalError, the second
// reaches OnSecond with the first's error (the exit code of the interruption), and stop restores nothing else.
func TestNotifyRealSignals(t *testing.T) {
	firsts := make(chan *SignalError, 1)
	seconds := make(chan [2]*SignalError, 1)
	ctx, stop := Notify(context.Background(), Handler{
		OnFirst:  func(se *SignalError) { firsts <- se },
		OnSecond: func(f, s *SignalError) { seconds <- [2]*SignalError{f, s} },
	})
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("context not cancelled by SIGTERM")
	}
	se := FromContext(ctx)
	if se == nil || se.Signal != syscall.SIGTERM || se.ExitCode() != 143 {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	if got := <-firsts; got != se {
		t.Errorf("OnFirst got %v", got)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seconds:
		if got[0] != se || got[1].Signal != syscall.SIGINT {
			t.Errorf("OnSecond got %v, %v", got[0], got[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second signal not seen")
	}
}

func TestStopWithoutSignal(t *testing.T) {
	ctx, stop := Notify(context.Background(), Handler{OnFirst: func(*SignalError) { t.Error("OnFirst without a signal") }})
	stop()
	stop() // idempotent
	if ctx.Err() == nil || FromContext(ctx) != nil {
		t.Errorf("after stop: err %v cause %v", ctx.Err(), context.Cause(ctx))
	}
}
