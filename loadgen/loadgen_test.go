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
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/stats"
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
			WarmUp: 30 * time.Second, CoolDown: 5 * time.Second, PayloadBytes: 1024, Jitter: true, Uniform: true, Clients: 1,
			Headers: map[string]string{"Cookie": "token=abc:def", "X-B": "2", "Host": "frontend"},
		}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			cs := tt.spec.ClientSpecs()
			if len(cs) != tt.spec.Clients {
				t.Fatalf("got %d client specs, want %d", len(cs), tt.spec.Clients)
			}
			var sum float64
			for _, c := range cs {
				if math.Abs(c.QPS-tt.wantQPS) > 1e-9 {
					t.Errorf("client QPS = %v, want %v", c.QPS, tt.wantQPS)
				}
				sum += c.QPS
				got, jsonOut, err := ParseArgs(c.Args())
				if err != nil {
					t.Fatalf("ParseArgs(%q): %v", c.Args(), err)
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
	} {
		if _, _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) succeeded, want an error", args)
		}
	}
	c, _, err := ParseArgs([]string{"--url", "http://a/", "--qps", "max"})
	if err != nil || c.QPS != MaxQPS {
		t.Errorf("--qps max: got %v, %v; want %v", c.QPS, err, MaxQPS)
	}
}

// histogramOf records values the way fortio's runner does.
func histogramOf(values []float64) *stats.Histogram {
	h := stats.NewHistogram(0, Resolution)
	for _, v := range values {
		h.Record(v)
	}
	return h
}

func TestMergeHistogramsEqualsOneHistogramOfAllValues(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		clients int
		gen     func(i int) float64
	}{
		{"sub-ms lognormal", 3, func(int) float64 { return math.Exp(rng.NormFloat64()*0.6) * 2e-4 }},
		{"one slow client", 2, func(i int) float64 { return float64(1+i%2*9) * (1e-3 + rng.Float64()*1e-3) }},
		{"spans every bucket range", 4, func(int) float64 { return math.Pow(10, -5.5+rng.Float64()*6) }},
		{"single value per client", 3, func(i int) float64 { return 0.00123 * float64(i+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all []float64
			parts := make([][]float64, tc.clients)
			for c := range parts {
				n := 1 + rng.IntN(5000)
				if tc.name == "single value per client" {
					n = 1
				}
				for range n {
					v := tc.gen(c)
					parts[c] = append(parts[c], v)
					all = append(all, v)
				}
			}
			var hs []*stats.HistogramData
			for _, p := range parts {
				hs = append(hs, histogramOf(p).Export())
			}
			got, err := MergeHistograms(hs, Percentiles())
			if err != nil {
				t.Fatal(err)
			}
			want := histogramOf(all).Export().CalcPercentiles(Percentiles())
			if got.Count != want.Count || got.Min != want.Min || got.Max != want.Max {
				t.Errorf("count/min/max = %d/%g/%g, want %d/%g/%g", got.Count, got.Min, got.Max, want.Count, want.Min, want.Max)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"sum", got.Sum, want.Sum}, {"avg", got.Avg, want.Avg}, {"stddev", got.StdDev, want.StdDev}} {
				if !near(f.got, f.want, 1e-9) {
					t.Errorf("%s = %.15g, want %.15g", f.name, f.got, f.want)
				}
			}
			if len(got.Data) != len(want.Data) {
				t.Fatalf("%d buckets, want %d", len(got.Data), len(want.Data))
			}
			for i := range got.Data {
				g, w := got.Data[i], want.Data[i]
				if g.Count != w.Count || !near(g.Start, w.Start, 1e-12) || !near(g.End, w.End, 1e-12) || !near(g.Percent, w.Percent, 1e-9) {
					t.Errorf("bucket %d = %+v, want %+v", i, g, w)
				}
			}
			for i, p := range want.Percentiles {
				if !near(got.Percentiles[i].Value, p.Value, 1e-12) {
					t.Errorf("p%g = %g, want %g", p.Percentile, got.Percentiles[i].Value, p.Value)
				}
			}
		})
	}
}

