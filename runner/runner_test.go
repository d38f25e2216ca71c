package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// fakeClock advances only when slept on, so the tests take no wall time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
	// onSleep, when set, runs before each sleep (to cancel a context at a chosen moment).
	onSleep func(d time.Duration)
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.onSleep != nil {
		c.onSleep(d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.mu.Lock()
		c.now = c.now.Add(d)
		c.mu.Unlock()
	}
	return nil
}

type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

type fakeWorkloads struct {
	*calls
	clock *fakeClock
}

func (f fakeWorkloads) Ensure(_ context.Context, topo scenario.Topology) (target.Target, error) {
	f.add("ensure %s", topo.Name)
	return target.Target{Topology: topo.Name, Namespaces: []string{"mb-" + topo.Name}, EntryURL: "http://entry/",
		Facts: map[results.FactKey]string{"replicas": "1"}}, nil
}

func (f fakeWorkloads) WaitReady(context.Context, target.Target) error {
	f.add("wait-ready")
	return f.clock.Sleep(context.Background(), 3*time.Second)
}

func (f fakeWorkloads) Teardown(ctx context.Context, t target.Target) error {
	f.add("teardown %s (ctx ok: %v)", t.Topology, ctx.Err() == nil)
	return nil
}

type fakeMesh struct {
	*calls
	absent scenario.Mode // Verify fails for this mode
}

func (f fakeMesh) Apply(_ context.Context, _ target.Target, m scenario.Mode) (map[results.FactKey]string, error) {
	f.add("apply %s", m)
	return map[results.FactKey]string{"mode-switch": "label"}, nil
}

func (f fakeMesh) Verify(_ context.Context, _ target.Target, m scenario.Mode) (map[results.FactKey]string, error) {
	f.add("verify %s", m)
	if m == f.absent {
		return nil, errNoRedirection
	}
	return map[results.FactKey]string{results.FactVerifiedPods: "3"}, nil
}

func (f fakeMesh) Restore(ctx context.Context) error {
	f.add("restore (ctx ok: %v)", ctx.Err() == nil)
	return nil
}

var errNoRedirection = errors.New("pod svc-0: no ambient.istio.io/redirection annotation (is ztunnel installed?)")

type fakeLoad struct {
	*calls
	clock     *fakeClock
	allErrors bool
	shortfall *results.LoadShortfall
}

func (f fakeLoad) Prepare(_ context.Context, _ target.Target, m scenario.Mode) error {
	f.add("prepare %s", m)
	return nil
}

func (f fakeLoad) Run(ctx context.Context, _ target.Target, req LoadRequest) (LoadResult, error) {
	f.add("load %s lead %s window %s cool %s", req.Case.ID, req.LeadIn, req.Window, req.CoolDown)
	if err := f.clock.Sleep(ctx, req.LeadIn); err != nil {
		return LoadResult{}, err
	}
	w := results.Window{Kind: results.WindowLoad, Start: f.clock.Now().Add(7 * time.Millisecond)}
	if err := f.clock.Sleep(ctx, req.Window); err != nil {
		return LoadResult{}, err
	}
	w.End = f.clock.Now()
	if err := f.clock.Sleep(ctx, req.CoolDown); err != nil {
		return LoadResult{}, err
	}
	res := LoadResult{Window: w, Windows: []results.Window{w}, Requests: 100, Samples: []results.Sample{
		{Window: w, Source: "fortio", Component: results.ComponentLoadgen, Metric: "qps", Stat: "value", Value: 99, Unit: "rps"},
	}}
	if f.allErrors {
		res.Errors = 100
	}
	res.Shortfall = f.shortfall
	return res, nil
}

func (f fakeLoad) Teardown(ctx context.Context, t target.Target) error {
	f.add("load-teardown %s (ctx ok: %v)", t.Topology, ctx.Err() == nil)
	return nil
}

type fakeCollector struct{ *calls }

func (f fakeCollector) Collect(_ context.Context, _ target.Target, _ scenario.Case, w results.Window) (Collection, error) {
	f.add("collect %s %s", w.Kind, w.End.Sub(w.Start).Round(time.Second))
	c := Collection{Window: w, Samples: []results.Sample{
		{Window: w, Source: "prometheus", Component: results.ComponentApp, Metric: "cpu", Stat: "avg", Value: 42, Unit: "millicores"},
	}, Warnings: []string{"no ztunnel data"}}
	if w.Kind == results.WindowLoad {
		c.IngestWait = 3 * time.Second // collected right after the window: it waited for the last scrapes
	}
	return c, nil
}

func (fakeCollector) LeadIn() time.Duration { return 20 * time.Second }

func (fakeCollector) Guard() time.Duration { return 5 * time.Second }

type memStore struct {
	cases   []results.CaseResult
	samples []results.Sample
}

func (m *memStore) AppendCase(res results.CaseResult, samples []results.Sample) error {
	m.cases = append(m.cases, res)
	m.samples = append(m.samples, samples...)
	return nil
}

func testScenario(t *testing.T, modes string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: runner-test}
spec:
  profile: localcluster
  workload: {app: fortio-chain}
  modes: ` + modes + `
  load: {qps: [50, 200], warmUp: 10s, trimEnd: 2s}
  windows: {idle: 20s, load: 30s, repetitions: 2, settle: 5s}
  prometheus: {url: "http://127.0.0.1:19090"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type harness struct {
	s     *scenario.Scenario
	calls *calls
	clock *fakeClock
	store *memStore
	r     *Runner
}

func newHarness(t *testing.T, modes string, absent scenario.Mode) *harness {
	return harnessFor(t, testScenario(t, modes), func(c *calls) meshSwitcher { return fakeMesh{c, absent} })
}

// harnessFor runs scenario s with the fake adapters, the mesh mesh(calls) makes.
func harnessFor(t *testing.T, s *scenario.Scenario, mesh func(*calls) meshSwitcher) *harness {
	t.Helper()
	h := &harness{s: s, calls: &calls{}, clock: &fakeClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}, store: &memStore{}}
	h.r = &Runner{
		Plan: scenario.NewPlan(s), RunID: "run-1",
		Workloads: fakeWorkloads{h.calls, h.clock}, Mesh: mesh(h.calls), Load: fakeLoad{calls: h.calls, clock: h.clock},
		Collector: fakeCollector{h.calls}, Store: h.store, Clock: h.clock,
	}
	return h
}

func TestRunAllCasesWithAnAbsentDataPlane(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none, ambient]", scenario.ModeAmbient)
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Total != 8 || out.OK != 4 || len(out.Failed) != 4 || out.Interrupted {
		t.Fatalf("outcome %+v", out)
	}
	want := []string{
		// repetition 1: none (switch, idle, two load levels), then ambient fails verification once for its group
		"ensure single", "apply none", "wait-ready", "verify none", "prepare none",
		"load single.none.q50.r1 lead 20s window 30s cool 5s", "collect idle 20s", "collect load 30s",
		"load single.none.q200.r1 lead 20s window 30s cool 5s", "collect load 30s",
		"apply ambient", "wait-ready", "verify ambient",
		// repetition 2 (serpentine: ambient again first) does not retry the failed group, then none switches back
		"apply none", "wait-ready", "verify none", "prepare none",
		"load single.none.q50.r2 lead 20s window 30s cool 5s", "collect idle 20s", "collect load 30s",
		"load single.none.q200.r2 lead 20s window 30s cool 5s", "collect load 30s",
		"load-teardown single (ctx ok: true)", "teardown single (ctx ok: true)", "restore (ctx ok: true)",
	}
	if got := strings.Join(h.calls.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\n\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	var ids []string
	for _, c := range h.store.cases {
		ids = append(ids, c.CaseID+"="+string(c.Status))
		if c.Status == results.StatusFailed && !strings.Contains(c.Reason, "verification of mode ambient failed") {
			t.Errorf("%s reason %q: want the verification failure", c.CaseID, c.Reason)
		}
	}
	wantIDs := "single.none.q50.r1=ok single.none.q200.r1=ok single.ambient.q50.r1=failed single.ambient.q200.r1=failed " +
		"single.ambient.q50.r2=failed single.ambient.q200.r2=failed single.none.q50.r2=ok single.none.q200.r2=ok"
	if got := strings.Join(ids, " "); got != wantIDs {
		t.Errorf("cases %s\nwant  %s", got, wantIDs)
	}
	first := h.store.cases[0]
	if len(first.Windows) != 2 || first.Windows[0].Kind != results.WindowIdle || first.Windows[1].Kind != results.WindowLoad ||
		first.Windows[0].End.Sub(first.Windows[0].Start) != 20*time.Second {
		t.Errorf("windows %+v", first.Windows)
	}
	// The idle window starts one rate range (20 s) after the switch, not after the 5 s settle alone.
	if got := first.Windows[0].Start.Sub(first.Start); got != 3*time.Second+20*time.Second {
		t.Errorf("idle window started %s after the case (want wait-ready 3s + lead-in 20s)", got)
	}
	// Issue 29 section 2b: the load starts one guard (5 s, the collector's sample spacing) after the idle window,
	// not the moment it ends, and runs one guard past the load window (trimEnd 2 s raised to 5 s, "cool 5s" above):
	// the counters are interpolated at a window's end from the sample after it, which must be of the window's own
	// condition.
	if got := first.Windows[1].Start.Sub(first.Windows[0].End); got != 5*time.Second+20*time.Second+7*time.Millisecond {
		t.Errorf("load window started %s after the idle window (want the guard 5s + lead-in 20s + the fake's 7ms)", got)
	}
	if first.Facts[results.FactGuard] != "5s" || !strings.Contains(first.Facts[results.FactCoolDown], "2s raised to the guard 5s") {
		t.Errorf("guard facts %q %q", first.Facts[results.FactGuard], first.Facts[results.FactCoolDown])
	}
	if !strings.Contains(first.Facts[results.FactLeadIn], "raised to the rate range 20s") || first.Facts[results.FactVerifiedPods] != "3" ||
		first.Facts["replicas"] != "1" || len(first.CollectorWarnings) == 0 {
		t.Errorf("facts %v", first.Facts)
	}
	// What the resource figures cover is a fact, measured from the collector's window, not the configured length.
	if first.Facts[results.FactResourceWindowOf(results.WindowIdle)] != "20s" || first.Facts[results.FactResourceWindowOf(results.WindowLoad)] == "" {
		t.Errorf("resource window facts %v", first.Facts)
	}
	for _, step := range []string{"ensure", "mode-switch", "wait-ready", "verify", "load-clients", "settle", "idle", "load", "collect-idle", "collect-load"} {
		if first.Timings[step] == "" {
			t.Errorf("no timing for %s: %v", step, first.Timings)
		}
	}
	if first.Timings["collect-wait-load"] != "3s" || first.Timings["collect-wait-idle"] != "" {
		t.Errorf("the collection's ingest wait is a timing of its own when there was one: %v", first.Timings)
	}
	for _, s := range h.store.samples {
		if s.RunID != "run-1" || s.CaseID == "" || s.Mode != "none" || s.Topology != "single" || s.Repetition == 0 {
			t.Errorf("sample without case fields: %+v", s)
		}
		if (s.Window.Kind == results.WindowIdle) != (s.Load == "") {
			t.Errorf("idle samples must have no load level, load samples must: %+v", s)
		}
	}
}

func TestResumeSkipsRecordedCasesAndSwitchesFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	h.r.Done = map[string]results.CaseResult{"single.none.q50.r1": {}, "single.none.q200.r1": {}, "single.none.q50.r2": {}}
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Resumed != 3 || out.OK != 1 || len(h.store.cases) != 1 || h.store.cases[0].CaseID != "single.none.q200.r2" {
		t.Fatalf("outcome %+v cases %+v", out, h.store.cases)
	}
	// The remaining case's plan entry has Switch=false, but nothing is deployed in this process: it must switch.
	if h.calls.log[0] != "ensure single" || h.calls.log[3] != "verify none" {
		t.Errorf("calls %q: want a full switch before the first remaining case", h.calls.log)
	}
	if len(h.store.cases[0].Windows) != 1 {
		t.Errorf("q200 has no idle window in the plan, got windows %+v", h.store.cases[0].Windows)
	}
}

