package nettool

import (
	"errors"
	"testing"
	"time"

	"github.com/meshbench/meshbench/scenario"
)

// Connection-setup failures (nothing measured, safe to retry) are typed where the captured tool output is parsed;
// every other failure is not.
func TestSetupFailure(t *testing.T) {
	t.Parallel()
	tcp := Spec{Test: scenario.CNITestTCP, Tool: ToolIperf3, Host: "h", Duration: 3 * time.Second}
	udp := Spec{Test: scenario.CNITestUDP, Tool: ToolIperf3, Host: "h", Duration: 3 * time.Second, Bitrate: "1G"}
	rr := Spec{Test: scenario.CNITestRR, Tool: ToolNetperf, Host: "h", Duration: 3 * time.Second}
	bcrr := Spec{Test: scenario.CNITestCRR, Tool: ToolBuiltin, Host: "h", Duration: 3 * time.Second}
	for _, tc := range []struct {
		fixture string
		spec    Spec
		setup   bool
	}{
		{"iperf3-error-busy.json", udp, true},
		{"iperf3-error-refused.json", tcp, true},
		{"builtin-crr-refused.json", bcrr, true},
		{"netperf-error-no-netserver.txt", rr, false}, // no netserver: retrying does not start one
		{"iperf3-udp-default-bitrate.json", udp, false},
		{"netperf-tcp_stream.csv", rr, false},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.spec, readFixture(t, tc.fixture))
			if err == nil {
				t.Fatal("Parse succeeded on a failure fixture")
			}
			var se *SetupError
			if got := errors.As(err, &se); got != tc.setup || IsSetupFailure(err) != tc.setup {
				t.Fatalf("setup failure = %v, want %v (err %v)", got, tc.setup, err)
			}
			if tc.setup && se.Tool != tc.spec.Tool {
				t.Errorf("SetupError.Tool = %s, want %s", se.Tool, tc.spec.Tool)
			}
		})
	}
	exit := errors.New("command terminated with exit code 1")
	if err := ClassifyStderr(ToolNetperf, []byte("send_omni: connect: No route to host\n"), exit); !IsSetupFailure(err) || !errors.Is(err, exit) {
		t.Errorf("ClassifyStderr(no route) = %v, want a SetupError wrapping the exec error", err)
	}
	if err := ClassifyStderr(ToolNetperf, []byte("netperf: invalid option -- 'Z'\n"), exit); IsSetupFailure(err) {
		t.Errorf("ClassifyStderr(usage error) = %v, want no SetupError", err)
	}
	if ClassifyStderr(ToolIperf3, []byte("server is busy"), nil) != nil {
		t.Error("ClassifyStderr of no error must be nil")
	}
}
