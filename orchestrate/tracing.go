package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/spansink"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// A tracing variant (docs/variants.md "Tracing"): the run deploys a span sink (meshbench-agent spans) in the entry
// namespace, adds a Zipkin provider naming it to istiod's mesh config, and the variant's Telemetry names that
// provider at the variant's sampling rate. Before it is measured, a request the client forces into a trace must
// reach the sink; after the load, the traces the sink received must match the requests at the rate.

// spanSink is the sink as the mesh adapter uses it (loadgen.Cluster).
type spanSink interface {
	EnsureSpanSink(ctx context.Context, ns string) error
	SpanCounts(ctx context.Context, ns string) (spansink.Counts, error)
}

// meshConfigEditor is istiod's mesh config as a tracing variant changes it (mesh.MeshConfigEditor).
type meshConfigEditor interface {
	AddZipkin(ctx context.Context, p mesh.ZipkinProvider) error
	Remove(ctx context.Context) error
}

// tracingProofWait bounds the wait for a forced trace to reach the sink. istiod reads its mesh config from the
// ConfigMap mounted as a file (istio/istio 1.24.0 pilot/pkg/bootstrap/mesh.go initMeshConfiguration), which the
// kubelet refreshes at its sync period (a minute by default) plus its cache's delay.
const tracingProofWait = 3 * time.Minute

// spanFlush is how long Envoy's Zipkin reporter may hold a span: it sends when 5 spans are buffered or every 5 s
// (envoyproxy/envoy source/extensions/tracers/zipkin/zipkin_tracer_impl.cc, runtime tracing.zipkin.flush_interval_ms
// and min_flush_spans); the wait for the forced trace's spans to settle is one flush and a second.
const spanFlush = 6 * time.Second

// clientTraceHeader makes Envoy trace a request whatever the random sampling: Istio sets client_sampling to 100 %
// (istio/istio 1.24.0 pilot/pkg/networking/core/tracing.go configureSampling), and Envoy forces a trace for a request
// that carries it (envoyproxy/envoy source/common/http/conn_manager_utility.cc mutateTracingRequestHeader).
const clientTraceHeader = "x-client-trace-id"

// prepareTracing puts the span sink and the mesh config's provider in place for t's tracing variants.
func (a *meshAdapter) prepareTracing(ctx context.Context, t target.Target) error {
	if a.sink == nil || a.meshConfig == nil {
		return errors.New("tracing: no span sink or mesh config editor")
	}
	if err := a.sink.EnsureSpanSink(ctx, t.EntryNamespace); err != nil {
		return err
	}
	return a.meshConfig.AddZipkin(ctx, mesh.ZipkinProvider{
		Name: mesh.TracingProviderName(a.sw.RunID), Service: loadgen.SpanSinkHost(t.EntryNamespace, t.ClusterDomain), Port: spansink.Port})
}

