package results

import (
	"math"
	"testing"
	"time"
)

// slice is a per-second record from t0 of 10 requests a second, denied[i] of them refused in second i.
func slice(t0 time.Time, denied []int64) []LoadSecond {
	out := make([]LoadSecond, len(denied))
	for i, d := range denied {
		out[i] = LoadSecond{Start: t0.Add(time.Duration(i) * time.Second), Requests: 10, P99: 1}
		if d > 0 {
			out[i].Errors = map[string]int64{"403": d}
		}
	}
	return out
}

func TestEnforceFigures(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	// Applied at 5.3 s: second 6 has the first refusals, 7 on every one; removed at 12.6: second 13 lets some through,
	// 14 on every one. A stray refusal at 3 (before the policy) is not counted.
	e := Enforcement{Mode: ModeSidecar, Applied: t0.Add(5300 * time.Millisecond), Removed: t0.Add(12600 * time.Millisecond),
		Denied:  slice(t0, []int64{0, 0, 0, 1, 0, 0, 4, 10, 10, 10, 10, 10, 10, 3, 0, 0, 0}),
		Allowed: slice(t0, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0})}
	f := e.Figures()
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(f.FirstEnforced, 1.7) || !near(f.AllEnforced, 2.7) || !near(f.FirstLifted, 1.4) || !near(f.AllLifted, 2.4) || f.AllowedErrors != 2 {
		t.Errorf("figures %+v, want first enforced 1.7, all 2.7, first lifted 1.4, all 2.4, 2 allowed errors", f)
	}
	// Never fully enforced (a proxy lets some through to the removal), never removed.
	e.Denied = slice(t0, []int64{0, 0, 0, 0, 0, 0, 4, 10, 10, 9, 10, 10, 10, 10, 10, 10, 9})
	e.Removed = time.Time{}
	f = e.Figures()
	if !near(f.FirstEnforced, 1.7) || !math.IsNaN(f.AllEnforced) || !math.IsNaN(f.FirstLifted) || !math.IsNaN(f.AllLifted) {
		t.Errorf("never fully enforced: %+v", f)
	}
}
