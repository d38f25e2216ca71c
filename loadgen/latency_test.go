package loadgen

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/stats"
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The fortio facts these tests pin were read in fortio/fortio at tag v1.75.3:
//   - stats/stats.go, histogramBucketValues: fixed buckets ..., 1000, 2000, 3000, 4000, 5000, 7500, 10000, ... in units
//     of the resolution, so at Resolution 1e-5 the buckets between 10 and 50 ms are 10 ms wide (then 50-75-100 ms,
//     and 100 ms wide to 1 s); percentiles interpolate linearly inside a bucket (clamped to min and max).
//   - periodic/periodic.go, AccessLogger (Start, Report(ctx, thread, iter, start, latency float64, status bool,
//     details string), Info) and runOne: Report is called after every Run with latency = time.Since(start) in seconds.
//   - fhttp/httprunner.go, HTTPRunnerResults.Run: returns codeIsOK(code), strconv.Itoa(code); fhttp/http_client.go,
//     codeIsOK: 200-299 or 418 (StatusTeapot). Connection errors are code -1.

func near(a, b, rel float64) bool {
	return a == b || math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// record returns the recorder's histogram of values (seconds), all counted as successes.
func record(values []float64) *Histogram {
	r := newRecorder(nil)
	for _, v := range values {
		r.service.record(micros(v), true)
	}
	return r.Latencies().OK
}

// boaLike returns n latencies (seconds) around base: 98 % normal with sigma 0.5 ms (kept within ±1.9 ms), 1 % fast
// (5 ms, e.g. cached answers) and 1 % slow (250 ms), like a Bank of Anthos page. The outliers are what makes fortio's
// histogram blind: its buckets reach from them to the bulk, so the bulk's bucket is interpolated edge to edge.
func boaLike(rng *rand.Rand, n int, base float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		switch {
		case i%100 == 0:
			out[i] = 0.005
		case i%100 == 1:
			out[i] = 0.250
		default:
			out[i] = base + math.Max(-0.0019, math.Min(0.0019, rng.NormFloat64()*0.0005))
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2] // the lower median: what a histogram's p50 (the rank-n/2 value) estimates
}

// TestHistogramResolvesTenthOfMillisecond: at Bank of Anthos latencies (20-100 ms) a shift of 0.3 ms moves the
// histogram's p50 by 0.3 ms (± 0.05), and the p50 is the sample median to 0.01 ms. fortio's own histogram at
// resolution 1e-5 (stats.NewHistogram(0, 1e-5), what meshbench used before) puts both distributions into the same
// 10 ms (or 25 ms) bucket and reports the same p50 for both (it cannot see the shift), or, with the bulk on a bucket
// edge (30 ms), moves its p50 by about 3 ms.
func TestHistogramResolvesTenthOfMillisecond(t *testing.T) {
	t.Parallel()
	const shift = 0.0003
	for _, base := range []float64{0.022, 0.0300, 0.033, 0.047, 0.060, 0.088} {
		rng := rand.New(rand.NewPCG(7, uint64(base*1e6)))
		a := boaLike(rng, 4000, base)
		b := make([]float64, len(a))
		for i, v := range a {
			b[i] = v
			if v != 0.005 && v != 0.250 {
				b[i] = v + shift
			}
		}
		ha, hb := record(a), record(b)
		pa, pb := msOf(ha.Percentile(50)), msOf(hb.Percentile(50))
		if d := pb - pa; math.Abs(d-0.3) > 0.05 {
			t.Errorf("base %g ms: HDR p50 %.4f vs %.4f ms: difference %.4f ms, want 0.3 ± 0.05", base*1e3, pa, pb, d)
		}
		for _, c := range []struct {
			p50    float64
			values []float64
		}{{pa, a}, {pb, b}} {
			if m := median(c.values) * 1e3; math.Abs(c.p50-m) > 0.01 {
				t.Errorf("base %g ms: HDR p50 %.4f ms, sample median %.4f ms", base*1e3, c.p50, m)
			}
		}

		fa, fb := fortioP50(a), fortioP50(b)
		if d := fb - fa; math.Abs(d-0.3) < 0.2 {
			t.Errorf("base %g ms: fortio's p50 %.4f vs %.4f ms differ by %.4f ms: expected fortio's 10 ms buckets to hide the 0.3 ms shift", base*1e3, fa, fb, d)
		}
		t.Logf("base %4.1f ms: HDR p50 %.4f -> %.4f ms (Δ %.4f); fortio 1e-5 p50 %.4f -> %.4f ms (Δ %.4f)", base*1e3, pa, pb, pb-pa, fa, fb, fb-fa)
	}
}

// fortioP50 is fortio's p50 in ms of values recorded as its runner records them at resolution 1e-5.
func fortioP50(values []float64) float64 {
	h := stats.NewHistogram(0, 1e-5)
	for _, v := range values {
		h.Record(v)
	}
	return h.Export().CalcPercentiles([]float64{50}).Percentiles[0].Value * 1e3
}

// TestHistogramResolution: two requests delta apart are in different buckets (the p50 is the smaller one, not the
// clamped top of a shared bucket) over the whole range: 10 µs below 1 ms, 0.1 ms at 10-200 ms.
func TestHistogramResolution(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ v, delta float64 }{
		{0.000050, 10e-6}, {0.000300, 10e-6}, {0.000990, 10e-6}, {0.010, 1e-4}, {0.0327, 1e-4}, {0.050, 1e-4},
		{0.100, 1e-4}, {0.150, 1e-4}, {0.1999, 1e-4}, {0.500, 1e-3}, {59.0, 0.01},
	} {
		h := record([]float64{c.v, c.v + c.delta})
		if got := h.Percentile(50).Seconds(); math.Abs(got-c.v) > c.delta/4 {
			t.Errorf("{%g s, %g s}: p50 %g s, want %g (the two values must be in different buckets)", c.v, c.v+c.delta, got, c.v)
		}
	}
	// The bucket widths the geometry comment states: 1 µs below 32.768 ms, then doubling per power of two.
	g := hdrhistogram.New(latencyLowestUS, latencyHighestUS, latencySigFigs)
	for _, c := range []struct{ from, width int64 }{{1000, 1}, {32767, 1}, {32768, 2}, {65536, 4}, {131072, 8}, {200000, 8}, {262144, 16}} {
		if !g.ValuesAreEquivalent(c.from, c.from+c.width-1) || g.ValuesAreEquivalent(c.from, c.from+c.width) {
			t.Errorf("bucket at %d µs is not %d µs wide", c.from, c.width)
		}
	}
	// Out of range values are clamped, not lost.
	h := record([]float64{-1, 0, 120})
	if h.Count() != 3 || h.Min() != 0 || h.Max() != time.Duration(latencyHighestUS)*time.Microsecond {
		t.Errorf("clamped: count %d min %s max %s", h.Count(), h.Min(), h.Max())
	}
}