func near(a, b, rel float64) bool {
	return a == b || math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func TestMergeHistogramsRejectsBadInput(t *testing.T) {
	t.Parallel()
	h := histogramOf([]float64{1e-3, 2e-3}).Export()
	h.Count = 3
	if _, err := MergeHistograms([]*stats.HistogramData{h}, Percentiles()); err == nil {
		t.Error("a histogram whose buckets do not add up to Count must be refused")
	}
	empty, err := MergeHistograms([]*stats.HistogramData{nil, {}}, Percentiles())
	if err != nil || empty.Count != 0 {
		t.Errorf("empty inputs: %+v, %v", empty, err)
	}
}

// Captured output of real fortio runs (regenerate with -update): a meshbench-agent Report per client and fortio's
// own JSON result.
var captures = []string{"captured-report-0.json", "captured-report-1.json", "captured-fortio.json"}

func TestParseMergeSamplesGolden(t *testing.T) {
	if goldenfile.Update() {
		captureTestdata(t)
	}
	var clients []ClientResult
	for _, name := range captures[:2] {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		cr, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cr.Requests() == 0 || cr.Latency.Count != cr.Requests() || !cr.End.After(cr.Start) || len(cr.Phases) != 3 {
			t.Errorf("%s: implausible parse: %d requests, %d latencies, %s..%s, %d phases", name, cr.Requests(), cr.Latency.Count, cr.Start, cr.End, len(cr.Phases))
		}
		clients = append(clients, cr)
	}
	res, err := Merge(400, clients)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != clients[0].Requests()+clients[1].Requests() || res.Latency.Count != res.Requests {
		t.Errorf("merged %d requests and %d latencies, want %d", res.Requests, res.Latency.Count, clients[0].Requests()+clients[1].Requests())
	}
	if !near(res.ActualQPS, clients[0].ActualQPS+clients[1].ActualQPS, 1e-12) {
		t.Errorf("merged QPS %v", res.ActualQPS)
	}
	base := results.Sample{RunID: "r1", CaseID: "single.none.q400.r1", Mode: "none", Topology: "single", Load: "400", Repetition: 1}
	golden(t, "samples-merged.golden.json", res.Samples(base))

	b, err := os.ReadFile(filepath.Join("testdata", captures[2]))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	one, err := Merge(plain.RequestedQPS, []ClientResult{plain})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "samples-fortio.golden.json", one.Samples(base))
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
	for name, in := range map[string]string{
		"not json":       `fortio: connection refused`,
		"error reply":    `{"error": true, "message": "init error", "exception": "dial tcp: refused"}`,
		"no histogram":   `{"RunType": "HTTP", "RetCodes": {"200": 1}}`,
		"tcp run":        `{"RunType": "TCP", "DurationHistogram": {"Count": 0}}`,
		"report no body": `{"phases": [], "fortio": null}`,
		"bad code":       `{"RunType": "HTTP", "DurationHistogram": {"Count": 0}, "RetCodes": {"OK": 1}}`,
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
	if res.Requests == 0 || res.Errors != 0 || res.Codes[200] != res.Requests || res.Latency.Count != res.Requests {
		t.Fatalf("requests %d errors %d codes %v latencies %d", res.Requests, res.Errors, res.Codes, res.Latency.Count)
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
	prev := 0.0
	for _, p := range Percentiles() {
		v, ok := Percentile(res.Latency, p)
		if !ok || v <= 0 || v < prev {
			t.Errorf("p%g = %g (ok %v): want > 0 and non-decreasing", p, v, ok)
		}
		prev = v
	}

	bad, err := Local{}.Run(context.Background(), Spec{URL: url + "/echo?status=503", QPS: 100, Connections: 1, Duration: 300 * time.Millisecond, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	if bad.Requests == 0 || bad.Errors != bad.Requests || bad.Codes[503] != bad.Requests || bad.ErrorRate() != 100 {
		t.Errorf("503 run: requests %d errors %d codes %v", bad.Requests, bad.Errors, bad.Codes)
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

// captureTestdata re-captures the parser's inputs from real fortio runs.
func captureTestdata(t *testing.T) {
	t.Helper()
	url := echoServer(t)
	for i := range 2 {
		rep, err := RunClient(context.Background(), ClientSpec{URL: url + "/echo?size=128", QPS: 200, Connections: 2,
			Duration: time.Second, WarmUp: 300 * time.Millisecond, CoolDown: 100 * time.Millisecond, Jitter: true})
		if err != nil {
			t.Fatal(err)
		}
		rep.Client = fmt.Sprintf("meshbench-loadgen-%d", i)
		writeJSON(t, captures[i], rep)
	}
	rep, err := RunClient(context.Background(), ClientSpec{URL: url + "/echo", QPS: MaxQPS, Connections: 4, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var raw any
	if err := json.Unmarshal(rep.Fortio, &raw); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, captures[2], raw)
}

func writeJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
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

// BenchmarkMergeHistograms merges 16 clients' histograms of 100k requests each.
func BenchmarkMergeHistograms(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var hs []*stats.HistogramData
	for range 16 {
		h := stats.NewHistogram(0, Resolution)
		for range 100000 {
			h.Record(math.Exp(rng.NormFloat64()) * 1e-3)
		}
		hs = append(hs, h.Export())
	}
	for b.Loop() {
		if _, err := MergeHistograms(hs, Percentiles()); err != nil {
			b.Fatal(err)
		}
	}
}
