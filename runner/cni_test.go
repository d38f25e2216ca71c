package runner

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// testPods is the pod network's Workloads as orchestrate wires cni in: Ensure deploys the test pods and waits
// for them itself (no ReadyWaiter).
type testPods struct{ *calls }

func (f testPods) Ensure(context.Context, scenario.Topology) (target.Target, error) {
	f.add("ensure")
	return target.Target{Topology: "cni", Namespaces: []string{"mb-cni-1"}, Facts: map[results.FactKey]string{"node-a": "a"}}, nil
}

func (f testPods) Teardown(ctx context.Context, t target.Target) error {
	f.add("teardown %s (ctx ok: %v)", t.Topology, ctx.Err() == nil)
	return nil
}

// cniLoad answers each cni case as cni's samples would: ok, some samples failed, or none ran (a broken pod).
// It places no clients of its own (no LoadClients).
type cniLoad struct {
	*calls
	clock *fakeClock
}

func (f cniLoad) Run(ctx context.Context, _ target.Target, req LoadRequest) (LoadResult, error) {
	f.add("load %s lead %s window %s", req.Case.ID, req.LeadIn, req.Window)
	start := f.clock.Now()
	if err := f.clock.Sleep(ctx, req.Window); err != nil {
		return LoadResult{}, err
	}
	facts := map[results.FactKey]string{"tool": "iperf3", "raw.1": "raw/" + req.Case.ID + "-1.json"}
	sample := func(n int) results.Sample {
		return results.Sample{Repetition: n, Window: results.Window{Kind: results.WindowTest, Start: start, End: f.clock.Now()},
			Component: results.ComponentCNITest, Metric: "throughput", Stat: "value", Value: 9, Unit: "Gbps"}
	}
	w := results.Window{Kind: results.WindowTest, Start: start.Add(time.Second), End: f.clock.Now()} // cni trims min(rate range, half the case)
	switch req.Case.Path {
	case scenario.CNIPathSameNode:
		return LoadResult{Window: w, Windows: []results.Window{sample(1).Window, sample(2).Window}, Samples: []results.Sample{sample(1), sample(2)},
			Requests: 2, Facts: facts}, nil
	case scenario.CNIPathService:
		return LoadResult{Window: w, Windows: []results.Window{sample(1).Window, sample(2).Window}, Samples: []results.Sample{sample(2)},
			Requests: 2, Errors: 1, Partial: "sample 1: refused", Facts: facts}, nil
	default:
		return LoadResult{Facts: facts}, &NotMeasuredError{Err: errors.New("pod host-server: CreateContainerConfigError")}
	}
}

// cniPlan is a pod network plan with the policies cni.Bench.Cases gives its cases.
func cniPlan() scenario.Plan {
	test := func(path scenario.CNIPath, skip string) scenario.Case {
		return scenario.Case{ID: scenario.CNICaseID(path, scenario.CNITestTCP), Kind: scenario.CaseCNI, Path: path, Test: scenario.CNITestTCP,
			Samples: 2, Traffic: scenario.D(2 * time.Second), Skip: skip, Policy: scenario.CasePolicy{
				Load: &scenario.LoadPolicy{Window: 2 * time.Second, BackToBack: true}, Attempts: 1,
				Facts: map[string]string{string(results.FactCNIPath): string(path), string(results.FactCNITest): string(scenario.CNITestTCP)},
			}}
	}
	cases := []scenario.Case{
		{ID: scenario.CNIIdleCaseID, Kind: scenario.CaseCNI, Idle: true, Traffic: scenario.D(4 * time.Second),
			Policy: scenario.CasePolicy{Idle: 4 * time.Second, Attempts: 1}},
		test(scenario.CNIPathSameNode, ""), test(scenario.CNIPathCrossNode, "only one node"), test(scenario.CNIPathService, ""),
		test(scenario.CNIPathHost, ""),
	}
	for i := range cases {
		cases[i].Index = i + 1
	}
	return scenario.Plan{Cases: cases}
}

// Cni cases take the mesh case loop with the pod network's adapters and policies: one deploy, no mode switch,
// rollout wait, verify, load clients or restore; the idle case measures its window after one rate range of quiet; a
// planned skip is recorded skipped; a *NotMeasuredError's text is a failed case's reason, a partial load's follows
// results.CNIPartialPrefix; samples keep their sample number; path and test are facts (results.CNIRows places rows
// by them).
func TestRunCNICases(t *testing.T) {
	t.Parallel()
	c := &calls{}
	clk := &fakeClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	st := &memStore{}
	r := &Runner{Plan: cniPlan(), RunID: "cni-1", Workloads: testPods{c}, Load: cniLoad{c, clk},
		Collector: fakeCollector{c}, Store: st, Clock: clk}
	out, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.OK != 3 || out.Skipped != 1 || len(out.Failed) != 1 || !strings.HasPrefix(out.Failed[0], "host/tcp: pod host-server") {
		t.Fatalf("outcome %+v", out)
	}
	want := []string{
		"ensure", "collect idle 4s",
		"load same-node/tcp lead 20s window 2s", "collect test 1s",
		"load service/tcp lead 20s window 2s", "collect test 1s",
		"load host/tcp lead 20s window 2s",
		"teardown cni (ctx ok: true)",
	}
	if !slices.Equal(c.log, want) {
		t.Errorf("calls\n%s\nwant\n%s", strings.Join(c.log, "\n"), strings.Join(want, "\n"))
	}
	byID := map[string]results.CaseResult{}
	for _, cs := range st.cases {
		byID[cs.CaseID] = cs
	}
	checkCNIIdle(t, byID[scenario.CNIIdleCaseID])
	for id, wantStatus := range map[string]results.Status{"same-node/tcp": results.StatusOK, "cross-node/tcp": results.StatusSkipped,
		"service/tcp": results.StatusOK, "host/tcp": results.StatusFailed} {
		cs := byID[id]
		path, test, _ := strings.Cut(id, "/")
		if cs.Status != wantStatus || cs.Facts[results.FactCNIPath] != path || cs.Facts[results.FactCNITest] != test || cs.Mode != "" || cs.Load != "" {
			t.Errorf("%s: %+v", id, cs)
		}
	}
	if r := byID["cross-node/tcp"].Reason; r != "only one node" {
		t.Errorf("skipped reason %q", r)
	}
	if cs := byID["service/tcp"]; cs.Partial != "sample 1: refused" || cs.Reason != "" {
		t.Errorf("partial %q, reason %q", cs.Partial, cs.Reason)
	}
	if cs := byID["host/tcp"]; cs.Reason != "pod host-server: CreateContainerConfigError" || cs.Facts["raw.1"] == "" || len(cs.Windows) != 0 {
		t.Errorf("failed case %+v", cs)
	}
	if ws := byID["same-node/tcp"].Windows; len(ws) != 2 {
		t.Errorf("same-node/tcp windows %v, want the two sample windows", ws)
	}
	var reps []int
	for _, s := range st.samples {
		if s.CaseID == "same-node/tcp" && s.Component == results.ComponentCNITest {
			reps = append(reps, s.Repetition)
		}
	}
	if !slices.Equal(reps, []int{1, 2}) {
		t.Errorf("same-node/tcp sample repetitions %v, want the sample numbers 1, 2", reps)
	}
}

// checkCNIIdle checks the record of a pod network plan's idle case, the first case (it deploys the test pods).
func checkCNIIdle(t *testing.T, idle results.CaseResult) {
	t.Helper()
	if idle.Status != results.StatusOK || len(idle.Windows) != 1 || idle.Windows[0].Kind != results.WindowIdle {
		t.Fatalf("idle case %+v", idle)
	}
	// The idle window starts one rate range (20 s) after the deploy ended.
	if d := idle.Windows[0].End.Sub(idle.Windows[0].Start); d != 4*time.Second {
		t.Errorf("idle window %s, want 4s", d)
	}
	if q := idle.Windows[0].Start.Sub(idle.Start); q != 20*time.Second {
		t.Errorf("idle window starts %s after the case, want 20s (the quiet rate range)", q)
	}
	// Only the steps the pod network has are timed: no mode switch, rollout wait, verification or load clients.
	if got := slices.Sorted(maps.Keys(idle.Timings)); !slices.Equal(got, []string{"collect-idle", "ensure", "idle", "settle"}) {
		t.Errorf("idle case timings %v", got)
	}
	if idle.Facts["node-a"] != "a" {
		t.Errorf("idle case facts %v: want the deploy's", idle.Facts)
	}
}

// leakyWorkloads fails Ensure after creating its namespace.
type leakyWorkloads struct{ testPods }

func (f leakyWorkloads) Ensure(context.Context, scenario.Topology) (target.Target, error) {
	f.add("ensure")
	return target.Target{Topology: "cni", Namespaces: []string{"mb-cni-1"}}, errors.New("client pod: ErrImagePull")
}

// What a failed Ensure created is torn down by the finalizer; the rest of the plan is not measured because of it.
func TestRunEnsureFailureTearsDownWhatItCreated(t *testing.T) {
	t.Parallel()
	c := &calls{}
	clk := &fakeClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	st := &memStore{}
	plan := cniPlan()
	plan.Cases = plan.Cases[1:]
	r := &Runner{Plan: plan, RunID: "cni-1", Workloads: leakyWorkloads{testPods{c}}, Load: cniLoad{c, clk}, Store: st, Clock: clk}
	out, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ensure", "teardown cni (ctx ok: true)"}; !slices.Equal(c.log, want) {
		t.Errorf("calls %q, want %q", c.log, want)
	}
	if len(out.Failed) != 3 || len(st.cases) != 4 {
		t.Fatalf("outcome %+v, %d recorded", out, len(st.cases))
	}
	for _, cs := range st.cases {
		switch {
		case cs.CaseID == "cross-node/tcp":
			if cs.Status != results.StatusSkipped {
				t.Errorf("%s: %s", cs.CaseID, cs.Status)
			}
		case cs.CaseID == "same-node/tcp":
			if cs.Reason != "deploy: client pod: ErrImagePull" {
				t.Errorf("%s: %q", cs.CaseID, cs.Reason)
			}
		default:
			if cs.Reason != "not measured: deploy: client pod: ErrImagePull" {
				t.Errorf("%s: %q", cs.CaseID, cs.Reason)
			}
		}
	}
}
