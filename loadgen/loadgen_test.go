package loadgen

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	"fortio.org/fortio/fhttp"
	"fortio.org/log"

	"github.com/meshbench/meshbench/results"
)

func TestMain(m *testing.M) {
	flag.Parse()
	log.SetLogLevel(log.Warning) // fortio logs every run at info level
	os.Exit(m.Run())
}

func TestClientSpecsSplitAndArgsRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		wantQPS float64
	}{
		{"fixed split over 4", Spec{URL: "http://a.b:8080/", QPS: 1000, Connections: 4, Duration: time.Minute, Clients: 4}, 250},
		{"fixed uneven split", Spec{URL: "http://a/", QPS: 100, Connections: 1, Duration: time.Second, Clients: 3}, 100.0 / 3},
		{"max stays max", Spec{URL: "http://a/", QPS: 0, Connections: 8, Duration: 10 * time.Second, Clients: 2}, MaxQPS},
		{"every option", Spec{
			URL: "http://entry.mb-single.svc:8080/echo?size=128", QPS: 50, Connections: 2, Duration: 90 * time.Second,
			WarmUp: 30 * time.Second, CoolDown: 5 * time.Second, PayloadBytes: 1024, Jitter: true, Uniform: true, PerSecond: true, Clients: 1,
			Headers: map[string]string{"Cookie": "token=abc:def", "X-B": "2", "Host": "frontend"}, NoKeepAlive: true,
		}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			perClient := tt.spec.ClientSpecs()
			if len(perClient) != tt.spec.Clients {
				t.Fatalf("got %d client specs, want %d", len(perClient), tt.spec.Clients)
			}
			var sum float64
			for _, cs := range perClient {
				if len(cs) != 1 {
					t.Fatalf("got %d targets per client, want 1", len(cs))
				}
				c := cs[0]
				if math.Abs(c.QPS-tt.wantQPS) > 1e-9 {
					t.Errorf("client QPS = %v, want %v", c.QPS, tt.wantQPS)
				}
				sum += c.QPS
				got, jsonOut, err := parseArgs(c.Args())
				if err != nil {
					t.Fatalf("parseArgs(%q): %v", c.Args(), err)
				}
				if !jsonOut {
					t.Error("Args must ask for --json")
				}
				if !reflect.DeepEqual(got, c) {
					t.Errorf("round trip:\n got %+v\nwant %+v\nargs %q", got, c, c.Args())
				}
			}
			if !tt.spec.Max() && math.Abs(sum-tt.spec.QPS) > 1e-9 {
				t.Errorf("client QPS sum %v, want %v", sum, tt.spec.QPS)
			}
		})
	}
}

func TestParseArgsRejects(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--qps", "100"},                        // no URL
		{"--url", "http://a/", "--qps", "0"},    // 0 would silently be fortio's 8 qps
		{"--url", "http://a/", "--qps", "fast"}, // not a number
		{"--url", "http://a/", "--connections", "0"},
		{"--url", "http://a/", "--header", "novalue"},
		{"--url", "http://a/", "extra"},
		{"--url", "a:8079", "--protocol", "grpc", "--h2"}, // HTTP/2 and keep-alive are http settings
		{"--url", "tcp://a:8078", "--protocol", "tcp", "--no-keepalive"},
		{"--url", "http://a/", "--h2", "--no-keepalive"}, // fortio's HTTP/2 client keeps its connection
	} {
		if _, _, err := parseArgs(args); err == nil {
			t.Errorf("parseArgs(%q) succeeded, want an error", args)
		}
	}
	c, _, err := parseArgs([]string{"--url", "http://a/", "--qps", "max"})
	if err != nil || c.QPS != MaxQPS {
		t.Errorf("--qps max: got %v, %v; want %v", c.QPS, err, MaxQPS)
	}
}

// Captured output of real fortio runs (regenerate with -update): a meshbench-agent Report per client, two clients
// loading fortio's echo server at once, 5 % of the answers 503.
var captures = []string{"captured-report-0.json", "captured-report-1.json"}