func TestHistogramStats(t *testing.T) {
	t.Parallel()
	var values []float64
	for i := 1; i <= 1000; i++ {
		values = append(values, float64(i)*1e-5) // 10 µs .. 10 ms
	}
	h := record(values)
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"p50", h.Percentile(50), 5000 * time.Microsecond},
		{"p90", h.Percentile(90), 9000 * time.Microsecond},
		{"p99.9", h.Percentile(99.9), 9990 * time.Microsecond},
		{"p100", h.Percentile(100), 10 * time.Millisecond},
		{"mean", h.Mean(), 5005 * time.Microsecond},
		{"min", h.Min(), 10 * time.Microsecond},
		{"max", h.Max(), 10 * time.Millisecond},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
	var empty *Histogram
	if empty.Count() != 0 || empty.Percentile(50) != 0 || empty.Mean() != 0 || empty.Max() != 0 || newHistogram().Percentile(99) != 0 {
		t.Error("an empty or nil histogram must report zeros")
	}
}

// TestRecorderClassifiesByStatusCode: fhttp passes the status code as details; 2xx are successes, everything else
// (418 included, although fortio's status flag says OK for it) is an error, as in the Errors count.
func TestRecorderClassifiesByStatusCode(t *testing.T) {
	t.Parallel()
	r := newRecorder(nil)
	for _, c := range []struct {
		details string
		status  bool
	}{{"200", true}, {"204", true}, {"299", true}, {"418", true}, {"503", false}, {"301", false}, {"-1", false}, {"", true}} {
		r.Report(context.Background(), 0, 0, time.Now(), 0.001, c.status, c.details)
	}
	l := r.Latencies()
	if l.OK.Count() != 3 || l.Errors.Count() != 5 {
		t.Errorf("ok %d errors %d, want 3 (200, 204, 299) and 5 (418, 503, 301, -1, unparsable)", l.OK.Count(), l.Errors.Count())
	}
	if r.Info() == "" {
		t.Error("Info is shown in fortio's log line; it must not be empty")
	}
}

