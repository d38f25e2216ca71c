package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time   { return t0.Add(d) }
func atp(d time.Duration) *time.Time { x := at(d); return &x }

func TestTook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		meta   RunMeta
		want   time.Duration
		wantOK bool
	}{
		{"recorded before invocations: end - start", RunMeta{Start: at(0), End: atp(90 * time.Minute)}, 90 * time.Minute, true},
		{"before invocations, no end", RunMeta{Start: at(0)}, 0, false},
		{"one invocation", RunMeta{Start: at(0), End: atp(time.Hour), Invocations: []Invocation{{Start: at(0), End: atp(time.Hour)}}}, time.Hour, true},
		{"interrupted and resumed 3 h later: the gap does not count", RunMeta{Start: at(0), End: atp(5 * time.Hour), Invocations: []Invocation{
			{Start: at(0), End: atp(20 * time.Minute), Outcome: OutcomeInterrupted},
			{Start: at(4 * time.Hour), End: atp(5 * time.Hour), Outcome: OutcomeCompleted},
		}}, 80 * time.Minute, true},
		{"a running invocation adds nothing yet", RunMeta{Start: at(0), Invocations: []Invocation{
			{Start: at(0), End: atp(20 * time.Minute)}, {Start: at(time.Hour)},
		}}, 20 * time.Minute, true},
		{"only a running invocation", RunMeta{Start: at(0), Invocations: []Invocation{{Start: at(0)}}}, 0, false},
	}
	for _, tc := range tests {
		got, ok := tc.meta.Took()
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: Took() = %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestInterruptionText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   Interruption
		want string
	}{
		{Interruption{Signal: "SIGINT", Case: "single/none/100/r1", Phase: "load", Completed: 1, Planned: 4}, "interrupted after 1 of 4 cases (SIGINT, in load of case single/none/100/r1)"},
		{Interruption{Signal: "SIGTERM", Case: "single/sidecar/100/r1", Completed: 2, Planned: 4}, "interrupted after 2 of 4 cases (SIGTERM, before case single/sidecar/100/r1)"},
		{Interruption{Case: "same-node/tcp", Phase: "ensure", Completed: 0, Planned: 3}, "interrupted after 0 of 3 cases (in ensure of case same-node/tcp)"},
		{Interruption{Signal: "SIGINT", Completed: 0, Planned: 2}, "interrupted after 0 of 2 cases (SIGINT)"},
		{Interruption{Completed: 3, Planned: 5}, "interrupted after 3 of 5 cases"},
	}
	for _, tc := range tests {
		if got := tc.in.Text(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStartInvocation(t *testing.T) {
	t.Parallel()
	cases := []CaseResult{
		{CaseID: "a", Start: at(time.Minute), End: at(10 * time.Minute)},
		{CaseID: "b", Start: at(10 * time.Minute), End: at(25 * time.Minute)},
		{CaseID: "c", Start: at(2 * time.Hour), End: at(2*time.Hour + 15*time.Minute)}, // by the second invocation
	}
	now := at(6 * time.Hour)
	tests := []struct {
		name string
		meta RunMeta
		want []Invocation
	}{
		{"after an interruption: kept, new one appended",
			RunMeta{Start: at(0), End: atp(30 * time.Minute), Interrupted: &Interruption{}, Invocations: []Invocation{{Start: at(0), End: atp(30 * time.Minute), Outcome: OutcomeInterrupted, Signal: "SIGINT"}}},
			[]Invocation{{Start: at(0), End: atp(30 * time.Minute), Outcome: OutcomeInterrupted, Signal: "SIGINT"}, {Start: now}}},
		{"after kill -9: closed at its last case record",
			RunMeta{Start: at(0), Invocations: []Invocation{{Start: at(0)}}},
			[]Invocation{{Start: at(0), End: atp(2*time.Hour + 15*time.Minute), Outcome: OutcomeCrashed}, {Start: now}}},
		{"two crashes: each closed at its own last record",
			RunMeta{Start: at(0), Invocations: []Invocation{{Start: at(0)}, {Start: at(time.Hour)}}},
			[]Invocation{{Start: at(0), End: atp(25 * time.Minute), Outcome: OutcomeCrashed}, {Start: at(time.Hour), End: atp(2*time.Hour + 15*time.Minute), Outcome: OutcomeCrashed}, {Start: now}}},
		{"crash before any case: zero span",
			RunMeta{Start: at(5 * time.Hour), Invocations: []Invocation{{Start: at(5 * time.Hour)}}},
			[]Invocation{{Start: at(5 * time.Hour), End: atp(5 * time.Hour), Outcome: OutcomeCrashed}, {Start: now}}},
		{"recorded before invocations, interrupted: start..end",
			RunMeta{Start: at(0), End: atp(30 * time.Minute), Interrupted: &Interruption{}},
			[]Invocation{{Start: at(0), End: atp(30 * time.Minute), Outcome: OutcomeInterrupted}, {Start: now}}},
		{"recorded before invocations, ended (old meshbench wrote end on Ctrl-C too: outcome unknown)",
			RunMeta{Start: at(0), End: atp(30 * time.Minute)},
			[]Invocation{{Start: at(0), End: atp(30 * time.Minute), Outcome: OutcomeUnrecorded}, {Start: now}}},
		{"recorded before invocations, crashed",
			RunMeta{Start: at(0)},
			[]Invocation{{Start: at(0), End: atp(2*time.Hour + 15*time.Minute), Outcome: OutcomeCrashed}, {Start: now}}},
	}
	for _, tc := range tests {
		in := tc.meta
		before, _ := json.Marshal(in)
		got := StartInvocation(in, cases, now)
		if !reflect.DeepEqual(got.Invocations, tc.want) {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, js(got.Invocations), js(tc.want))
		}
		if got.End != nil {
			t.Errorf("%s: End %v while the new invocation runs", tc.name, got.End)
		}
		if (got.Interrupted == nil) != (tc.meta.Interrupted == nil) {
			t.Errorf("%s: the interruption mark changed at the start (it changes at the end)", tc.name)
		}
		if after, _ := json.Marshal(in); string(after) != string(before) {
			t.Errorf("%s: the input meta was modified", tc.name)
		}
	}
}

func TestEndInvocation(t *testing.T) {
	t.Parallel()
	intr := &Interruption{Signal: "SIGTERM", At: at(20 * time.Minute), Case: "b", Phase: "verify", Completed: 1, Planned: 3, NotRun: []string{"b", "c"}}
	m := RunMeta{Start: at(0), Invocations: []Invocation{{Start: at(0)}}}
	m = EndInvocation(m, at(21*time.Minute), OutcomeInterrupted, "SIGTERM", intr)
	if m.Interrupted != intr || m.End == nil || !m.End.Equal(at(21*time.Minute)) {
		t.Fatalf("interrupted: %+v", m)
	}
	if want := []Invocation{{Start: at(0), End: atp(21 * time.Minute), Outcome: OutcomeInterrupted, Signal: "SIGTERM"}}; !reflect.DeepEqual(m.Invocations, want) {
		t.Errorf("invocations %s", js(m.Invocations))
	}
	// The --resume that completes clears the mark; took is the two spans.
	m = StartInvocation(m, nil, at(3*time.Hour))
	m = EndInvocation(m, at(4*time.Hour), OutcomeCompleted, "", nil)
	if m.Interrupted != nil || len(m.Invocations) != 2 || m.Invocations[1].Outcome != OutcomeCompleted {
		t.Fatalf("resumed: %s", js(m))
	}
	if took, _ := m.Took(); took != 81*time.Minute {
		t.Errorf("took %s, want 1h21m", took)
	}
	// A meta without invocations (a caller that never started one) gets its span from Start.
	old := EndInvocation(RunMeta{Start: at(0)}, at(time.Hour), OutcomeCompleted, "", nil)
	if len(old.Invocations) != 1 || !old.Invocations[0].Start.Equal(at(0)) {
		t.Errorf("from Start: %s", js(old.Invocations))
	}
}

// TestRunJSONBackwardCompatible: a run.json written before invocations and the interruption mark loads, has no mark,
// and keeps its took; the new fields round-trip through the store.
func TestRunJSONBackwardCompatible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := `{"schemaVersion":"meshbench.dev/results/v1","runID":"old-1","command":"run","tool":{"version":"v0.0.9","commit":"x","goVersion":"go1.25","buildDate":"2026-01-01"},` +
		`"start":"2026-12-01T10:00:00Z","end":"2026-12-01T11:30:00Z","cluster":{}}`
	for name, content := range map[string]string{RunFile: old, SamplesFile: "", CasesFile: ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Interrupted != nil || run.Meta.Invocations != nil {
		t.Errorf("old run.json: %+v", run.Meta)
	}
	if took, ok := run.Meta.Took(); !ok || took != 90*time.Minute {
		t.Errorf("old run.json took %s %v", took, ok)
	}
	st, r, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	meta := StartInvocation(r.Meta, r.Cases, at(5*time.Hour))
	meta = EndInvocation(meta, at(6*time.Hour), OutcomeInterrupted, "SIGINT", &Interruption{Signal: "SIGINT", At: at(6 * time.Hour), Completed: 0, Planned: 2, NotRun: []string{"a", "b"}})
	if err := st.UpdateMeta(meta); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Meta.Interrupted, meta.Interrupted) || len(back.Meta.Invocations) != 2 {
		t.Errorf("round trip: %s", js(back.Meta))
	}
	if took, _ := back.Meta.Took(); took != 150*time.Minute {
		t.Errorf("took %s, want 2h30m (1h30m recorded + 1h resumed)", took)
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }
