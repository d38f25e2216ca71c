package loadgen

import (
	"context"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/fnet"
	"fortio.org/log"

	"github.com/meshbench/meshbench/results"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		qps         float64
		connections int
		weights     []int
		wantQPS     []float64
		wantConns   []int
	}{
		{"one target takes all", 100, 4, []int{1}, []float64{100}, []int{4}},
		{"3:1 exact", 400, 8, []int{3, 1}, []float64{300, 100}, []int{6, 2}},
		{"3:1 rounded, sum kept", 400, 4, []int{3, 1}, []float64{300, 100}, []int{3, 1}},
		{"largest remainder gets the spare", 90, 5, []int{1, 1, 1}, []float64{30, 30, 30}, []int{2, 2, 1}},
		{"1:1:2 of 3", 100, 3, []int{1, 1, 2}, []float64{25, 25, 50}, []int{1, 1, 1}},
		{"small weight still gets one connection", 1000, 10, []int{98, 1, 1}, []float64{980, 10, 10}, []int{8, 1, 1}},
		{"fewer connections than targets: one each", 30, 2, []int{1, 1, 1}, []float64{10, 10, 10}, []int{1, 1, 1}},
		{"max: every target at max", 0, 4, []int{3, 1}, []float64{MaxQPS, MaxQPS}, []int{3, 1}},
		{"negative is max", -1, 2, []int{1, 1}, []float64{MaxQPS, MaxQPS}, []int{1, 1}},
		{"weight below 1 counts as 1", 20, 2, []int{0, 1}, []float64{10, 10}, []int{1, 1}},
		{"no targets", 10, 2, nil, []float64{}, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, c := split(tt.qps, tt.connections, tt.weights)
			if len(q) != len(tt.wantQPS) || len(c) != len(tt.wantConns) {
				t.Fatalf("split = %v, %v; want %v, %v", q, c, tt.wantQPS, tt.wantConns)
			}
			for i := range q {
				if math.Abs(q[i]-tt.wantQPS[i]) > 1e-9 {
					t.Errorf("qps = %v, want %v", q, tt.wantQPS)
				}
			}
			if !slices.Equal(c, tt.wantConns) {
				t.Errorf("connections = %v, want %v", c, tt.wantConns)
			}
			var sum int
			for _, n := range c {
				if n < 1 {
					t.Errorf("connections %v: every target needs one", c)
				}
				sum += n
			}
			if len(c) > 0 && sum != max(tt.connections, len(c)) {
				t.Errorf("connections %v sum to %d, want %d", c, sum, max(tt.connections, len(c)))
			}
		})
	}
}

// Every client runs every target with the target's share of the QPS (then split over the clients) and of its
// connections; target headers override the spec's; the agent's command line round-trips.
func TestClientSpecsTargets(t *testing.T) {
	t.Parallel()
	s := Spec{QPS: 800, Connections: 4, Duration: time.Minute, Clients: 2, Headers: map[string]string{"Cookie": "a=1", "X-Both": "spec"},
		Targets: []LoadTarget{
			{Name: "web", URL: "http://web:80/", Protocol: ProtocolHTTP, Weight: 3, Headers: map[string]string{"X-Both": "target"}},
			{Name: "rpc", URL: "rpc:8079", Protocol: ProtocolGRPC, Weight: 1},
		}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	got := s.ClientSpecs()
	if len(got) != 2 || len(got[0]) != 2 {
		t.Fatalf("got %d clients of %d targets, want 2 of 2", len(got), len(got[0]))
	}
	for _, perTarget := range got {
		web, rpc := perTarget[0], perTarget[1]
		if web.Target != "web" || web.QPS != 300 || web.Connections != 3 || !slices.Equal(web.Headers, []string{"Cookie: a=1", "X-Both: target"}) {
			t.Errorf("web = %+v", web)
		}
		if rpc.Target != "rpc" || rpc.Protocol != ProtocolGRPC || rpc.QPS != 100 || rpc.Connections != 1 || !slices.Equal(rpc.Headers, []string{"Cookie: a=1", "X-Both: spec"}) {
			t.Errorf("rpc = %+v", rpc)
		}
		for _, c := range perTarget {
			back, _, err := parseArgs(c.Args())
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("round trip of %q: %+v, %v; want %+v", c.Args(), back, err, c)
			}
		}
	}
	if want := "--target rpc --protocol grpc --url rpc:8079"; !strings.HasPrefix(strings.Join(got[0][1].Args(), " "), want) {
		t.Errorf("args %q, want them to start with %q", got[0][1].Args(), want)
	}
	if q := s.TargetQPS(); !slices.Equal(q, []float64{600, 200}) {
		t.Errorf("TargetQPS = %v", q)
	}
}