// proveTracing sends requests forced into a trace (clientTraceHeader) on the first http load target, one every 2 s,
// until spans reach the sink, then waits until the sink's count settles. It says what it saw.
func (a *meshAdapter) proveTracing(ctx context.Context, t target.Target, mode scenario.Mode) (string, error) {
	u, ok := traceProbeURL(t)
	if !ok || a.probe == nil {
		return "", errors.New("tracing: the load has no http target to send a traced request to")
	}
	start := a.clock().Now()
	before, err := a.sink.SpanCounts(ctx, t.EntryNamespace)
	if err != nil {
		return "", err
	}
	wait := a.proofWait
	if wait <= 0 {
		wait = tracingProofWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	sent := 0
	var last error
	var now spansink.Counts
	err = kube.Wait{Interval: 2 * time.Second, Clock: a.clock()}.Until(wctx, func(ctx context.Context) (bool, error) {
		if _, err := a.probe(ctx, t, mode, u, clientTraceHeader+": meshbench-"+strconv.Itoa(sent)); err != nil {
			last = err
			return false, nil
		}
		sent++
		now, last = a.sink.SpanCounts(ctx, t.EntryNamespace)
		return last == nil && now.Spans > before.Spans, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fmt.Errorf("tracing is not in effect: %d requests forced into a trace (%s) sent no span to the sink within %s (last error: %v); check that istiod took the provider %s (its log)",
			sent, clientTraceHeader, wait, last, mesh.TracingProviderName(a.sw.RunID))
	}
	took := a.clock().Since(start).Round(100 * time.Millisecond)
	// The other proxies of the forced traces flush on their own timers: the load must not count their spans.
	settled, err := a.settleSpans(ctx, t.EntryNamespace, now)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d requests forced into a trace: %d spans reached the span sink within %s", sent, settled.Spans-before.Spans, took), nil
}

// settleSpans reads the sink every spanFlush until its span count stops growing since last (at most 10 reads).
func (a *meshAdapter) settleSpans(ctx context.Context, ns string, last spansink.Counts) (spansink.Counts, error) {
	first := true
	err := kube.Wait{Interval: spanFlush, Timeout: 10 * spanFlush, Clock: a.clock()}.Until(ctx, func(ctx context.Context) (bool, error) {
		if first { // the wait checks at once: the first read is one flush later
			first = false
			return false, nil
		}
		now, err := a.sink.SpanCounts(ctx, ns)
		if err != nil {
			return false, err
		}
		settled := now.Spans == last.Spans
		last = now
		return settled, nil
	})
	if errors.Is(err, kube.ErrWaitTimeout) {
		err = nil // still growing after 10 flushes: the proxies' own traffic, counted as it is
	}
	return last, err
}

// traceProbeURL is the first http load target's URL (any answer is traced: the path need not exist).
func traceProbeURL(t target.Target) (string, bool) {
	for _, lt := range t.LoadTargetsOrEntry() {
		if lt.Protocol != scenario.ProtocolHTTP && lt.Protocol != "" {
			continue
		}
		if _, err := url.Parse(lt.URL); err == nil {
			return lt.URL, true
		}
	}
	return "", false
}

// tracingMissAlpha is the chance the proof accepts of failing a case whose tracing works: the traces a load starts
// are binomial in its requests at the sampling rate, and fewer than the alpha quantile fail it.
const tracingMissAlpha = 1e-4

// checkSpans proves from the sink's counts before and after the load that the variant's sampling rate was in effect:
// at 0 % no span arrived; above it, the traces started (root spans) reached the binomial lower bound of requests at
// the rate (requests: the measured window's; the lead-in's traces only add). No body was refused. It says what it
// saw. It is pure.
func checkSpans(sampling float64, requests int64, before, after spansink.Counts) (string, error) {
	spans, roots, rejected := after.Spans-before.Spans, after.Roots-before.Roots, after.Rejected-before.Rejected
	if rejected > 0 {
		return "", fmt.Errorf("the span sink refused %d reports (not Zipkin v2 JSON)", rejected)
	}
	if sampling == 0 {
		if spans > 0 {
			return "", fmt.Errorf("sampling 0 %%: %d spans reached the sink during the load, want none", spans)
		}
		return fmt.Sprintf("sampling 0 %%: no span during the load (%d requests)", requests), nil
	}
	least := binomialLower(requests, sampling/100, tracingMissAlpha)
	if roots < least {
		return "", fmt.Errorf("sampling %v %%: %d traces for %d requests, want at least %d", sampling, roots, requests, least)
	}
	perTrace := 0.0
	if roots > 0 {
		perTrace = float64(spans) / float64(roots)
	}
	// Per trace, not per request: the sink also counts the lead-in's and the cool-down's requests.
	return fmt.Sprintf("sampling %v %%: %d traces, %d spans for the %d requests of the measured window (at least %d traces expected; %.2f spans per trace)",
		sampling, roots, spans, requests, least, perTrace), nil
}

// binomialLower is the largest k with P(X < k) <= alpha for X ~ Binomial(n, p).
func binomialLower(n int64, p, alpha float64) int64 {
	if n <= 0 || p <= 0 {
		return 0
	}
	b := distuv.Binomial{N: float64(n), P: math.Min(p, 1)}
	// The smallest j with CDF(j) > alpha: P(X < j) = CDF(j-1) <= alpha.
	j := sort.Search(int(n)+1, func(j int) bool { return b.CDF(float64(j)) > alpha })
	return int64(j)
}

// tracingMark is the sink's counts before a tracing case's load.
type tracingMark struct{ counts spansink.Counts }

// beforeTracedLoad reads the sink before the load of a case whose tracing variant is in force (nil otherwise).
func (a *meshAdapter) beforeTracedLoad(ctx context.Context, t target.Target) (*tracingMark, error) {
	if a.tracing == nil {
		return nil, nil
	}
	c, err := a.sink.SpanCounts(ctx, t.EntryNamespace)
	if err != nil {
		return nil, fmt.Errorf("read the span sink before the load: %w", err)
	}
	return &tracingMark{counts: c}, nil
}

// afterTracedLoad checks the spans of the load against the variant's sampling rate (checkSpans), once the proxies'
// reporters flushed them (settleSpans).
func (a *meshAdapter) afterTracedLoad(ctx context.Context, t target.Target, m *tracingMark, requests int64) (map[results.FactKey]string, error) {
	if m == nil || a.tracing == nil {
		return nil, nil
	}
	now, err := a.sink.SpanCounts(ctx, t.EntryNamespace)
	if err == nil {
		now, err = a.settleSpans(ctx, t.EntryNamespace, now)
	}
	if err != nil {
		return nil, fmt.Errorf("read the span sink after the load: %w", err)
	}
	said, err := checkSpans(a.tracing.Sampling(), requests, m.counts, now)
	if err != nil {
		return nil, fmt.Errorf("tracing variant not in effect: %w", err)
	}
	return map[results.FactKey]string{results.FactTracingProof: said}, nil
}
