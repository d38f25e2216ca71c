package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// reconcilingMesh is a Mesh whose first sidecar switch leaves a pod out of the mode (admitted by the API server's
// cached view of the namespace's old labels), which Reconcile then restarts once.
type reconcilingMesh struct {
	fakeMesh
	pending map[scenario.Mode]bool
}

func (f reconcilingMesh) Reconcile(_ context.Context, _ target.Target, m scenario.Mode) (map[results.FactKey]string, bool, error) {
	f.add("reconcile %s", m)
	if !f.pending[m] {
		return nil, false, nil
	}
	delete(f.pending, m)
	return map[results.FactKey]string{results.FactRestartedAfterReady: "Deployment mb-single/chain-1"}, true, nil
}

// TestReconcileWaitsAgainAfterARestart: once the workloads are ready after a switch, the runner asks a Reconciler to
// restart what is still not in the mode, waits for readiness again when it did, and only then verifies; the case
// records what was restarted.
func TestReconcileWaitsAgainAfterARestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[sidecar]", "")
	h.r.Mesh = reconcilingMesh{fakeMesh{calls: h.calls}, map[scenario.Mode]bool{scenario.ModeSidecar: true}}
	h.r.Plan.Cases = h.r.Plan.Cases[:2] // repetition 1: one switch
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := strings.Join(h.calls.log, "\n")
	want := "ensure single\napply sidecar\nwait-ready\nreconcile sidecar\nwait-ready\nverify sidecar\nprepare sidecar\n"
	if !strings.HasPrefix(log, want) {
		t.Errorf("calls:\n%s\n\nwant them to begin with:\n%s", log, want)
	}
	if got := h.store.cases[0].Facts[results.FactRestartedAfterReady]; got != "Deployment mb-single/chain-1" {
		t.Errorf("case facts %v: want %s", h.store.cases[0].Facts, results.FactRestartedAfterReady)
	}
	// A mesh without Reconcile (every other test's fakeMesh) waits once.
	if strings.Count(log, "wait-ready") != 2 {
		t.Errorf("want two waits in this run (one reconciled switch):\n%s", log)
	}
}
