package capacity

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

type hopCase struct {
	mode       string
	depth, rep int
	p50        float64
}

// hopRun is a run of chain cases at load 100 with only a p50 latency sample each (what BuildHops reads).
func hopRun(cs []hopCase) *results.Run {
	run := &results.Run{}
	for _, c := range cs {
		id := fmt.Sprintf("single-d%d.%s.q100.r%d", c.depth, c.mode, c.rep)
		run.Cases = append(run.Cases, results.CaseResult{CaseID: id, Mode: results.Mode(c.mode), Load: "100", Repetition: c.rep, Status: results.StatusOK,
			Facts: map[results.FactKey]string{results.FactChainDepth: strconv.Itoa(c.depth)}})
		run.Samples = append(run.Samples, results.Sample{CaseID: id, Mode: results.Mode(c.mode), Load: "100", Repetition: c.rep,
			Window: results.Window{Kind: results.WindowLoad}, Component: results.ComponentLoadgen, Metric: "latency", Stat: "p50", Unit: "ms", Value: c.p50})
	}
	return run
}

// exact is mode at depths with reps repetitions on the line 1 + hop x depth (no noise).
func exact(mode string, hop float64, reps int, depths ...int) []hopCase {
	var out []hopCase
	for _, d := range depths {
		for r := 1; r <= reps; r++ {
			out = append(out, hopCase{mode, d, r, 1 + hop*float64(d)})
		}
	}
	return out
}

func TestBuildHopsReasons(t *testing.T) {
	t.Parallel()
	join := func(a ...[]hopCase) []hopCase {
		var out []hopCase
		for _, x := range a {
			out = append(out, x...)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		cases  []hopCase
		value  float64 // sidecar's added per hop, when no reason
		reason string
	}{
		{"exact lines", join(exact("none", 0.3, 2, 1, 2), exact("sidecar", 0.8, 2, 1, 2)), 0.5, ""},
		{"one depth in the mesh mode", join(exact("none", 0.3, 2, 1, 2), exact("sidecar", 0.8, 2, 1)), 0, "sidecar measured 1 chain depth(s) at load 100: a per-hop slope needs 2"},
		{"one depth in none", join(exact("none", 0.3, 2, 2), exact("sidecar", 0.8, 2, 1, 2)), 0, "none measured 1 chain depth(s) at load 100"},
		{"no none", exact("sidecar", 0.8, 2, 1, 2), 0, "mode none has no p50 latency at load 100"},
		{"no repetitions", join(exact("none", 0.3, 1, 1, 2), exact("sidecar", 0.8, 1, 1, 2)), 0, "too few repetitions for an interval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := BuildHops(hopRun(c.cases), 0.95)
			if h == nil || len(h.Added) != 1 {
				t.Fatalf("hops %+v, want one added figure", h)
			}
			a := h.Added[0]
			switch {
			case c.reason != "" && (a.Value != nil || !strings.Contains(a.Reason, c.reason)):
				t.Errorf("added %+v, want no value and reason %q", a, c.reason)
			case c.reason == "" && (a.Value == nil || fmt.Sprintf("%.6f", *a.Value) != fmt.Sprintf("%.6f", c.value) || a.CI == nil || a.CI.High-a.CI.Low > 1e-9):
				t.Errorf("added %+v, want exactly %g with a point interval", a, c.value)
			}
		})
	}
	if h := BuildHops(hopRun(exact("none", 0.3, 3, 2)), 0.95); h != nil {
		t.Errorf("one chain depth in the run: hops %+v, want nil", h)
	}
	if h := BuildHops(&results.Run{}, 0.95); h != nil {
		t.Errorf("no chain cases: hops %+v, want nil", h)
	}
}