func TestInterruptRunsFinalizersAndDropsTheCase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := 0
	h.clock.onSleep = func(d time.Duration) {
		if d == 30*time.Second { // a measured window
			if loads++; loads == 2 {
				cancel()
			}
		}
	}
	out, err := h.r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || len(h.store.cases) != 1 || h.store.cases[0].CaseID != "single.none.q50.r1" {
		t.Fatalf("outcome %+v cases %d: want the first case recorded, the interrupted second one not", out, len(h.store.cases))
	}
	tail := strings.Join(h.calls.log[len(h.calls.log)-3:], "\n")
	if tail != "load-teardown single (ctx ok: true)\nteardown single (ctx ok: true)\nrestore (ctx ok: true)" {
		t.Errorf("finalizers after cancel:\n%s", tail)
	}
}

func TestKeepAndAllErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	h.r.Keep = true
	h.r.Load = fakeLoad{calls: h.calls, clock: h.clock, allErrors: true}
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failed) != 4 || !strings.Contains(out.Failed[0], "every one of 100 requests failed") {
		t.Errorf("failed %q", out.Failed)
	}
	for _, c := range h.calls.log {
		if strings.Contains(c, "teardown") || strings.Contains(c, "restore") {
			t.Errorf("--keep ran %q", c)
		}
	}
	if len(h.store.samples) == 0 {
		t.Error("a failed case keeps its samples (Summarize leaves them out)")
	}
}

// A load that fell short of its rate is measured and recorded ok, saying so in the case.
func TestLoadShortfallRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	short := results.ShortOf(100, 90)
	h.r.Load = fakeLoad{calls: h.calls, clock: h.clock, shortfall: short}
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.store.cases {
		if c.Status != results.StatusOK || c.LoadShortfall == nil || *c.LoadShortfall != *short {
			t.Errorf("case %s: status %s shortfall %+v, want ok with %+v", c.CaseID, c.Status, c.LoadShortfall, short)
		}
	}
	if len(h.store.cases) == 0 {
		t.Fatal("no case recorded")
	}
}

type failingCollector struct{ fakeCollector }

func (failingCollector) Collect(_ context.Context, _ target.Target, _ scenario.Case, w results.Window) (Collection, error) {
	return Collection{Window: w, Warnings: []string{"prometheus warning"}}, errors.New("prometheus: connection refused")
}

func TestCollectorFailureFailsTheCaseButKeepsLoadSamples(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	h.r.Collector = failingCollector{fakeCollector{h.calls}}
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failed) != 4 || !strings.Contains(out.Failed[0], "collect idle window: prometheus: connection refused") {
		t.Fatalf("failed %q", out.Failed)
	}
	c := h.store.cases[0]
	if !slices.Equal(c.CollectorWarnings, []string{"prometheus warning"}) || len(c.Windows) != 2 {
		t.Errorf("facts %v windows %v", c.Facts, c.Windows)
	}
	if len(h.store.samples) == 0 || h.store.samples[0].Component != results.ComponentLoadgen {
		t.Errorf("the load samples of a failed case are still recorded: %+v", h.store.samples)
	}
}

// A failed switch is a typed error naming the runner step and keeping the adapter's error; the reason recorded with
// the case is its text, the same words as before.
func TestSwitchErrorIsTyped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[ambient]", scenario.ModeAmbient)
	c := h.r.Plan.Cases[0]
	cr := &caseRun{clock: h.clock, res: results.CaseResult{Timings: map[string]string{}, Facts: map[results.FactKey]string{}}}
	err := h.r.switchTo(context.Background(), &state{}, c, cr)
	var se *switchError
	if !errors.As(err, &se) || se.Step != "verify" || !errors.Is(err, errNoRedirection) {
		t.Fatalf("switchTo = %#v, want a *SwitchError of step verify wrapping the mesh's error", err)
	}
	want := "not measured: verification of mode ambient failed: " + errNoRedirection.Error()
	if err.Error() != want {
		t.Errorf("reason %q, want %q", err.Error(), want)
	}
	if _, ok := cr.res.Timings["verify"]; !ok {
		t.Errorf("the failed step is still timed: %v", cr.res.Timings)
	}
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, rec := range h.store.cases {
		wantReason := want
		if i > 0 {
			wantReason = "not measured: switching to mode ambient failed earlier in this group: " + want
		}
		if rec.Reason != wantReason {
			t.Errorf("case %s reason %q, want %q", rec.CaseID, rec.Reason, wantReason)
		}
	}
}

