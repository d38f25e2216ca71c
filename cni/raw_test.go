package cni_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// TestRunRawFilesAreWhatTheirNamesSay runs the bench with one sample that fails with plain text and one that Ctrl-C
// cuts short: every .json under raw/ parses, the plain-text failure is an .err.txt the case's facts point at, and
// the interrupted sample leaves no file at all.
func TestRunRawFilesAreWhatTheirNamesSay(t *testing.T) {
	t.Parallel()
	ex := &fakeExec{fail: func(_ string, cmd []string) []byte {
		if cmd[0] == "iperf3" && !slices.Contains(cmd, "-u") {
			return []byte("iperf3: error - the server is busy running a test. try again later\n")
		}
		return nil
	}}
	started := make(chan struct{})
	ex.started = started
	ex.block = func(_ string, cmd []string) bool { return cmd[0] == "iperf3" && slices.Contains(cmd, "-u") }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-started; cancel() }()
	cfg := testConfig(t)
	cfg.CNI.Paths = []scenario.CNIPath{scenario.CNIPathSameNode}
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP, scenario.CNITestUDP}
	cfg.CNI.Samples = 1
	st := &fakeStore{}
	_, err := Run(ctx, cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: ex, Store: st, Clock: newFakeClock()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	got := cni.RawFiles(t, cfg.RunDir)
	if want := []string{"same-node-tcp-1.err.txt"}; !slices.Equal(got, want) {
		t.Fatalf("raw/ holds %q, want %q (nothing for the interrupted udp sample)", got, want)
	}
	b, err := os.ReadFile(filepath.Join(cfg.RunDir, "raw", got[0]))
	if err != nil || !strings.HasPrefix(string(b), "exec failed: ") || !strings.Contains(string(b), "--- stdout ---\niperf3: error - the server is busy") {
		t.Errorf("raw/%s = %q (%v)", got[0], b, err)
	}
	var tcp map[results.FactKey]string
	for _, c := range st.cases {
		if c.CaseID == "same-node/tcp" {
			tcp = c.Facts
		}
	}
	if tcp["raw.1"] != filepath.Join("raw", "same-node-tcp-1.err.txt") {
		t.Errorf("same-node/tcp facts raw.1 = %q", tcp["raw.1"])
	}
}

// refusedOnce fails the first iperf3 exec as an exec that could not reach its pod (nothing printed, retried), then
// answers like fakeExec.
type refusedOnce struct {
	*fakeExec
	mu    sync.Mutex
	calls int
}

func (r *refusedOnce) Exec(ctx context.Context, ns, pod, container string, cmd []string, in io.Reader) ([]byte, []byte, error) {
	if cmd[0] == "iperf3" && !slices.Equal(cmd, nettool.Iperf3VersionArgs) {
		r.mu.Lock()
		r.calls++
		first := r.calls == 1
		r.mu.Unlock()
		if first {
			return nil, nil, fmt.Errorf("dial tcp 10.0.0.1:10250: %w", syscall.ECONNREFUSED)
		}
	}
	return r.fakeExec.Exec(ctx, ns, pod, container, cmd, in)
}

// TestRunRawRetryLeavesOneFile: a sample whose first attempt failed (an .err.txt) and whose retry succeeded keeps
// only the retry's JSON, no stale .err.txt beside it.
func TestRunRawRetryLeavesOneFile(t *testing.T) {
	t.Parallel()
	ex := &refusedOnce{fakeExec: &fakeExec{}}
	cfg := testConfig(t)
	cfg.CNI.Paths = []scenario.CNIPath{scenario.CNIPathSameNode}
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP}
	cfg.CNI.Samples = 1
	if _, err := Run(context.Background(), cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: ex, Store: &fakeStore{}, Clock: newFakeClock()}); err != nil {
		t.Fatalf("Run: %v\n%s", err, strings.Join(ex.fakeExec.calls, "\n"))
	}
	if ex.calls != 2 {
		t.Fatalf("%d iperf3 execs, want 2 (one retry of the refused exec)", ex.calls)
	}
	got := cni.RawFiles(t, cfg.RunDir)
	if want := []string{"same-node-tcp-1.json"}; !slices.Equal(got, want) {
		t.Fatalf("raw/ holds %q, want %q", got, want)
	}
	b, _ := os.ReadFile(filepath.Join(cfg.RunDir, "raw", got[0]))
	if !json.Valid(b) {
		t.Errorf("raw/%s does not parse: %q", got[0], b)
	}
}
