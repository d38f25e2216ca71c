package cni_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// A sample whose connection was never set up (iperf3's captured "server is busy" and "unable to connect" reports,
// internal/nettool/testdata/iperf3-error-*.json, typed there as *nettool.SetupError) is retried after a 2 s pause, up
// to cni.ConnectRetries attempts; a measurement failure is not retried.
func TestSampleRetriesOnlySetupFailures(t *testing.T) {
	t.Parallel()
	const (
		busy    = `{"start":{"connected":[],"version":"iperf 3.12"},"intervals":[],"end":{},"error":"the server is busy running a test. try again later"}`
		refused = `{"start":{"connected":[],"version":"iperf 3.12"},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}`
		other   = `{"start":{"connected":[],"version":"iperf 3.12"},"intervals":[],"end":{},"error":"unable to set TCP/SCTP MSS: Invalid argument"}`
	)
	tests := []struct {
		name     string
		failures []string // the outputs of the first iperf3 execs, then success
		execs    int
		ok       bool
	}{
		{"busy once then measured", []string{busy}, 2, true},
		{"refused twice then measured", []string{refused, refused}, 3, true},
		{"refused every attempt", []string{refused, refused, refused, refused}, cni.ConnectRetries, false},
		{"not a setup failure", []string{other}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			n := 0
			ex := &fakeExec{fail: func(_ string, cmd []string) []byte {
				if cmd[0] != "iperf3" {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				n++
				if n <= len(tc.failures) {
					return []byte(tc.failures[n-1])
				}
				return nil
			}}
			var pauses []time.Duration
			clk := newFakeClock()
			clk.onTimer = func(d time.Duration) bool { pauses = append(pauses, d); return true }
			cfg := testConfig(t)
			cfg.CNI.Tests, cfg.CNI.Paths, cfg.CNI.Samples = []scenario.CNITest{scenario.CNITestTCP}, []scenario.CNIPath{scenario.CNIPathSameNode}, 1
			st := &fakeStore{}
			_, err := Run(context.Background(), cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: ex, Store: st, Clock: clk})
			if n != tc.execs {
				t.Errorf("%d iperf3 execs, want %d", n, tc.execs)
			}
			if want := tc.execs - 1; len(pauses) != want {
				t.Errorf("pauses %v, want %d retry pauses", pauses, want)
			}
			for _, p := range pauses {
				if p != 2*time.Second {
					t.Errorf("pause %v, want 2s", p)
				}
			}
			var failed *cni.CasesFailedError
			if tc.ok != (err == nil) || (!tc.ok && !errors.As(err, &failed)) {
				t.Fatalf("Run = %v, want ok=%v", err, tc.ok)
			}
			var c *results.CaseResult
			for i := range st.cases {
				if st.cases[i].CaseID != "idle" && st.cases[i].Status != results.StatusSkipped {
					c = &st.cases[i]
				}
			}
			if c == nil {
				t.Fatalf("no case recorded: %+v", st.cases)
			}
			if tc.ok != (c.Status == results.StatusOK) {
				t.Errorf("case %s: %s %q", c.CaseID, c.Status, c.Reason)
			}
			if !tc.ok && !strings.Contains(c.Reason, "iperf3: ") {
				t.Errorf("case %s: reason %q, want the tool's own report", c.CaseID, c.Reason)
			}
		})
	}
}
