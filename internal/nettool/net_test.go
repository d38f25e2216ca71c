package nettool

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	"github.com/meshbench/meshbench/scenario"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"iperf3 tcp defaults", Spec{Test: scenario.CNITestTCP, Tool: ToolIperf3, Host: "10.244.1.7", Duration: 10 * time.Second, Omit: time.Second},
			"iperf3 -J -c 10.244.1.7 -p 5201 -t 10 -O 1 -P 1"},
		{"iperf3 tcp streams, port, server output", Spec{Test: scenario.CNITestTCP, Tool: ToolIperf3, Host: "10.96.0.20", Port: 5301,
			Duration: 30 * time.Second, Streams: 4, ServerOutput: true},
			"iperf3 -J -c 10.96.0.20 -p 5301 -t 30 -P 4 --get-server-output"},
		{"iperf3 udp always has -b and never -O", Spec{Test: scenario.CNITestUDP, Tool: ToolIperf3, Host: "10.244.1.7", Duration: 10 * time.Second,
			Omit: time.Second, Bitrate: "1G"},
			"iperf3 -J -c 10.244.1.7 -p 5201 -t 10 -u -b 1G"},
		{"iperf3 udp unlimited with packet size", Spec{Test: scenario.CNITestUDP, Tool: ToolIperf3, Host: "h", Duration: 5 * time.Second,
			Bitrate: "0", PacketBytes: 1400},
			"iperf3 -J -c h -p 5201 -t 5 -u -b 0 -l 1400"},
		{"netperf rr", Spec{Test: scenario.CNITestRR, Tool: ToolNetperf, Host: "10.244.1.7", Duration: 10 * time.Second},
			"netperf -H 10.244.1.7 -p 4444 -t TCP_RR -l 10 -- -r 100,100 -o " + strings.Join(netperfSelectors, ",")},
		{"netperf crr through a service pins the remote data port", Spec{Test: scenario.CNITestCRR, Tool: ToolNetperf, Host: "10.96.3.4",
			Duration: 10 * time.Second, RequestBytes: 1, ResponseBytes: 1024, DataPort: 4445},
			"netperf -H 10.96.3.4 -p 4444 -t TCP_CRR -l 10 -- -r 1,1024 -o " + strings.Join(netperfSelectors, ",") + " -P ,4445"},
		{"builtin rr", Spec{Test: scenario.CNITestRR, Tool: ToolBuiltin, Host: "10.244.1.7", Duration: 10 * time.Second},
			"meshbench-agent rr --target 10.244.1.7:8078 --duration 10s --connections 1 --request-bytes 100 --json"},
		{"builtin crr with a local port range", Spec{Test: scenario.CNITestCRR, Tool: ToolBuiltin, Host: "10.96.0.9", Duration: 10 * time.Second, LocalPorts: "49000-64999"},
			"meshbench-agent crr --target 10.96.0.9:8078 --duration 10s --connections 1 --request-bytes 100 --json --local-ports 49000-64999"},
		{"builtin crr ipv6", Spec{Test: scenario.CNITestCRR, Tool: ToolBuiltin, Host: "fd00::7", Port: 9000, Duration: 2 * time.Second,
			Connections: 2, RequestBytes: 64, ResponseBytes: 64},
			"meshbench-agent crr --target [fd00::7]:9000 --duration 2s --connections 2 --request-bytes 64 --json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.spec.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := strings.Join(Args(tt.spec), " "); got != tt.want {
				t.Errorf("Args =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Spec{Test: scenario.CNITestUDP, Tool: ToolIperf3, Host: "h", Duration: 10 * time.Second, Bitrate: "1G"}
	tests := []struct {
		name    string
		mutate  func(*Spec)
		wantErr []string
	}{
		{"valid", func(*Spec) {}, nil},
		{"udp without bitrate", func(s *Spec) { s.Bitrate = "" }, []string{"udp bitrate", "1 Mibit/s default"}},
		{"bad bitrate", func(s *Spec) { s.Bitrate = "1e9" }, []string{"K/M/G/T"}},
		{"wrong tool", func(s *Spec) { s.Tool = ToolNetperf }, []string{"needs tool iperf3"}},
		{"everything wrong at once", func(s *Spec) {
			s.Host, s.Duration, s.Omit, s.Streams, s.Port = "", 1500*time.Millisecond, -time.Second, 200, 70000
		}, []string{"host", "duration", "omit", "streams", "port 70000"}},
		{"builtin asymmetric sizes", func(s *Spec) {
			s.Test, s.Tool, s.RequestBytes, s.ResponseBytes = scenario.CNITestRR, ToolBuiltin, 1, 100
		}, []string{"echo server"}},
		{"unknown test", func(s *Spec) { s.Test = "sctp" }, []string{`unknown test "sctp"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ok
			tt.mutate(&s)
			err := s.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseBitrate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"0": 0, "1G": 1e9, "500M": 5e8, "1.5g": 1.5e9, "100k": 1e5, "1048576": 1 << 20, " 2G ": 2e9} {
		if got, err := parseBitrate(in); err != nil || got != want {
			t.Errorf("ParseBitrate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1G", "1e9", "NaN", "Inf", "0x10", "1GG", "1,5G"} {
		if _, err := parseBitrate(in); err == nil {
			t.Errorf("ParseBitrate(%q): no error", in)
		}
	}
}

// TestParseFixtures parses every captured (iperf3, builtin) and hand-written (netperf) fixture and compares the
// Result with its golden file; failures must be refused with a useful reason.
func TestParseFixtures(t *testing.T) {
	t.Parallel()
	tcp := Spec{Test: scenario.CNITestTCP, Tool: ToolIperf3, Host: "h", Duration: 3 * time.Second}
	udp := func(b string) Spec {
		return Spec{Test: scenario.CNITestUDP, Tool: ToolIperf3, Host: "h", Duration: 3 * time.Second, Bitrate: b}
	}
	rr := Spec{Test: scenario.CNITestRR, Tool: ToolNetperf, Host: "h", Duration: 10 * time.Second}
	crr := Spec{Test: scenario.CNITestCRR, Tool: ToolNetperf, Host: "h", Duration: 10 * time.Second}
	brr := Spec{Test: scenario.CNITestRR, Tool: ToolBuiltin, Host: "h", Duration: 3 * time.Second}
	bcrr := Spec{Test: scenario.CNITestCRR, Tool: ToolBuiltin, Host: "h", Duration: 3 * time.Second}
	p4 := tcp
	p4.Streams = 4
	tests := []struct {
		fixture string
		spec    Spec
		wantErr string // "" = must parse and match golden/<fixture>.json
	}{
		{"iperf3-tcp-p1.json", tcp, ""},
		{"iperf3-tcp-p4.json", p4, ""},
		{"iperf3-tcp-p4.json", tcp, "4 streams, but 1 were asked"},
		{"iperf3-tcp-clusterip.json", tcp, ""},
		{"iperf3-tcp-clusterip-servertext.json", tcp, ""},
		{"iperf3-udp-1g.json", udp("1G"), ""},
		{"iperf3-udp-1g-l1400.json", udp("1G"), ""},
		{"iperf3-udp-clusterip.json", udp("500M"), ""},
		{"iperf3-udp-1g-omit-bug.json", udp("1G"), ""},
		{"iperf3-udp-1g.json", udp("500M"), "target_bitrate is 1000000000 bit/s, but 500000000"},
		{"iperf3-udp-default-bitrate.json", udp("1G"), "1 Mibit/s default"},
		{"iperf3-udp-default-bitrate.json", udp("1048576"), ""}, // asked for exactly that: a (tiny) measurement
		{"iperf3-udp-1g.json", tcp, `ran "UDP", but TCP was asked`},
		{"iperf3-error-refused.json", tcp, "iperf3: unable to connect to server: Connection refused"},
		{"iperf3-error-busy.json", udp("1G"), "iperf3: the server is busy"},
		{"netperf-tcp_rr.csv", rr, ""},
		{"netperf-tcp_crr.csv", crr, ""},
		{"netperf-tcp_rr.keyval", rr, ""},
		{"netperf-error-no-netserver.txt", rr, "no netperf omni result"},
		{"netperf-tcp_stream.csv", rr, "not a request/response test"},
		{"builtin-rr.json", brr, ""},
		{"builtin-rr-c4.json", brr, ""},
		{"builtin-crr.json", bcrr, ""},
		{"builtin-crr.json", brr, `ran "TCP_CRR", but TCP_RR was asked`},
		{"builtin-crr-refused.json", bcrr, "no transaction completed (63917 errors: connect: connection refused: 63917)"},
		{"iperf3-tcp-p1.json", brr, `tool is "", not "builtin-fortio"`},
		{"netperf-tcp_rr.csv", brr, "not meshbench-agent JSON"},
	}
	for _, tt := range tests {
		name := tt.fixture + "/" + string(tt.spec.Tool) + "-" + string(tt.spec.Test)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.spec, readFixture(t, tt.fixture))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(tt.fixture, ".json")+".json")
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			if goldenfile.Update() {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("Parse result differs from %s (run with -update if intended):\n%s", golden, b)
			}
		})
	}
}

// TestParseFacts pins the numbers that matter, independent of the golden files.
func TestParseFacts(t *testing.T) {
	t.Parallel()
	t.Run("tcp goodput is sum_received, not sum_sent", func(t *testing.T) {
		t.Parallel()
		r, err := parseIperf3TCP(readFixture(t, "iperf3-tcp-p1.json"), 1)
		if err != nil {
			t.Fatal(err)
		}
		var d iperf3Doc
		_ = json.Unmarshal(readFixture(t, "iperf3-tcp-p1.json"), &d)
		if r.BitsPerSecond != d.End.SumReceived.BitsPerSecond || r.BitsPerSecond == d.End.SumSent.BitsPerSecond {
			t.Errorf("BitsPerSecond %v, want sum_received %v (sum_sent %v)", r.BitsPerSecond, d.End.SumReceived.BitsPerSecond, d.End.SumSent.BitsPerSecond)
		}
		if r.gbps() < 1 || r.MeanRTTMicros <= 0 || r.CPUHostPercent <= 0 || r.Version != "iperf 3.12" {
			t.Errorf("implausible: %+v", r)
		}
	})
	t.Run("udp delivered rate and loss come from the receiver", func(t *testing.T) {
		t.Parallel()
		r, err := parseIperf3UDP(readFixture(t, "iperf3-udp-1g.json"), 1e9)
		if err != nil {
			t.Fatal(err)
		}
		if r.BitsPerSecond >= r.SenderBitsPerSecond || r.LossPercent <= 0 {
			t.Errorf("delivered %v should be below sent %v with loss %v", r.BitsPerSecond, r.SenderBitsPerSecond, r.LossPercent)
		}
		if len(r.Warnings) != 0 {
			t.Errorf("unexpected warnings %q", r.Warnings)
		}
	})
	t.Run("iperf3 3.12 omit loss bug is corrected from byte counters", func(t *testing.T) {
		t.Parallel()
		raw := readFixture(t, "iperf3-udp-1g-omit-bug.json")
		r, err := parseIperf3UDP(raw, 1e9)
		if err != nil {
			t.Fatal(err)
		}
		// The client's lost_percent is inflated; the server's own accounting (server_output_json) is right.
		var d struct {
			End struct {
				SumReceived iperf3Sum `json:"sum_received"`
			} `json:"end"`
			Server struct {
				End struct {
					SumReceived iperf3Sum `json:"sum_received"`
				} `json:"end"`
			} `json:"server_output_json"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		client, server := d.End.SumReceived.LostPercent, d.Server.End.SumReceived.LostPercent
		if client-server < maxLossDisagreement {
			t.Fatalf("fixture no longer shows the bug: client %.2f%% server %.2f%%", client, server)
		}
		if len(r.Warnings) != 1 || r.LossPercent < server-0.5 || r.LossPercent > server+0.5 {
			t.Errorf("loss %v (server says %v) warnings %q", r.LossPercent, server, r.Warnings)
		}
	})
	t.Run("clusterip: client dialled the VIP, the backend answered", func(t *testing.T) {
		t.Parallel()
		for _, f := range []string{"iperf3-tcp-clusterip.json", "iperf3-tcp-clusterip-servertext.json"} {
			r, err := parseIperf3TCP(readFixture(t, f), 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Connected) != 1 || r.Connected[0].RemoteHost != "10.254.78.10" {
				t.Errorf("%s client view %+v", f, r.Connected)
			}
			if len(r.ServerConnected) != 1 || r.ServerConnected[0].LocalHost != "10.254.77.2" || r.ServerConnected[0].RemoteHost != "10.254.77.1" {
				t.Errorf("%s server view %+v", f, r.ServerConnected)
			}
		}
	})
	t.Run("netperf latency is converted to ms, p99.9 absent", func(t *testing.T) {
		t.Parallel()
		r, err := parseNetperf(readFixture(t, "netperf-tcp_rr.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if r.TransactionsPerSecond != 21380.13 || *r.Latency.Mean != 0.04672 || *r.Latency.P99 != 0.089 || r.Latency.P999 != nil {
			t.Errorf("got %+v %+v", r, r.Latency)
		}
		if r.Transactions != 213801 || r.RequestBytes != 100 {
			t.Errorf("transactions %d request %d", r.Transactions, r.RequestBytes)
		}
		if names := statNames(r.Latency.Stats()); names != "avg,min,max,p50,p90,p99" {
			t.Errorf("stats %s", names)
		}
	})
	t.Run("netperf without latency statistics", func(t *testing.T) {
		t.Parallel()
		r, err := parseNetperf([]byte("Throughput,Throughput Units,50th Percentile Latency Microseconds\n100.5,Trans/s,-1\n"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Latency != nil || len(r.Warnings) != 1 {
			t.Errorf("latency %+v warnings %q", r.Latency, r.Warnings)
		}
	})
	t.Run("builtin", func(t *testing.T) {
		t.Parallel()
		r, err := ParseBuiltin(readFixture(t, "builtin-crr.json"), scenario.CNITestCRR)
		if err != nil {
			t.Fatal(err)
		}
		if r.Tool != ToolBuiltin || r.Sockets != r.Transactions || r.Latency.P999 == nil || *r.Latency.P50 <= 0 {
			t.Errorf("got %+v", r)
		}
	})
}

func statNames(vs []NamedValue) string {
	var n []string
	for _, v := range vs {
		n = append(n, v.Name)
	}
	return strings.Join(n, ",")
}

func TestParseRejectsGarbage(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Test: scenario.CNITestTCP, Tool: ToolIperf3, Host: "h", Duration: time.Second},
		{Test: scenario.CNITestUDP, Tool: ToolIperf3, Host: "h", Duration: time.Second, Bitrate: "1G"},
		{Test: scenario.CNITestRR, Tool: ToolNetperf, Host: "h", Duration: time.Second},
		{Test: scenario.CNITestCRR, Tool: ToolBuiltin, Host: "h", Duration: time.Second},
	}
	inputs := []string{"", "{}", "null", `{"start":{},"end":{}}`, "Throughput\n", "Throughput\nNaN\n", "THROUGHPUT=-5\n",
		`{"tool":"builtin-fortio","test":"TCP_CRR","transactions":1,"transactionsPerSecond":1,"seconds":-1}`,
		`{"start":{"test_start":{"protocol":"TCP","num_streams":1}},"end":{"sum_sent":{"bytes":1},"sum_received":{"bytes":0,"seconds":1}}}`}
	for _, s := range specs {
		for _, in := range inputs {
			if r, err := Parse(s, []byte(in)); err == nil {
				t.Errorf("%s/%s accepted %q: %+v", s.Tool, s.Test, in, r)
			}
		}
	}
	if _, err := Parse(Spec{Test: scenario.CNITestTCP, Tool: ToolNetperf}, []byte("x")); err == nil {
		t.Error("tcp with netperf accepted")
	}
}

func TestLatencyStatsOrder(t *testing.T) {
	t.Parallel()
	l := &Latency{P999: ptr(4), Mean: ptr(1), P50: ptr(2)}
	got := l.Stats()
	want := []NamedValue{{"avg", 1}, {"p50", 2}, {"p99.9", 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats = %v, want %v", got, want)
	}
	if (*Latency)(nil).Stats() != nil {
		t.Error("nil latency has stats")
	}
}