func TestParseMergeSamplesGolden(t *testing.T) {
	if goldenfile.Update() {
		captureTestdata(t)
	}
	var clients []ClientResult
	for _, name := range captures {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		cr, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cr.Requests() == 0 || cr.Latency.Count()+cr.ErrorLatency.Count() != cr.Requests() || cr.ErrorLatency.Count() != cr.Codes[503] ||
			!cr.End.After(cr.Start) || len(cr.Phases) != 3 || cr.RequestedQPS != 200 || cr.Connections != 2 {
			t.Errorf("%s: implausible parse: %d requests, %d+%d latencies, codes %v, %s..%s, %d phases, %v qps, %d connections", name, cr.Requests(),
				cr.Latency.Count(), cr.ErrorLatency.Count(), cr.Codes, cr.Start, cr.End, len(cr.Phases), cr.RequestedQPS, cr.Connections)
		}
		clients = append(clients, cr)
	}
	res, err := merge(400, clients)
	if err != nil {
		t.Fatal(err)
	}
	want := clients[0].Requests() + clients[1].Requests()
	if res.Requests != want || res.Latency.Count()+res.ErrorLatency.Count() != want || res.Errors != res.ErrorLatency.Count() || res.Errors == 0 {
		t.Errorf("merged %d requests, %d errors and %d+%d latencies, want %d requests", res.Requests, res.Errors, res.Latency.Count(), res.ErrorLatency.Count(), want)
	}
	if !near(res.ActualQPS, clients[0].ActualQPS+clients[1].ActualQPS, 1e-12) {
		t.Errorf("merged QPS %v", res.ActualQPS)
	}
	base := results.Sample{RunID: "r1", CaseID: "single.none.q400.r1", Mode: "none", Topology: "single", Load: "400", Repetition: 1}
	golden(t, "samples-merged.golden.json", res.Samples(base))
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	var got []byte
	if s, ok := v.(string); ok {
		got = []byte(s)
	} else {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(b, '\n')
	}
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	const phases = `"phases": [{"name": "measured", "start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:00:01Z", "requests": 2}]`
	const geometry = `"unit": "us", "significantFigures": 4, "highest": 60000000`
	const one = `{"count": 1, "sum": 500, "min": 500, "max": 500, "buckets": [[500, 1]]}`
	const none = `{"count": 0, "sum": 0, "min": 0, "max": 0, "buckets": []}`
	measured := func(codes, latency string) string {
		return `{` + phases + `, "measured": {"requestedQPS": 10, "connections": 1, "sockets": 1, "codes": ` + codes + `, "latency": ` + latency + `}}`
	}
	valid := measured(`{"200": 1, "503": 1}`, `{`+geometry+`, "ok": `+one+`, "errors": `+one+`}`)
	if _, err := Parse([]byte(valid)); err != nil {
		t.Fatalf("the valid base case fails: %v", err)
	}
	for name, in := range map[string]string{
		"not json":             `fortio: connection refused`,
		"plain fortio result":  `{"RunType": "HTTP", "DurationHistogram": {"Count": 0}, "RetCodes": {"200": 1}}`,
		"no measured phase":    `{"phases": [], "measured": null}`,
		"no latency":           `{` + phases + `, "measured": {"codes": {"200": 1}}}`,
		"bad code":             measured(`{"OK": 1}`, `{`+geometry+`, "ok": `+one+`, "errors": `+none+`}`),
		"ok count off":         measured(`{"200": 2}`, `{`+geometry+`, "ok": `+one+`, "errors": `+none+`}`),
		"error in ok":          measured(`{"200": 1, "503": 1}`, `{`+geometry+`, "ok": {"count": 2, "sum": 1000, "min": 500, "max": 500, "buckets": [[500, 2]]}, "errors": `+none+`}`),
		"418 is an error":      measured(`{"418": 1}`, `{`+geometry+`, "ok": `+one+`, "errors": `+none+`}`),
		"other geometry":       measured(`{"200": 1}`, `{"unit": "us", "significantFigures": 3, "highest": 60000000, "ok": `+one+`, "errors": `+none+`}`),
		"no errors histogram":  measured(`{"200": 1}`, `{`+geometry+`, "ok": `+one+`}`),
		"buckets off count":    measured(`{"200": 2}`, `{`+geometry+`, "ok": {"count": 2, "sum": 1000, "min": 500, "max": 500, "buckets": [[500, 1]]}, "errors": `+none+`}`),
		"buckets descending":   measured(`{"200": 2}`, `{`+geometry+`, "ok": {"count": 2, "sum": 1000, "min": 400, "max": 600, "buckets": [[600, 1], [400, 1]]}, "errors": `+none+`}`),
		"zero count bucket":    measured(`{"200": 1}`, `{`+geometry+`, "ok": {"count": 1, "sum": 500, "min": 500, "max": 500, "buckets": [[500, 1], [600, 0]]}, "errors": `+none+`}`),
		"value above highest":  measured(`{"200": 1}`, `{`+geometry+`, "ok": {"count": 1, "sum": 60000001, "min": 60000001, "max": 60000001, "buckets": [[60000001, 1]]}, "errors": `+none+`}`),
		"sum outside min..max": measured(`{"200": 1}`, `{`+geometry+`, "ok": {"count": 1, "sum": 900, "min": 500, "max": 500, "buckets": [[500, 1]]}, "errors": `+none+`}`),
		"empty with a min":     measured(`{}`, `{`+geometry+`, "ok": {"count": 0, "sum": 0, "min": 5, "max": 0, "buckets": []}, "errors": `+none+`}`),
		"negative code count":  measured(`{"200": -1}`, `{`+geometry+`, "ok": `+none+`, "errors": `+none+`}`),
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: Parse succeeded, want an error", name)
		}
	}
}

