package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// provingMesh is fakeMesh with a PathProver whose waypoint is bypassed in mode ambient (standing in for any mode
// the prover judges): its counter does not grow with the load.
type provingMesh struct {
	fakeMesh
	bypassed scenario.Mode
}

type mark struct{ mode scenario.Mode }

func (p provingMesh) BeforeLoad(_ context.Context, _ target.Target, m scenario.Mode) (PathMark, error) {
	p.add("before-load %s", m)
	return mark{m}, nil
}

func (p provingMesh) AfterLoad(_ context.Context, _ target.Target, m scenario.Mode, before PathMark, requests int64) (map[results.FactKey]string, error) {
	p.add("after-load %s (%d requests)", m, requests)
	if before.(mark).mode != m {
		return nil, fmt.Errorf("mark of mode %v handed back for %s", before, m)
	}
	if m == p.bypassed {
		return map[results.FactKey]string{results.FactWaypointRequests: "0"}, errors.New("waypoint ns/waypoint counted 0 of the load's requests: traffic bypasses it")
	}
	return map[results.FactKey]string{results.FactWaypointRequests: fmt.Sprint(requests)}, nil
}

// TestPathProverAroundTheLoad: a Mesh that proves the data path is asked right before and after each case's load;
// a case whose path it refutes is failed with its reason, and its measurements are kept (figures never lost).
func TestPathProverAroundTheLoad(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none, ambient]", "")
	h.r.Mesh = provingMesh{fakeMesh: fakeMesh{h.calls, ""}, bypassed: scenario.ModeAmbient}
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Total != 8 || out.OK != 4 || len(out.Failed) != 4 {
		t.Fatalf("outcome %+v", out)
	}
	log := strings.Join(h.calls.log, "\n")
	if !strings.Contains(log, "before-load none\nload single.none.q50.r1 lead 20s window 30s cool 5s\nafter-load none") {
		t.Errorf("the prover is not asked right around the load:\n%s", log)
	}
	for _, c := range h.store.cases {
		switch {
		case string(c.Mode) == string(scenario.ModeAmbient):
			if c.Status != results.StatusFailed || !strings.Contains(c.Reason, "not the mode's data path: waypoint ns/waypoint counted 0") ||
				c.Facts[results.FactWaypointRequests] != "0" {
				t.Errorf("%s: %s %q facts %v: want failed, naming the bypass", c.CaseID, c.Status, c.Reason, c.Facts)
			}
			if n := h.store.samplesOf(c.CaseID); n == 0 {
				t.Errorf("%s: a refuted case's measurements were dropped", c.CaseID)
			}
		default:
			if c.Status != results.StatusOK || c.Facts[results.FactWaypointRequests] == "" {
				t.Errorf("%s: %s %q facts %v", c.CaseID, c.Status, c.Reason, c.Facts)
			}
		}
	}
}

func (m *memStore) samplesOf(caseID string) int {
	n := 0
	for _, s := range m.samples {
		if s.CaseID == caseID {
			n++
		}
	}
	return n
}