func TestSpecValidateTargets(t *testing.T) {
	t.Parallel()
	ok := LoadTarget{Name: "a", URL: "http://a/", Weight: 1}
	for name, s := range map[string]Spec{
		"url and targets":   {URL: "http://x/", Targets: []LoadTarget{ok}},
		"neither":           {},
		"weight 0":          {Targets: []LoadTarget{{Name: "a", URL: "http://a/"}}},
		"duplicate names":   {Targets: []LoadTarget{ok, ok}},
		"unknown protocol":  {Targets: []LoadTarget{{Name: "a", URL: "udp://a:1", Protocol: "udp", Weight: 1}}},
		"target url empty":  {Targets: []LoadTarget{{Name: "a", Weight: 1}}},
		"bad target header": {Targets: []LoadTarget{{Name: "a", URL: "http://a/", Weight: 1, Headers: map[string]string{"a:b": "c"}}}},
	} {
		s.Connections, s.Duration, s.Clients = 1, time.Second, 1
		if err := s.Validate(); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// fortioHTTP starts a fortio echo server on loopback and returns its base URL.
func fortioHTTP(t *testing.T) string {
	t.Helper()
	_, addr := fhttp.ServeTCP("127.0.0.1:0", "")
	if addr == nil {
		t.Fatal("start fortio echo server")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", addr.Port)
}

// Two real fortio servers, weights 3:1: the requests split 3:1, every target has its own labelled samples, and the
// run's percentiles are those of the merged histogram (not an average of the targets').
func TestLocalRunWeightedTargets(t *testing.T) {
	fast, slow := fortioHTTP(t), fortioHTTP(t)
	s := Spec{QPS: 400, Connections: 4, Duration: time.Second, Clients: 2, Headers: map[string]string{"X-Meshbench": "test"},
		Targets: []LoadTarget{
			{Name: "fast", URL: fast + "/echo", Protocol: ProtocolHTTP, Weight: 3},
			// fortio's echo server waits ?delay= before answering: the slow target's latencies are apart from the fast one's.
			{Name: "slow", URL: slow + "/echo?delay=4ms", Protocol: ProtocolHTTP, Weight: 1, Headers: map[string]string{"X-Target": "slow"}},
		}}
	res, err := Local{}.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clients) != 4 || len(res.Targets) != 2 {
		t.Fatalf("%d client runs, %d targets; want 4 (2 clients x 2 targets) and 2", len(res.Clients), len(res.Targets))
	}
	f, sl := res.Targets[0], res.Targets[1]
	if f.Name != "fast" || sl.Name != "slow" || f.Requests == 0 || sl.Requests == 0 {
		t.Fatalf("targets %s %d requests, %s %d requests", f.Name, f.Requests, sl.Name, sl.Requests)
	}
	if ratio := float64(f.Requests) / float64(sl.Requests); math.Abs(ratio-3) > 0.3 {
		t.Errorf("fast:slow requests %d:%d = %.2f, want 3 +- 0.3", f.Requests, sl.Requests, ratio)
	}
	if f.RequestedQPS != 300 || sl.RequestedQPS != 100 || res.RequestedQPS != 400 {
		t.Errorf("requested qps %v + %v of %v", f.RequestedQPS, sl.RequestedQPS, res.RequestedQPS)
	}
	if res.Requests != f.Requests+sl.Requests || res.Errors != 0 || math.Abs(res.ActualQPS-(f.ActualQPS+sl.ActualQPS)) > 1e-9 {
		t.Errorf("run %d requests %.1f qps; targets %d+%d, %.1f+%.1f", res.Requests, res.ActualQPS, f.Requests, sl.Requests, f.ActualQPS, sl.ActualQPS)
	}
	if res.Connections != 8 || f.Connections != 6 || sl.Connections != 2 {
		t.Errorf("connections %d = %d + %d, want 8 = 6 + 2", res.Connections, f.Connections, sl.Connections)
	}
	merged := mergeHistograms(f.Latency, sl.Latency)
	if res.Latency.Count() != merged.Count() {
		t.Errorf("run latency holds %d, targets %d", res.Latency.Count(), merged.Count())
	}
	for _, p := range percentiles() {
		if got, want := res.Latency.Percentile(p), merged.Percentile(p); got != want {
			t.Errorf("p%g = %s, want the merged histogram's %s", p, got, want)
		}
	}
	if sl.Latency.Percentile(50) < 4*time.Millisecond || f.Latency.Percentile(50) >= 4*time.Millisecond {
		t.Errorf("p50 fast %s slow %s: want the slow target's delay to show only in its own", f.Latency.Percentile(50), sl.Latency.Percentile(50))
	}
	// p90 of 3:1 fast:slow is in the slow part: at most the fast three quarters of the requests can be below the
	// slow target's 4 ms delay, however loaded the machine, and the histogram is exact to the microsecond there. An
	// average of the targets' p90s would be half way (below 4 ms on a quiet machine). (Comparing with that average
	// failed under load, when the fast target's tail reached the slow one's.)
	if got := res.Latency.Percentile(90); got < 4*time.Millisecond {
		t.Errorf("p90 %s is below the slow target's 4ms delay: it must come from the merged histogram", got)
	}
	byTarget := map[string]map[string]float64{}
	for _, smp := range res.Samples(results.Sample{}) {
		k := string(smp.Metric) + "/" + string(smp.Stat)
		name := smp.Labels[TargetLabel]
		if smp.Metric == results.MetricResponses {
			k += "/" + smp.Labels["code"]
		}
		if byTarget[name] == nil {
			byTarget[name] = map[string]float64{}
		}
		byTarget[name][k] = smp.Value
	}
	for name, want := range map[string]int64{"": res.Requests, "fast": f.Requests, "slow": sl.Requests} {
		if got := byTarget[name][string(results.MetricRequests)+"/count"]; got != float64(want) {
			t.Errorf("target %q: requests sample %v, want %d", name, got, want)
		}
		if got := byTarget[name][string(results.MetricResponses)+"/count/200"]; got != float64(want) {
			t.Errorf("target %q: 200 responses sample %v, want %d", name, got, want)
		}
	}
	if got, want := byTarget["slow"][string(results.MetricQPS)+"/target"], 100.0; got != want {
		t.Errorf("slow qps target sample %v, want %v", got, want)
	}
	if len(byTarget) != 3 {
		t.Errorf("samples labelled %v, want the run's and the two targets'", slices.Collect(maps.Keys(byTarget)))
	}
}

// gRPC targets use fortio's gRPC health check against a real fortio gRPC server (fgrpc.PingServer registers the
// standard health service; fortio.org/fortio v1.75.3 fgrpc/pingsrv.go), tcp targets fortio's echo client against its
// echo server (fnet.TCPEchoServer, fnet/network.go): successful calls count as 200, failures as -1.
func TestRunClientGRPCAndTCP(t *testing.T) {
	log.SetLogLevelQuiet(log.Critical) // fortio logs every failed call of the closed-port runs
	t.Cleanup(func() { log.SetLogLevelQuiet(log.Warning) })
	grpcAddr := fgrpc.PingServer("127.0.0.1:0", "", 0, &fhttp.TLSOptions{})
	tcpAddr := fnet.TCPEchoServer("meshbench-test", "127.0.0.1:0")
	if grpcAddr == nil || tcpAddr == nil {
		t.Fatal("start fortio servers")
	}
	tests := []struct {
		name, protocol, url string
		payload             int
	}{
		{"grpc health", ProtocolGRPC, grpcAddr.String(), 0},
		{"grpc with scheme", ProtocolGRPC, "grpc://" + grpcAddr.String(), 0},
		{"tcp echo", ProtocolTCP, "tcp://" + tcpAddr.String(), 0},
		{"tcp echo payload", ProtocolTCP, "tcp://" + tcpAddr.String(), 512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := RunClient(context.Background(), ClientSpec{Target: "t", Protocol: tt.protocol, URL: tt.url, QPS: 100,
				Connections: 2, Duration: 300 * time.Millisecond, PayloadBytes: tt.payload, Headers: []string{"X-Meshbench: test"}})
			if err != nil {
				t.Fatal(err)
			}
			m := rep.Measured
			if rep.Target != "t" || rep.Protocol != tt.protocol || m == nil || m.Codes[200] == 0 || m.Codes[-1] != 0 ||
				m.Latency.OK.Count() != m.Codes[200] || m.Latency.Errors.Count() != 0 || m.Connections != 2 || m.Sockets != 2 {
				t.Fatalf("report %+v measured %+v", rep, m)
			}
		})
	}
	// A closed port: every call fails, and is counted and timed as an error (not an abort).
	for _, p := range []string{ProtocolGRPC, ProtocolTCP} {
		url := "127.0.0.1:1"
		if p == ProtocolTCP {
			url = "tcp://" + url
		}
		rep, err := RunClient(context.Background(), ClientSpec{Protocol: p, URL: url, QPS: 50, Connections: 1, Duration: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s against a closed port: %v (AllowInitialErrors: failures are measured, not fatal)", p, err)
		}
		if m := rep.Measured; m.Codes[200] != 0 || m.Codes[-1] == 0 || m.Latency.Errors.Count() != m.Codes[-1] {
			t.Errorf("%s against a closed port: codes %v", p, m.Codes)
		}
	}
}
