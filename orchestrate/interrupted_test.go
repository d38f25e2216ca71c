package orchestrate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/interrupt"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
)

func cancelledBy(sig syscall.Signal) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interrupt.SignalError{Signal: sig})
	return ctx
}

func TestEndingOf(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	interrupted := runner.Outcome{Total: 4, OK: 1, Interrupted: true, InterruptedCase: "b", InterruptedPhase: "load", InterruptedAt: at, NotRun: []string{"b", "c", "d"}}
	tests := []struct {
		name    string
		ctx     context.Context
		out     runner.Outcome
		err     error
		want    Ending
		wantInt *results.Interruption
	}{
		{"SIGINT mid case", cancelledBy(syscall.SIGINT), interrupted, nil,
			Ending{Outcome: results.OutcomeInterrupted, Signal: "SIGINT"},
			&results.Interruption{Signal: "SIGINT", At: at, Case: "b", Phase: "load", Completed: 1, Planned: 4, NotRun: []string{"b", "c", "d"}}},
		{"SIGTERM", cancelledBy(syscall.SIGTERM), interrupted, nil,
			Ending{Outcome: results.OutcomeInterrupted, Signal: "SIGTERM"},
			&results.Interruption{Signal: "SIGTERM", At: at, Case: "b", Phase: "load", Completed: 1, Planned: 4, NotRun: []string{"b", "c", "d"}}},
		{"cancelled without a signal", cancelled, interrupted, nil,
			Ending{Outcome: results.OutcomeInterrupted},
			&results.Interruption{At: at, Case: "b", Phase: "load", Completed: 1, Planned: 4, NotRun: []string{"b", "c", "d"}}},
		{"signal after the last case was recorded: complete, the signal noted", cancelledBy(syscall.SIGINT), runner.Outcome{Total: 2, OK: 1, Failed: []string{"x: y"}}, nil,
			Ending{Outcome: results.OutcomeCompleted, Signal: "SIGINT"}, nil},
		{"completed with failed cases", context.Background(), runner.Outcome{Total: 2, OK: 1, Failed: []string{"x: y"}}, nil,
			Ending{Outcome: results.OutcomeCompleted}, nil},
		{"finalizer error", context.Background(), runner.Outcome{Total: 2, OK: 2}, errors.New("restore labels"),
			Ending{Outcome: results.OutcomeError}, nil},
	}
	for _, tc := range tests {
		got := EndingOf(tc.ctx, tc.out, tc.err)
		gi := got.Interrupted
		got.Interrupted = nil
		if got != tc.want {
			t.Errorf("%s: ending %+v, want %+v", tc.name, got, tc.want)
		}
		if (gi == nil) != (tc.wantInt == nil) || (gi != nil && results.Interruption.Text(*gi) != tc.wantInt.Text()) ||
			(gi != nil && (!gi.At.Equal(tc.wantInt.At) || strings.Join(gi.NotRun, ",") != strings.Join(tc.wantInt.NotRun, ",") || gi.Signal != tc.wantInt.Signal)) {
			t.Errorf("%s: interruption %+v, want %+v", tc.name, gi, tc.wantInt)
		}
	}
}

// TestFinishMarksAndClears: Finish writes the interruption into run.json and the report of a run stopped after 1 of
// 4 cases; the --resume that completes it clears the mark, and run.json's took is the two invocations' spans.
func TestFinishMarksAndClears(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	meta, err := newMeta("run", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, meta, err := CreateRun(t.TempDir(), "int", meta)
	if err != nil {
		t.Fatal(err)
	}
	c := results.CaseResult{RunID: meta.RunID, CaseID: "a", Status: results.StatusOK, Start: meta.Start, End: meta.Start.Add(time.Second)}
	if err := store.AppendCase(c, nil); err != nil {
		t.Fatal(err)
	}
	out := runner.Outcome{Total: 4, OK: 1, Interrupted: true, InterruptedCase: "b", InterruptedPhase: "verify", InterruptedAt: time.Now(), NotRun: []string{"b", "c", "d"}}
	_, md, err := Finish(store, meta, EndingOf(cancelledBy(syscall.SIGINT), out, nil), log)
	if err != nil {
		t.Fatal(err)
	}
	_ = store.Close()
	run, err := results.Read(store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	in := run.Meta.Interrupted
	if in == nil || in.Signal != "SIGINT" || in.Completed != 1 || in.Planned != 4 || in.Case != "b" || in.Phase != "verify" || len(in.NotRun) != 3 {
		t.Fatalf("run.json interrupted: %+v", in)
	}
	if inv := run.Meta.Invocations; len(inv) != 1 || inv[0].Outcome != results.OutcomeInterrupted || inv[0].Signal != "SIGINT" || inv[0].End == nil {
		t.Errorf("run.json invocations: %+v", inv)
	}
	file, err := os.ReadFile(filepath.Join(store.Dir(), "report", report.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{md, string(file)} {
		if !strings.Contains(text, "interrupted after 1 of 4 cases (SIGINT, in verify of case b)") || strings.Contains(text, "No case failed or was skipped") {
			t.Errorf("report does not mark the interruption:\n%s", text)
		}
	}

	// --resume, as Run does it: a new invocation, the rest of the plan, then Finish with a completed ending.
	st, r, err := results.Resume(store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	meta = results.StartInvocation(r.Meta, r.Cases, time.Now().UTC())
	for _, id := range []string{"b", "c", "d"} {
		now := time.Now().UTC()
		if err := st.AppendCase(results.CaseResult{RunID: meta.RunID, CaseID: id, Status: results.StatusOK, Start: now, End: now}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Finish(st, meta, EndingOf(context.Background(), runner.Outcome{Total: 4, Resumed: 1, OK: 3}, nil), log); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	run, err = results.Read(store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Interrupted != nil || len(run.Meta.Invocations) != 2 || run.Meta.Invocations[1].Outcome != results.OutcomeCompleted {
		t.Fatalf("after the resume: interrupted %+v, invocations %+v", run.Meta.Interrupted, run.Meta.Invocations)
	}
	took, _ := run.Meta.Took()
	inv := run.Meta.Invocations
	if want := inv[0].End.Sub(inv[0].Start) + inv[1].End.Sub(inv[1].Start); took != want {
		t.Errorf("took %s, want the sum of the spans %s", took, want)
	}
}
