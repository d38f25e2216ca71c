package report

import (
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// enforceCase is an enforce case of mode whose policy was applied at 5.3 s and removed at 15.6 s, its denied slice
// refusing refused[i] of 10 requests in second i.
func enforceCase(id string, mode results.Mode, status results.Status, refused []int64, allowedErrors int64) results.CaseResult {
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	rec := func(errs []int64) []results.LoadSecond {
		out := make([]results.LoadSecond, len(errs))
		for i, n := range errs {
			out[i] = results.LoadSecond{Start: t0.Add(time.Duration(i) * time.Second), Requests: 10, P99: 2}
			if n > 0 {
				out[i].Errors = map[string]int64{"403": n}
			}
		}
		return out
	}
	allowed := make([]int64, len(refused))
	allowed[3] = allowedErrors
	e := &results.Enforcement{Mode: mode, Applied: t0.Add(5300 * time.Millisecond), Removed: t0.Add(15600 * time.Millisecond), Denied: rec(refused), Allowed: rec(allowed)}
	return results.CaseResult{CaseID: id, Mode: mode, Status: status, Enforcement: e}
}

// TestEnforceSectionGolden: per mode in the modes' order, the figures as mean ± interval over repetitions, a record
// that never shows full enforcement counted as "never", a failed repetition apart.
func TestEnforceSectionGolden(t *testing.T) {
	t.Parallel()
	quick := []int64{0, 0, 0, 0, 0, 0, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 0, 0, 0, 0}
	slow := []int64{0, 0, 0, 0, 0, 0, 2, 6, 10, 10, 10, 10, 10, 10, 10, 10, 10, 5, 0, 0}
	leaky := []int64{0, 0, 0, 0, 0, 0, 5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0}
	r := Report{Cases: []results.CaseResult{
		{CaseID: "single.waypoint.q100.r1", Mode: results.ModeWaypoint, Status: results.StatusOK},
		enforceCase("single.waypoint.enforce.q100.r1", results.ModeWaypoint, results.StatusOK, slow, 0),
		enforceCase("single.sidecar.enforce.q100.r1", results.ModeSidecar, results.StatusOK, quick, 0),
		enforceCase("single.waypoint.enforce.q100.r2", results.ModeWaypoint, results.StatusOK, quick, 0),
		enforceCase("single.sidecar.enforce.q100.r2", results.ModeSidecar, results.StatusOK, leaky, 1),
		enforceCase("single.sidecar.enforce.q100.r3", results.ModeSidecar, results.StatusFailed, quick, 0),
	}}
	text, missing := r.Text(sectionEnforce)
	if len(missing) > 0 {
		t.Fatalf("no enforce section: %v", missing)
	}
	golden(t, "enforce/enforce.txt", text)
	if _, ok := (Report{Cases: r.Cases[:1]}).enforceSection(); ok {
		t.Error("a run without enforce cases has an enforce section")
	}
}