// TestMergeHistogramsIsExact: merging per-client histograms (also after their JSON round trip, as from the agents)
// gives exactly the histogram of all requests: the same buckets, count, sum, min and max, and so the same
// percentiles.
func TestMergeHistogramsIsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		clients int
		gen     func(client int) float64
	}{
		{"sub-ms lognormal", 3, func(int) float64 { return math.Exp(rng.NormFloat64()*0.6) * 2e-4 }},
		{"bank of anthos", 2, func(int) float64 { return 0.01 + rng.ExpFloat64()*0.03 }},
		{"one slow client", 2, func(i int) float64 { return float64(1+i%2*9) * (1e-3 + rng.Float64()*1e-3) }},
		{"every range, clamped too", 4, func(int) float64 { return math.Pow(10, -6.5+rng.Float64()*8.5) }},
		{"one empty client", 2, func(int) float64 { return 0.02 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all []float64
			parts := make([][]float64, tc.clients)
			for c := range parts {
				n := 1 + rng.IntN(20000)
				if tc.name == "one empty client" && c == 0 {
					n = 0
				}
				for range n {
					v := tc.gen(c)
					parts[c] = append(parts[c], v)
					all = append(all, v)
				}
			}
			var hs, wire []*Histogram
			for _, p := range parts {
				h := record(p)
				hs = append(hs, h)
				b, err := json.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				var back Histogram
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				wire = append(wire, &back)
			}
			before := mustJSON(t, hs[0])
			union := mustJSON(t, record(all))
			for name, got := range map[string]*Histogram{"merged": mergeHistograms(hs...), "merged from JSON": mergeHistograms(wire...)} {
				if g := mustJSON(t, got); g != union {
					t.Errorf("%s differs from the histogram of the union:\n got %.300s\nwant %.300s", name, g, union)
				}
				u := record(all)
				for _, p := range append(percentiles(), 0, 100) {
					if got.Percentile(p) != u.Percentile(p) {
						t.Errorf("%s p%g = %s, union %s", name, p, got.Percentile(p), u.Percentile(p))
					}
				}
			}
			if mustJSON(t, hs[0]) != before {
				t.Error("mergeHistograms modified its input")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunClientSplitsLatencyByStatus drives a real fortio client (loadgen.RunClient at a fixed rate) against a server
// that answers every fourth request 503 after 2 ms and the others 200 after 20 ms: the 2xx histogram holds only the
// 200s (its minimum is above 20 ms: no error latency in the primary percentiles), the error histogram only the 503s.
func TestRunClientSplitsLatencyByStatus(t *testing.T) {
	t.Parallel()
	var served, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if served.Add(1)%4 == 0 {
			failed.Add(1)
			time.Sleep(2 * time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		time.Sleep(20 * time.Millisecond)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	const conns = 4
	rep, err := RunClient(context.Background(), ClientSpec{URL: srv.URL + "/", QPS: 100, Connections: conns, Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	ok, bad := cr.Latency, cr.ErrorLatency
	// fortio's connection warm-up sends one request per connection outside the run (fhttp.RunHTTPTest).
	if n := cr.Requests(); n < 250 || n+conns != served.Load() || cr.Codes[200]+cr.Codes[503] != n {
		t.Fatalf("%d requests (codes %v), server answered %d: want about 300 at 100 qps for 3 s, plus %d warm-ups", n, cr.Codes, served.Load(), conns)
	}
	if ok.Count() != cr.Codes[200] || bad.Count() != cr.Codes[503] {
		t.Errorf("histograms hold %d ok and %d errors, codes %v", ok.Count(), bad.Count(), cr.Codes)
	}
	if ratio := float64(bad.Count()) / float64(cr.Requests()); math.Abs(ratio-0.25) > 0.02 {
		t.Errorf("error ratio %.3f, want 0.25 (every 4th answer)", ratio)
	}
	// Lower bounds are the server's sleeps; the upper bound is a relation, not a time: a loaded machine stretches
	// both, but an error histogram holding successes would have its median at 20 ms or more.
	if p50 := ok.Percentile(50); p50 < 20*time.Millisecond {
		t.Errorf("success p50 %s, want at least 20 ms", p50)
	}
	if p50 := bad.Percentile(50); p50 < 2*time.Millisecond || p50 >= ok.Percentile(50) || p50 >= 20*time.Millisecond {
		t.Errorf("error p50 %s, want at least 2 ms and below 20 ms and the success p50 %s", p50, ok.Percentile(50))
	}
	if ok.Min() < 20*time.Millisecond {
		t.Errorf("success min %s: a 2 ms error latency leaked into the successful requests' percentiles", ok.Min())
	}
	t.Logf("%d requests: %d ok p50 %s p99 %s min %s; %d errors p50 %s p99 %s max %s", cr.Requests(), ok.Count(), ok.Percentile(50),
		ok.Percentile(99), ok.Min(), bad.Count(), bad.Percentile(50), bad.Percentile(99), bad.Max())
}

// TestRecorderConcurrent: fortio calls Report from every connection's goroutine at once (run with -race).
func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	r := newRecorder(nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				r.Report(context.Background(), 0, int64(i), time.Time{}, float64(g+1)*1e-3, true, []string{"200", "503"}[i%2])
			}
		})
	}
	wg.Wait()
	l := r.Latencies()
	if l.OK.Count() != 4000 || l.Errors.Count() != 4000 || l.OK.Min() != time.Millisecond || l.OK.Max() != 8*time.Millisecond {
		t.Errorf("ok %d errors %d min %s max %s", l.OK.Count(), l.Errors.Count(), l.OK.Min(), l.OK.Max())
	}
}
