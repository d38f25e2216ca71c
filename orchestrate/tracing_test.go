package orchestrate

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/meshbench/meshbench/internal/spansink"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// The traces a load starts are binomial in its requests at the sampling rate: the lower bound is all of them at
// 100 %, none at a rate too low to expect one, and about 4 standard deviations under the mean between.
func TestBinomialLower(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int64
		p      float64
		lo, hi int64
	}{
		{3000, 1, 3000, 3000},
		{3000, 0.01, 10, 15}, // mean 30, sd 5.4
		{750, 0.01, 0, 0},    // mean 7.5: P(0) = 5.5e-4 > alpha
		{100000, 0.5, 49300, 49500},
		{0, 0.5, 0, 0},
		{1000, 0, 0, 0},
	} {
		if got := binomialLower(tc.n, tc.p, tracingMissAlpha); got < tc.lo || got > tc.hi {
			t.Errorf("binomialLower(%d, %v) = %d, want %d..%d", tc.n, tc.p, got, tc.lo, tc.hi)
		}
	}
}

func TestCheckSpans(t *testing.T) {
	t.Parallel()
	before := spansink.Counts{Spans: 40, Roots: 20, Reports: 8}
	at := func(spans, roots, rejected int64) spansink.Counts {
		return spansink.Counts{Spans: before.Spans + spans, Roots: before.Roots + roots, Reports: before.Reports + 1, Rejected: rejected}
	}
	for _, tc := range []struct {
		name     string
		sampling float64
		requests int64
		after    spansink.Counts
		want     string // in the proof, or the error when wantErr
		wantErr  bool
	}{
		{"100 %: a trace per request, two spans each", 100, 3000, at(6000, 3000, 0), "3000 traces, 6000 spans for the 3000 requests of the measured window (at least 3000 traces expected; 2.00 spans per trace)", false},
		{"100 %: the lead-in's traces only add", 100, 3000, at(6400, 3200, 0), "3200 traces", false},
		{"100 %: one request untraced", 100, 3000, at(5998, 2999, 0), "2999 traces for 3000 requests, want at least 3000", true},
		{"1 %: about 30 traces", 1, 3000, at(58, 29, 0), "29 traces", false},
		{"1 %: none (tracing off)", 1, 3000, at(0, 0, 0), "0 traces for 3000 requests, want at least", true},
		{"0 %: nothing", 0, 3000, at(0, 0, 0), "sampling 0 %: no span during the load (3000 requests)", false},
		{"0 %: the mesh default 1 % would send some", 0, 3000, at(60, 30, 0), "sampling 0 %: 60 spans reached the sink during the load, want none", true},
		{"refused reports", 100, 10, at(20, 10, 1), "refused 1 reports", true},
	} {
		got, err := checkSpans(tc.sampling, tc.requests, before, tc.after)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// fakeSink is a span sink whose counts grow by 3 spans (one trace) from the growAt-th read on.
type fakeSink struct {
	mu      sync.Mutex
	ns      string
	reads   int
	growAt  int
	counts  spansink.Counts
	ensured int
}

func (f *fakeSink) EnsureSpanSink(_ context.Context, ns string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ns, f.ensured = ns, f.ensured+1
	return nil
}

func (f *fakeSink) SpanCounts(context.Context, string) (spansink.Counts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.growAt > 0 && f.reads == f.growAt {
		f.counts.Spans += 3
		f.counts.Roots++
		f.counts.Reports++
	}
	return f.counts, nil
}

type fakeMeshConfig struct{ added []mesh.ZipkinProvider }

func (f *fakeMeshConfig) AddZipkin(_ context.Context, p mesh.ZipkinProvider) error {
	f.added = append(f.added, p)
	return nil
}
func (f *fakeMeshConfig) Remove(context.Context) error { return nil }

// stepWhileWaiting advances clk by d whenever something waits on it, until the test ends.
func stepWhileWaiting(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				if clk.HasWaiters() {
					clk.Step(d)
				}
			}
		}
	}()
}