// echoServer starts fortio's echo server in process.
func echoServer(t testing.TB) string {
	t.Helper()
	_, addr := fhttp.ServeTCP("0", "/debug")
	if addr == nil {
		t.Fatal("start fortio echo server")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", addr.Port)
}

// TestLocalRun drives a real fortio echo server with real fortio clients: phases, merge and error accounting.
func TestLocalRun(t *testing.T) {
	url := echoServer(t)
	res, err := Local{}.Run(context.Background(), Spec{
		URL: url + "/echo?size=128", QPS: 200, Connections: 2, Duration: time.Second, WarmUp: 200 * time.Millisecond,
		CoolDown: 100 * time.Millisecond, Clients: 2, Headers: map[string]string{"X-Meshbench": "test"}, PayloadBytes: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 || res.Codes[200] != res.Requests || res.Latency.Count() != res.Requests || res.ErrorLatency.Count() != 0 {
		t.Fatalf("requests %d errors %d codes %v latencies %d+%d", res.Requests, res.Errors, res.Codes, res.Latency.Count(), res.ErrorLatency.Count())
	}
	if res.Connections != 4 || res.Sockets != 4 {
		t.Errorf("connections %d sockets %d, want 4 and 4 (keep-alive)", res.Connections, res.Sockets)
	}
	for _, c := range res.Clients {
		if len(c.Phases) != 3 || c.Phases[0].Name != PhaseWarmUp || c.Phases[1].Name != PhaseMeasured || c.Phases[2].Name != PhaseCoolDown {
			t.Errorf("client %s phases %+v", c.Client, c.Phases)
		}
		if c.RequestedQPS != 100 {
			t.Errorf("client requested %v qps, want the even split 100", c.RequestedQPS)
		}
		if c.Phases[0].End.After(c.Phases[1].Start) || c.Phases[1].End.After(c.Phases[2].Start) {
			t.Errorf("phases overlap: %+v", c.Phases)
		}
	}
	if d := res.End.Sub(res.Start); d <= 0 || d > time.Second+200*time.Millisecond {
		t.Errorf("window %s..%s (%s): want the measured phase of about 1s", res.Start, res.End, d)
	}
	prev := res.Latency.Min()
	for _, p := range percentiles() {
		v := res.Latency.Percentile(p)
		if v <= 0 || v < prev || v > res.Latency.Max() {
			t.Errorf("p%g = %s: want > 0, non-decreasing, within [min %s, max %s]", p, v, res.Latency.Min(), res.Latency.Max())
		}
		prev = v
	}

	bad, err := Local{}.Run(context.Background(), Spec{URL: url + "/echo?status=503", QPS: 100, Connections: 1, Duration: 300 * time.Millisecond, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	if bad.Requests == 0 || bad.Errors != bad.Requests || bad.Codes[503] != bad.Requests || bad.ErrorRate() != 100 ||
		bad.Latency.Count() != 0 || bad.ErrorLatency.Count() != bad.Requests {
		t.Errorf("503 run: requests %d errors %d codes %v latencies %d+%d", bad.Requests, bad.Errors, bad.Codes, bad.Latency.Count(), bad.ErrorLatency.Count())
	}
	for _, s := range bad.Samples(results.Sample{}) {
		if s.Metric == results.MetricLatency {
			t.Errorf("a run without 2xx answers has latency sample %s = %v: error latencies belong to %s", s.Stat, s.Value, results.MetricErrLatency)
		}
	}
}

// TestLocalRunTrafficShapes drives a real fortio echo server (it speaks h2c) with the load variants' settings and
// checks that each took effect: a socket per request without keep-alive, every response HTTP/2 with HTTP2 (and
// none without it), and no note blaming the server for the churn asked for.
func TestLocalRunTrafficShapes(t *testing.T) {
	url := echoServer(t)
	base := Spec{URL: url + "/echo?size=64", QPS: 100, Connections: 2, Duration: 500 * time.Millisecond, Clients: 1}
	for _, tc := range []struct {
		name       string
		noKeep, h2 bool
	}{
		{"keep-alive (spec.load's way)", false, false},
		{"a new connection per request", true, false},
		{"HTTP/2", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.NoKeepAlive, s.HTTP2 = tc.noKeep, tc.h2
			res, err := Local{}.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests < 20 || res.Errors != 0 {
				t.Fatalf("requests %d errors %d codes %v", res.Requests, res.Errors, res.Codes)
			}
			var h2 int64
			for _, c := range res.Clients { // the clients' records, which the variant's proof reads
				h2 += c.HTTP2Responses
				if c.NoKeepAlive != tc.noKeep {
					t.Errorf("client %s: noKeepAlive %v, want %v", c.Client, c.NoKeepAlive, tc.noKeep)
				}
			}
			if tc.noKeep {
				// fortio's warm-up request per connection opens sockets too: at least one socket per request.
				if res.Sockets < res.Requests {
					t.Errorf("no keep-alive: %d sockets for %d requests, want one per request", res.Sockets, res.Requests)
				}
			} else if res.Sockets > int64(res.Connections) {
				t.Errorf("keep-alive: %d sockets for %d connections", res.Sockets, res.Connections)
			}
			if slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "not kept alive") }) {
				t.Errorf("notes %q", res.Notes)
			}
			if want := map[bool]int64{true: res.Requests, false: 0}[tc.h2]; h2 < want || (!tc.h2 && h2 != 0) {
				t.Errorf("%d HTTP/2 responses for %d requests (h2 %v)", h2, res.Requests, tc.h2)
			}
		})
	}
}

func TestRunClientCancel(t *testing.T) {
	url := echoServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := RunClient(ctx, ClientSpec{URL: url + "/echo", QPS: 50, Connections: 1, Duration: time.Minute})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("err %v: want the context's error", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("cancel took %s", time.Since(start))
	}
}

// captureTestdata re-captures the parser's inputs from real fortio runs: two clients at once, as in a cluster.
func captureTestdata(t *testing.T) {
	t.Helper()
	url := echoServer(t)
	reps := make([]*Report, len(captures))
	errs := make([]error, len(captures))
	var wg sync.WaitGroup
	for i := range captures {
		wg.Go(func() {
			reps[i], errs[i] = RunClient(context.Background(), ClientSpec{URL: url + "/echo?size=128&status=503:5", QPS: 200, Connections: 2,
				Duration: time.Second, WarmUp: 300 * time.Millisecond, CoolDown: 100 * time.Millisecond, Jitter: true})
		})
	}
	wg.Wait()
	for i, rep := range reps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		rep.Client = fmt.Sprintf("meshbench-loadgen-%d", i)
		writeJSON(t, captures[i], rep)
	}
}