// cancelStore cancels the run's context right after the n-th recorded case: a signal between two cases.
type cancelStore struct {
	*memStore
	n      int
	cancel context.CancelFunc
}

func (c *cancelStore) AppendCase(res results.CaseResult, samples []results.Sample) error {
	err := c.memStore.AppendCase(res, samples)
	if len(c.memStore.cases) == c.n {
		c.cancel()
	}
	return err
}

// TestInterruptionWhereAndWhatIsLeft: the outcome says which case and step the interruption met and lists the
// planned cases without a record (what --resume runs), so run.json can mark the run (issue 15 section 2).
func TestInterruptionWhereAndWhatIsLeft(t *testing.T) {
	t.Parallel()
	const (
		q50r1, q200r1, q50r2, q200r2 = "single.none.q50.r1", "single.none.q200.r1", "single.none.q50.r2", "single.none.q200.r2"
	)
	tests := []struct {
		name string
		// cancelOn cancels at the n-th sleep of duration d (0: never); afterCases cancels after that many records.
		d          time.Duration
		n          int
		afterCases int
		done       []string
		wantCase   string
		wantPhase  string
		wantNotRun []string
		wantRec    int
	}{
		{name: "second case's measured window", d: 30 * time.Second, n: 2, wantCase: q200r1, wantPhase: "load", wantNotRun: []string{q200r1, q50r2, q200r2}, wantRec: 1},
		{name: "first case's settle", d: 5 * time.Second, n: 1, wantCase: q50r1, wantPhase: "settle", wantNotRun: []string{q50r1, q200r1, q50r2, q200r2}},
		{name: "first case's idle window", d: 20 * time.Second, n: 1, wantCase: q50r1, wantPhase: "idle", wantNotRun: []string{q50r1, q200r1, q50r2, q200r2}},
		{name: "between cases", afterCases: 2, wantCase: q50r2, wantPhase: "", wantNotRun: []string{q50r2, q200r2}, wantRec: 2},
		{name: "resumed run: recorded cases are not left", d: 30 * time.Second, n: 1, done: []string{q50r1}, wantCase: q200r1, wantPhase: "load",
			wantNotRun: []string{q200r1, q50r2, q200r2}, wantRec: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "[none]", "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := 0
			h.clock.onSleep = func(d time.Duration) {
				if tc.d != 0 && d == tc.d {
					if seen++; seen == tc.n {
						cancel()
					}
				}
			}
			if tc.afterCases > 0 {
				h.r.Store = &cancelStore{memStore: h.store, n: tc.afterCases, cancel: cancel}
			}
			if len(tc.done) > 0 {
				h.r.Done = map[string]results.CaseResult{}
				for _, id := range tc.done {
					h.r.Done[id] = results.CaseResult{CaseID: id, Status: results.StatusOK}
				}
			}
			start := h.clock.Now()
			out, err := h.r.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Interrupted || out.InterruptedCase != tc.wantCase || out.InterruptedPhase != tc.wantPhase {
				t.Errorf("interrupted %v at case %q phase %q, want %q %q", out.Interrupted, out.InterruptedCase, out.InterruptedPhase, tc.wantCase, tc.wantPhase)
			}
			if strings.Join(out.NotRun, ",") != strings.Join(tc.wantNotRun, ",") {
				t.Errorf("not run %v, want %v", out.NotRun, tc.wantNotRun)
			}
			if out.Recorded() != tc.wantRec || out.Total != 4 || out.Recorded()+len(out.NotRun) != out.Total {
				t.Errorf("recorded %d of %d with %d not run, want %d recorded", out.Recorded(), out.Total, len(out.NotRun), tc.wantRec)
			}
			if out.InterruptedAt.Before(start) || out.InterruptedAt.After(h.clock.Now()) {
				t.Errorf("interrupted at %s, outside the run %s..%s", out.InterruptedAt, start, h.clock.Now())
			}
		})
	}
}

