package results

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// record is a per-second record from t0: p99 per second (ms), errors per second (503s).
func record(t0 time.Time, p99 []float64, errs map[int]int64) []LoadSecond {
	out := make([]LoadSecond, len(p99))
	for i, p := range p99 {
		out[i] = LoadSecond{Start: t0.Add(time.Duration(i) * time.Second), Requests: 100, P50: p / 2, P99: p, Max: p}
		if n := errs[i]; n > 0 {
			out[i].Errors = map[string]int64{"503": n}
		}
	}
	return out
}

func TestTransitionFigures(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	moved := []TransitionMoment{{PhaseMoveStarted, at(5.2)}, {PhaseModeApplied, at(5.3)}, {PhasePodsReady, at(9.1)}, {PhaseModeVerified, at(10.4)}}
	// seconds 0-4 before the move (p99 2 ms), 5-9 disturbed (errors at 6 and 7, p99 up to 80 ms), 10-19 the new mode
	// (p99 3 ms) but second 11 (p99 9 ms: 1.5 x 3 + 1 = 5.5 exceeded); the first and last seconds are dropped.
	p99 := []float64{50, 2, 2, 2, 2, 2, 40, 80, 20, 10, 3, 9, 3, 3, 3, 3, 3, 3, 3, 50}
	tr := Transition{From: ModeNone, To: ModeSidecar, Phases: moved, Seconds: record(t0, p99, map[int]int64{6: 4, 7: 10, 12: 1})}
	got := tr.Figures()
	want := TransitionFigures{MoveSeconds: 5.2, ErrorsDuring: 14, ErrorsAfter: 1, ErrorSeconds: 3, ErrorsByKind: map[string]int64{"503": 15},
		P99Before: 2, P99Worst: 80, SteadySeconds: 8}
	if math.Abs(got.MoveSeconds-want.MoveSeconds) > 1e-9 {
		t.Errorf("move %v s, want %v", got.MoveSeconds, want.MoveSeconds)
	}
	got.MoveSeconds = want.MoveSeconds
	if !reflect.DeepEqual(got, want) {
		t.Errorf("figures\n got %+v\nwant %+v", got, want)
	}
	// A move that never settles (errors to the end) and was never verified.
	tr.Phases = moved[:3]
	tr.Seconds = record(t0, p99, map[int]int64{18: 1})
	f := tr.Figures()
	if !math.IsNaN(f.SteadySeconds) || !math.IsNaN(f.MoveSeconds) || f.ErrorsDuring != 1 || f.ErrorsAfter != 0 {
		t.Errorf("unsettled, unverified move: %+v", f)
	}
	// An undisturbed move is steady from its start.
	tr.Phases, tr.Seconds = moved, record(t0, []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, nil)
	if f := tr.Figures(); f.SteadySeconds != 0 || f.ErrorSeconds != 0 {
		t.Errorf("undisturbed move: %+v", f)
	}
}

func TestMergeSeconds(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	a := []LoadSecond{{Start: t0, Requests: 10, P50: 1, P99: 4, Max: 5}, {Start: t0.Add(time.Second), Requests: 30, P50: 2, P99: 3, Max: 3, Errors: map[string]int64{"503": 2}}}
	b := []LoadSecond{{Start: t0.Add(time.Second), Requests: 10, P50: 6, P99: 9, Max: 12, Errors: map[string]int64{"503": 1, ErrorConnection: 1}}, {Start: t0.Add(3 * time.Second), Requests: 5, P50: 1, P99: 1, Max: 1}}
	got := MergeSeconds(a, b)
	want := []LoadSecond{
		{Start: t0, Requests: 10, P50: 1, P99: 4, Max: 5},
		{Start: t0.Add(time.Second), Requests: 40, P50: 3, P99: 9, Max: 12, Errors: map[string]int64{"503": 3, ErrorConnection: 1}},
		{Start: t0.Add(2 * time.Second)},
		{Start: t0.Add(3 * time.Second), Requests: 5, P50: 1, P99: 1, Max: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged\n got %+v\nwant %+v", got, want)
	}
}