// writeJSON writes v as meshbench-agent load --json prints it: compact, one line.
func writeJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRunClientMaxQPS reports the in-process client's max rate against an in-process fortio echo server (both
// share the CPUs: see make bench-loadgen for the pinned comparison with wrk).
func BenchmarkRunClientMaxQPS(b *testing.B) {
	url := echoServer(b)
	var qps float64
	for b.Loop() {
		rep, err := RunClient(context.Background(), ClientSpec{URL: url + "/echo", QPS: MaxQPS, Connections: 8, Duration: 500 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		qps = rep.Phases[0].ActualQPS
	}
	b.ReportMetric(qps, "req/s")
}

// BenchmarkMergeHistograms merges 16 clients' histograms of 100k requests each (lognormal around 1 ms).
func BenchmarkMergeHistograms(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var hs []*Histogram
	for range 16 {
		r := newRecorder(nil)
		for range 100000 {
			r.service.record(micros(math.Exp(rng.NormFloat64())*1e-3), true)
		}
		hs = append(hs, r.Latencies().OK)
	}
	for b.Loop() {
		mergeHistograms(hs...)
	}
}

// BenchmarkRecorderReport is the per-request cost fortio's threads pay for the latency recording (8 goroutines).
func BenchmarkRecorderReport(b *testing.B) {
	r := newRecorder(nil)
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(5, 6))
		for pb.Next() {
			r.Report(context.Background(), 0, 0, time.Time{}, 0.02+rng.Float64()*0.01, true, "200")
		}
	})
}