// startupWorkloads is fakeWorkloads whose pods after the n-th readiness wait are waves[n] (UIDs).
type startupWorkloads struct {
	fakeWorkloads
	waves [][]string
	n     *int
}

func (f startupWorkloads) WaitReady(ctx context.Context, t target.Target) error {
	*f.n++
	return f.fakeWorkloads.WaitReady(ctx, t)
}

func (f startupWorkloads) PodStartups() []results.PodStartup {
	var out []results.PodStartup
	for _, uid := range f.waves[min(*f.n, len(f.waves))-1] {
		out = append(out, results.PodStartup{UID: uid, Seconds: map[results.StartupPhase]float64{results.PhaseReady: 3}})
	}
	return out
}

// TestPodStartupsRecordedOnce: each switch's case records the pods the runner had not seen start, so a label-only
// switch (same pods) records none and a restart records only the new pods (serpentine: repetition 2 starts in
// ambient without a switch).
func TestPodStartupsRecordedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none, ambient]", "")
	n := 0
	h.r.Workloads = startupWorkloads{fakeWorkloads{h.calls, h.clock}, [][]string{{"a", "b"}, {"a", "b"}, {"c", "b"}}, &n}
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range h.store.cases {
		var uids []string
		for _, p := range c.PodStartups {
			uids = append(uids, p.UID)
		}
		got = append(got, fmt.Sprintf("%s:%s", c.CaseID, strings.Join(uids, ",")))
	}
	want := []string{
		"single.none.q50.r1:a,b", "single.none.q200.r1:", "single.ambient.q50.r1:", "single.ambient.q200.r1:",
		"single.ambient.q50.r2:", "single.ambient.q200.r2:", "single.none.q50.r2:c", "single.none.q200.r2:",
	}
	if !slices.Equal(got, want) {
		t.Errorf("pods recorded per case\n got %q\nwant %q", got, want)
	}
}

// restartingMesh is fakeMesh that can restart the app (AppRestarter).
type restartingMesh struct{ fakeMesh }

func (f restartingMesh) RestartApp(_ context.Context, t target.Target) (map[results.FactKey]string, error) {
	f.add("restart-app %s", t.Topology)
	return map[results.FactKey]string{results.FactRestartedApp: "Deployment mb-single/a"}, nil
}

// TestRestartAppAfterEverySwitch: with startup.restartApp the app is restarted after each mode switch and before the
// readiness wait; without it, never.
func TestRestartAppAfterEverySwitch(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{true, false} {
		h := newHarness(t, "[none, ambient]", "")
		h.r.Mesh = restartingMesh{fakeMesh{h.calls, ""}}
		for i := range h.r.Plan.Cases {
			h.r.Plan.Cases[i].Policy.RestartApp = restart
		}
		if _, err := h.r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		var steps []string
		for _, l := range h.calls.log {
			if strings.HasPrefix(l, "apply") || strings.HasPrefix(l, "restart-app") || l == "wait-ready" {
				steps = append(steps, l)
			}
		}
		want := []string{"apply none", "wait-ready", "apply ambient", "wait-ready", "apply none", "wait-ready"}
		if restart {
			want = []string{"apply none", "restart-app single", "wait-ready", "apply ambient", "restart-app single", "wait-ready", "apply none", "restart-app single", "wait-ready"}
		}
		if !slices.Equal(steps, want) {
			t.Errorf("restartApp %v: steps %q, want %q", restart, steps, want)
		}
		if c := h.store.cases[0]; (c.Facts[results.FactRestartedApp] != "") != restart {
			t.Errorf("restartApp %v: facts %v", restart, c.Facts)
		}
	}
}
