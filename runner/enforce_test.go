package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// enforcingMesh is fakeMesh that applies and removes the deny policy.
type enforcingMesh struct{ fakeMesh }

func (f enforcingMesh) ApplyDeny(ctx context.Context, _ target.Target, m scenario.Mode) error {
	f.add("apply-deny %s (ctx ok: %v)", m, ctx.Err() == nil)
	return nil
}

func (f enforcingMesh) RemoveDeny(ctx context.Context, _ target.Target) error {
	f.add("remove-deny (ctx ok: %v)", ctx.Err() == nil)
	return nil
}

// slicesLoad is fakeLoad that returns the two slices' records of an enforce case at once.
type slicesLoad struct{ fakeLoad }

func (f slicesLoad) Run(ctx context.Context, t target.Target, req LoadRequest) (LoadResult, error) {
	if req.Case.Policy.Enforce == nil {
		return f.fakeLoad.Run(ctx, t, req)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sec := []results.LoadSecond{{Start: at, Requests: 50}}
	return LoadResult{Requests: 100, Slices: map[results.LoadSlice][]results.LoadSecond{results.SliceAllowed: sec, results.SliceDenied: sec}}, nil
}

func enforceHarness(t *testing.T) *harness {
	t.Helper()
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: runner-test}
spec:
  profile: localcluster
  workload: {app: fortio-chain}
  modes: [sidecar]
  load: {qps: [50], warmUp: 10s, trimEnd: 2s}
  windows: {idle: 20s, load: 30s, repetitions: 1, settle: 5s}
  enforcement: {modes: [sidecar], before: 10s, hold: 25s, after: 15s}
  prometheus: {url: "http://127.0.0.1:19090"}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := harnessFor(t, s, func(c *calls) meshSwitcher { return enforcingMesh{fakeMesh{c, ""}} })
	h.r.Load = slicesLoad{fakeLoad{calls: h.calls, clock: h.clock}}
	return h
}

// TestEnforceCase: the policy is applied Before into the load and removed Hold later, both moments recorded with the
// two slices' records; no load sample is kept.
func TestEnforceCase(t *testing.T) {
	t.Parallel()
	h := enforceHarness(t)
	out, err := h.r.Run(context.Background())
	if err != nil || out.OK != 2 {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
	c := h.store.cases[1]
	e := c.Enforcement
	if c.CaseID != "single.sidecar.enforce.q50.r1" || e == nil || e.Mode != results.ModeSidecar || len(e.Denied) != 1 || len(e.Allowed) != 1 {
		t.Fatalf("case %s: enforcement %+v", c.CaseID, e)
	}
	if d := e.Removed.Sub(e.Applied); d != 25*time.Second || c.Timings["before-policy"] != "10s" {
		t.Errorf("applied %s, removed %s (%s later), timings %v: want 25 s apart, 10 s into the load", e.Applied, e.Removed, d, c.Timings)
	}
	if got := strings.Join(h.calls.log, "|"); !strings.Contains(got, "apply-deny sidecar (ctx ok: true)|remove-deny (ctx ok: true)") {
		t.Errorf("calls %q", h.calls.log)
	}
	for _, s := range h.store.samples {
		if s.CaseID == c.CaseID && s.Component == results.ComponentLoadgen {
			t.Errorf("an enforce case kept a load sample: %+v", s)
		}
	}
}

// Interrupted while the policy holds: the policy is removed on a fresh context, the case not recorded.
func TestEnforceInterruptedRemovesThePolicy(t *testing.T) {
	t.Parallel()
	h := enforceHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.clock.onSleep = func(d time.Duration) {
		if d == 25*time.Second { // the hold
			cancel()
		}
	}
	out, err := h.r.Run(ctx)
	if err != nil || !out.Interrupted {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
	log := strings.Join(h.calls.log, "|")
	if !strings.Contains(log, "apply-deny sidecar (ctx ok: true)|remove-deny (ctx ok: true)") {
		t.Errorf("the policy was not removed on a live context after the interruption: %q", h.calls.log)
	}
	if len(h.store.cases) != 1 {
		t.Errorf("%d cases recorded, want the mode case only", len(h.store.cases))
	}
}
