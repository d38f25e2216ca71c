package report

import (
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// transitionCase is a transition case whose move starts at second 5 and is verified verifiedAt seconds in, over a
// 20-second record of p99s (ms) with 503s at the given seconds.
func transitionCase(id string, from, to results.Mode, status results.Status, verifiedAt float64, p99 []float64, errs map[int]int64) results.CaseResult {
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tr := &results.Transition{From: from, To: to, Phases: []results.TransitionMoment{{Phase: results.PhaseMoveStarted, At: at(5)}, {Phase: results.PhaseModeApplied, At: at(5.1)}}}
	if verifiedAt > 0 {
		tr.Phases = append(tr.Phases, results.TransitionMoment{Phase: results.PhasePodsReady, At: at(verifiedAt - 0.5)}, results.TransitionMoment{Phase: results.PhaseModeVerified, At: at(verifiedAt)})
	}
	for i, p := range p99 {
		s := results.LoadSecond{Start: t0.Add(time.Duration(i) * time.Second), Requests: 100, P50: p / 2, P99: p, Max: p}
		if n := errs[i]; n > 0 {
			s.Errors = map[string]int64{"503": n, results.ErrorConnection: 1}
		}
		tr.Seconds = append(tr.Seconds, s)
	}
	return results.CaseResult{CaseID: id, Mode: to, Status: status, Transition: tr}
}

// TestTransitionsSectionGolden: per move, its repetitions' figures as mean ± interval, a failed repetition counted
// apart, the error kinds in a note; a run without transition cases has no section.
func TestTransitionsSectionGolden(t *testing.T) {
	t.Parallel()
	calm := []float64{9, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 9}
	rough := []float64{9, 2, 2, 2, 2, 2, 40, 80, 20, 10, 3, 3, 3, 3, 3, 3, 3, 3, 3, 9}
	r := Report{Cases: []results.CaseResult{
		{CaseID: "single.none.q100.r1", Mode: results.ModeNone, Status: results.StatusOK},
		transitionCase("single.none-to-sidecar.q100.r1", results.ModeNone, results.ModeSidecar, results.StatusOK, 21, rough, map[int]int64{6: 3, 7: 5}),
		transitionCase("single.sidecar-to-ambient.q100.r1", results.ModeSidecar, results.ModeAmbient, results.StatusOK, 9, calm, nil),
		transitionCase("single.none-to-sidecar.q100.r2", results.ModeNone, results.ModeSidecar, results.StatusOK, 19, calm, map[int]int64{7: 1}),
		transitionCase("single.sidecar-to-ambient.q100.r2", results.ModeSidecar, results.ModeAmbient, results.StatusFailed, 0, calm, nil),
		transitionCase("single.none-to-sidecar.q100.r3", results.ModeNone, results.ModeSidecar, results.StatusOK, 20, rough, nil),
	}}
	text, missing := r.Text(sectionTransitions)
	if len(missing) > 0 {
		t.Fatalf("no transitions section: %v", missing)
	}
	golden(t, "transitions/transitions.txt", text)
	if _, ok := (Report{Cases: r.Cases[:1]}).transitionsSection(); ok {
		t.Error("a run without transition cases has a transitions section")
	}
}
