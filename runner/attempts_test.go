package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// gapError is an incomplete window as collectors/prom reports one (its *IncompleteError has the same method).
type gapError struct{ kind string }

func (e gapError) Error() string {
	return e.kind + " window incomplete: prometheus has no samples for 14s"
}
func (e gapError) WindowIncomplete() bool { return true }

// gappyCollector reports the load window incomplete the first gaps times it is asked for one.
type gappyCollector struct {
	fakeCollector
	gaps *int
}

func (g gappyCollector) Collect(ctx context.Context, t target.Target, c scenario.Case, w results.Window) (Collection, error) {
	col, err := g.fakeCollector.Collect(ctx, t, c, w)
	if w.Kind == results.WindowLoad && *g.gaps > 0 {
		*g.gaps--
		col.Warnings = append(col.Warnings, "gap warning")
		return col, gapError{w.Kind}
	}
	return col, err
}

// TestIncompleteWindowIsMeasuredAgain: a load window that comes back incomplete (a missed scrape, not the system
// measured) costs one more measurement of the case, idle and load windows again, instead of the case; the discarded
// measurement leaves its reason and length, not its windows, samples or warnings. With windows.attempts 1, or when
// every attempt is incomplete, the case fails with the last reason.
func TestIncompleteWindowIsMeasuredAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempts, gaps int
		status         string
		measured       int // load runs of the first case
	}{
		{attempts: 2, gaps: 1, status: string(results.StatusOK), measured: 2},
		{attempts: 1, gaps: 1, status: string(results.StatusFailed), measured: 1},
		{attempts: 3, gaps: 3, status: string(results.StatusFailed), measured: 3},
		{attempts: 2, gaps: 0, status: string(results.StatusOK), measured: 1},
	} {
		t.Run(fmt.Sprintf("attempts=%d,gaps=%d", tc.attempts, tc.gaps), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "[none]", "")
			h.s.Spec.Windows.Attempts = tc.attempts
			h.r.Plan = scenario.NewPlan(h.s) // the planner puts windows.attempts into every case's policy
			gaps := tc.gaps
			h.r.Collector = gappyCollector{fakeCollector{h.calls}, &gaps}
			if _, err := h.r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			first := h.store.cases[0]
			if string(first.Status) != tc.status {
				t.Fatalf("first case %s %q, want %s", first.Status, first.Reason, tc.status)
			}
			runs, idles := 0, 0
			for _, l := range h.calls.log {
				if strings.HasPrefix(l, "load "+first.CaseID+" ") {
					runs++
				}
			}
			for _, l := range h.calls.log {
				if l == "collect idle 20s" {
					idles++
				}
			}
			if runs != tc.measured {
				t.Errorf("load runs of %s: %d, want %d", first.CaseID, runs, tc.measured)
			}
			if first.Facts[results.FactAttempts] != map[bool]string{true: fmt.Sprint(tc.measured), false: ""}[tc.measured > 1] {
				t.Errorf("fact attempts %q after %d measurements", first.Facts[results.FactAttempts], tc.measured)
			}
			for n := 1; n < tc.measured; n++ {
				key := results.FactAttempt(n)
				if !strings.Contains(first.Facts[key], "load window: load window incomplete") || first.Timings[string(key)] == "" {
					t.Errorf("measurement %d: reason %q length %q", n, first.Facts[key], first.Timings[string(key)])
				}
			}
			if _, ok := first.Facts[results.FactAttempt(tc.measured)]; ok {
				t.Errorf("the kept measurement is listed as discarded: %v", first.Facts)
			}
			// One measurement's windows and samples: the idle and load window, one qps sample and one app CPU
			// sample per window.
			if len(first.Windows) != 2 {
				t.Errorf("windows %v, want the idle and load window of one measurement", first.Windows)
			}
			var qps, cpu int
			for _, s := range h.store.samples {
				if s.CaseID != first.CaseID {
					continue
				}
				switch s.Metric {
				case "qps":
					qps++
				case "cpu":
					cpu++
				}
			}
			if qps != 1 || cpu != 2 {
				t.Errorf("samples of %s: %d qps, %d cpu; want 1 and 2 (one measurement)", first.CaseID, qps, cpu)
			}
			if tc.status == string(results.StatusOK) && slices.Contains(first.CollectorWarnings, "gap warning") {
				t.Errorf("a discarded measurement's warning is kept: %q", first.CollectorWarnings)
			}
			// The plan's two idle windows (the first case of each repetition), plus the first case's again for each
			// discarded measurement: its idle window is measured again too.
			if idles != 2+tc.measured-1 {
				t.Errorf("idle windows collected: %d, want %d", idles, 2+tc.measured-1)
			}
		})
	}
}

// TestOtherCollectionErrorsAreNotRetried: a query that fails (not a gap) fails the case at once: measuring again
// would not change a wrong selector or a refused connection.
func TestOtherCollectionErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	h.r.Collector = failingCollector{fakeCollector{h.calls}}
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, l := range h.calls.log {
		if strings.HasPrefix(l, "load ") {
			runs++
		}
	}
	if c := h.store.cases[0]; c.Facts[results.FactAttempts] != "" || runs != len(h.store.cases) {
		t.Errorf("attempts %q, %d load runs for %d cases", c.Facts[results.FactAttempts], runs, len(h.store.cases))
	}
}