// A tracing variant puts the sink in the entry namespace and names it in the provider by its fully qualified name,
// then sends requests forced into a trace until spans arrive and waits for the count to settle; a sink that never
// receives one fails the variant naming the provider.
func TestProveTracing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tgt := target.Target{EntryNamespace: "shop", ClusterDomain: "corp.example", EntryURL: "http://frontend.shop:8080/home"}
	newAdapter := func(sink *fakeSink, probed *[]string) (*meshAdapter, *fakeMeshConfig) {
		clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
		stepWhileWaiting(t, clk, time.Second)
		mc := &fakeMeshConfig{}
		return &meshAdapter{sw: &mesh.Switcher{RunID: "r1"}, sink: sink, meshConfig: mc, clk: clk, proofWait: 200 * time.Millisecond,
			probe: func(_ context.Context, _ target.Target, mode scenario.Mode, u string, headers ...string) (int, error) {
				*probed = append(*probed, string(mode)+" "+u+" "+strings.Join(headers, ","))
				return 200, nil
			}}, mc
	}
	var probed []string
	sink := &fakeSink{growAt: 3} // read 1: before; the 2nd probe's read sees the trace
	a, mc := newAdapter(sink, &probed)
	if err := a.prepareTracing(ctx, tgt); err != nil {
		t.Fatal(err)
	}
	want := mesh.ZipkinProvider{Name: "meshbench-spans-r1", Service: "meshbench-spans.shop.svc.corp.example", Port: 9411}
	if sink.ns != "shop" || len(mc.added) != 1 || mc.added[0] != want {
		t.Fatalf("sink in %q, providers %+v; want the sink in shop and %+v", sink.ns, mc.added, want)
	}
	said, err := a.proveTracing(ctx, tgt, scenario.ModeSidecar)
	if err != nil || !strings.Contains(said, "2 requests forced into a trace: 3 spans reached the span sink") {
		t.Fatalf("proof %q (%v)", said, err)
	}
	if len(probed) != 2 || !strings.Contains(probed[0], "sidecar http://frontend.shop:8080/home x-client-trace-id: meshbench-0") {
		t.Errorf("probes %q", probed)
	}

	probed = nil
	a, _ = newAdapter(&fakeSink{}, &probed)
	if _, err := a.proveTracing(ctx, tgt, scenario.ModeWaypoint); err == nil || !strings.Contains(err.Error(), "sent no span to the sink") ||
		!strings.Contains(err.Error(), "meshbench-spans-r1") {
		t.Errorf("a sink without spans: err %v", err)
	}
}

// Around a tracing variant's load the adapter reads the sink and checks the spans against the variant's rate; a
// plain case has no tracing mark and no tracing fact.
func TestTracedLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tgt := target.Target{EntryNamespace: "shop"}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	stepWhileWaiting(t, clk, spanFlush)
	sink := &fakeSink{growAt: 2}
	pct := 100.0
	a := &meshAdapter{sink: sink, clk: clk}
	if m, err := a.beforeTracedLoad(ctx, tgt); m != nil || err != nil {
		t.Fatalf("no variant in force: mark %v (%v)", m, err)
	}
	a.tracing = &scenario.Tracing{SamplingPercent: &pct}
	m, err := a.beforeTracedLoad(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := a.afterTracedLoad(ctx, tgt, m, 1)
	if err != nil || !strings.Contains(facts[results.FactTracingProof], "sampling 100 %: 1 traces, 3 spans for the 1 requests of the measured window") {
		t.Errorf("facts %v (%v)", facts, err)
	}
	if _, err := a.afterTracedLoad(ctx, tgt, m, 2); err == nil || !strings.Contains(err.Error(), "1 traces for 2 requests") {
		t.Errorf("one request untraced at 100 %%: err %v", err)
	}
}
