package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// secondsLoad is fakeLoad that returns a per-second record at once (it runs beside the move: no clock of its own).
type secondsLoad struct{ fakeLoad }

func (f secondsLoad) Run(ctx context.Context, t target.Target, req LoadRequest) (LoadResult, error) {
	if req.Case.Policy.Transition == nil {
		return f.fakeLoad.Run(ctx, t, req)
	}
	f.add("load %s window %s per-second %v", req.Case.ID, req.Window, req.Case.Policy.Load.PerSecond)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return LoadResult{Requests: 200, Seconds: []results.LoadSecond{{Start: at, Requests: 100}, {Start: at.Add(time.Second), Requests: 100}}}, nil
}

// TestTransitionCase: a move is switched to its From mode like any case, then moved to its To mode under load
// through the mode's steps but the load clients', each step's end a phase of the record; the load's per-second record
// is kept, its samples are not, and the next case switches again (its load clients were placed for From).
func TestTransitionCase(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: runner-test}
spec:
  profile: localcluster
  workload: {app: fortio-chain}
  modes: [none, sidecar]
  load: {qps: [50], warmUp: 10s, trimEnd: 2s}
  windows: {idle: 20s, load: 30s, repetitions: 1, settle: 5s}
  transitions: {moves: [{from: none, to: sidecar}, {from: sidecar, to: none}], before: 10s, budget: 1m, after: 20s}
  prometheus: {url: "http://127.0.0.1:19090"}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := harnessFor(t, s, func(c *calls) meshSwitcher { return fakeMesh{c, ""} })
	h.r.Load = secondsLoad{fakeLoad{calls: h.calls, clock: h.clock}}
	out, err := h.r.Run(context.Background())
	if err != nil || out.OK != 4 {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
	// The load runs beside the move: its line falls anywhere among the move's, so it is checked apart.
	var loads, rest []string
	last := slices.IndexFunc(h.calls.log, func(l string) bool { return strings.HasPrefix(l, "load single.sidecar.q50.r1") })
	for _, l := range h.calls.log[last+1:] {
		switch {
		case strings.Contains(l, "-to-"):
			loads = append(loads, l)
		case !strings.HasPrefix(l, "collect") && !strings.HasPrefix(l, "load single.") && !strings.Contains(l, "teardown") && !strings.HasPrefix(l, "restore"):
			rest = append(rest, l)
		}
	}
	want := []string{
		// the second mesh case ended in sidecar: switched to none for the first move, its load clients placed
		"apply none", "wait-ready", "verify none", "prepare none",
		"apply sidecar", "wait-ready", "verify sidecar", // the move: no load clients placed
		// the state is sidecar, but its load clients are none's: switched again, the clients placed for sidecar
		"apply sidecar", "wait-ready", "verify sidecar", "prepare sidecar",
		"apply none", "wait-ready", "verify none", // the second move
	}
	if !slices.Equal(rest, want) {
		t.Errorf("calls after the mesh cases\n got %q\nwant %q", rest, want)
	}
	if wantLoads := []string{"load single.none-to-sidecar.q50.r1 window 1m30s per-second true", "load single.sidecar-to-none.q50.r1 window 1m30s per-second true"}; !slices.Equal(loads, wantLoads) {
		t.Errorf("transition loads %q, want %q", loads, wantLoads)
	}
	for _, c := range h.store.cases[2:] {
		tr := c.Transition
		if tr == nil || len(tr.Seconds) != 2 || c.Status != results.StatusOK {
			t.Fatalf("%s: status %s transition %+v", c.CaseID, c.Status, tr)
		}
		var phases []results.TransitionPhase
		for i, m := range tr.Phases {
			phases = append(phases, m.Phase)
			if i > 0 && m.At.Before(tr.Phases[i-1].At) {
				t.Errorf("%s: phase %s before the previous one", c.CaseID, m.Phase)
			}
		}
		if !slices.Equal(phases, []results.TransitionPhase{results.PhaseMoveStarted, results.PhaseModeApplied, results.PhasePodsReady, results.PhaseModeVerified}) {
			t.Errorf("%s: phases %v", c.CaseID, phases)
		}
		if c.Timings["before-move"] != "10s" {
			t.Errorf("%s: the move did not start 10 s into the load: timings %v", c.CaseID, c.Timings)
		}
	}
	for _, smp := range h.store.samples {
		if strings.Contains(smp.CaseID, "-to-") && smp.Component == results.ComponentLoadgen {
			t.Errorf("a transition case kept a load sample: %+v", smp)
		}
	}
}
