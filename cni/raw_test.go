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

// TestRawOutput: a .json is only what parses as JSON; everything else is named for what it is, the error first.
func TestRawOutput(t *testing.T) {
	t.Parallel()
	iperfJSON := []byte(`{"start":{},"end":{},"error":"unable to connect to server: Connection refused"}`)
	execErr := errors.New("command terminated with exit code 1")
	tests := []struct {
		name        string
		tool        nettool.Tool
		stdout      []byte
		err         error
		interrupted bool
		wantKind    cni.RawKind
		wantKeep    bool
		wantData    string // exact, or a prefix when wantPrefix
		wantPrefix  bool
	}{
		{name: "iperf3 json", tool: nettool.ToolIperf3, stdout: iperfJSON, wantKind: cni.RawJSON, wantKeep: true, wantData: string(iperfJSON)},
		// iperf3 exits 1 on failures and explains them in its JSON: that is still the tool's report.
		{name: "iperf3 json with exit 1", tool: nettool.ToolIperf3, stdout: iperfJSON, err: execErr, wantKind: cni.RawJSON, wantKeep: true, wantData: string(iperfJSON)},
		{name: "builtin json", tool: nettool.ToolBuiltin, stdout: []byte(`{"tool":"builtin"}`), wantKind: cni.RawJSON, wantKeep: true, wantData: `{"tool":"builtin"}`},
		{name: "iperf3 plain-text error", tool: nettool.ToolIperf3, stdout: []byte("iperf3: error - unable to connect"), err: execErr, wantKind: cni.RawError, wantKeep: true,
			wantData: "exec failed: command terminated with exit code 1\n--- stdout ---\niperf3: error - unable to connect\n"},
		{name: "iperf3 truncated json", tool: nettool.ToolIperf3, stdout: []byte(`{"start":{`), wantKind: cni.RawError, wantKeep: true,
			wantData: "iperf3 printed output that is not its JSON report\n--- stdout ---\n{\"start\":{\n"},
		{name: "exec failed, nothing printed", tool: nettool.ToolIperf3, err: errors.New("dial tcp: connection refused"), wantKind: cni.RawError, wantKeep: true,
			wantData: "exec failed: dial tcp: connection refused\n"},
		{name: "success, nothing printed", tool: nettool.ToolBuiltin, wantKind: cni.RawError, wantKeep: true, wantData: "exec succeeded but printed nothing on stdout\n"},
		// The case: Ctrl-C mid-sample left raw/*.json holding "exec failed: ... context canceled".
		{name: "interrupted, nothing printed", tool: nettool.ToolIperf3, err: fmt.Errorf("exec: %w", context.Canceled), interrupted: true, wantKeep: false},
		{name: "interrupted with json", tool: nettool.ToolIperf3, stdout: iperfJSON, err: context.Canceled, interrupted: true, wantKind: cni.RawJSON, wantKeep: true, wantData: string(iperfJSON)},
		{name: "netperf text", tool: nettool.ToolNetperf, stdout: []byte("MIGRATED TCP REQUEST/RESPONSE TEST\n"), wantKind: cni.RawText, wantKeep: true,
			wantData: "MIGRATED TCP REQUEST/RESPONSE TEST\n"},
		{name: "netperf failed", tool: nettool.ToolNetperf, stdout: []byte("establish control: are you sure there is a netserver listening\n"), err: execErr,
			wantKind: cni.RawError, wantKeep: true, wantData: "exec failed: command terminated with exit code 1\n--- stdout ---\nestablish control", wantPrefix: true},
		{name: "netperf json-looking output is still text", tool: nettool.ToolNetperf, stdout: []byte("{}"), wantKind: cni.RawText, wantKeep: true, wantData: "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kind, data, keep := cni.RawOutput(tt.tool, tt.stdout, tt.err, tt.interrupted)
			if keep != tt.wantKeep || kind != tt.wantKind {
				t.Fatalf("kind %q keep %v, want %q %v", kind, keep, tt.wantKind, tt.wantKeep)
			}
			if !keep {
				return
			}
			if got := string(data); tt.wantPrefix && !strings.HasPrefix(got, tt.wantData) || !tt.wantPrefix && got != tt.wantData {
				t.Errorf("data %q, want %q", got, tt.wantData)
			}
			if kind == cni.RawJSON && !json.Valid(data) {
				t.Errorf("a %s file that does not parse: %q", kind, data)
			}
		})
	}
}

// TestRawName: the names RawName gives and ParseRawName reads back, and the names ParseRawName refuses.
func TestRawName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path scenario.CNIPath
		test scenario.CNITest
		n    int
		kind cni.RawKind
		want string
	}{
		{scenario.CNIPathSameNode, scenario.CNITestTCP, 1, cni.RawJSON, "raw/same-node-tcp-1.json"},
		{scenario.CNIPathCrossNode, scenario.CNITestUDP, 12, cni.RawError, "raw/cross-node-udp-12.err.txt"},
		{scenario.CNIPathService, scenario.CNITestRR, 3, cni.RawText, "raw/service-rr-3.txt"},
		{scenario.CNIPathHost, scenario.CNITestCRR, 2, cni.RawError, "raw/host-crr-2.err.txt"},
	}
	for _, tt := range tests {
		got := cni.RawName(tt.path, tt.test, tt.n, tt.kind)
		if got != filepath.FromSlash(tt.want) {
			t.Errorf("RawName(%s, %s, %d, %s) = %q, want %q", tt.path, tt.test, tt.n, tt.kind, got, tt.want)
		}
		p, te, n, k, ok := cni.ParseRawName(got)
		if !ok || p != tt.path || te != tt.test || n != tt.n || k != tt.kind {
			t.Errorf("ParseRawName(%q) = %s %s %d %s %v", got, p, te, n, k, ok)
		}
	}
	for _, bad := range []string{"same-node-tcp.json", "same-node-tcp-0.json", "same-node-tcp-01.json", "same-node-tcp-x.json",
		"moon-tcp-1.json", "same-node-ping-1.json", "same-node-tcp-1.log", "host-rr-crr-1.json", "node-tcp-1.txt"} {
		if p, te, n, k, ok := cni.ParseRawName(bad); ok {
			t.Errorf("ParseRawName(%q) = %s %s %d %s, want not a raw name", bad, p, te, n, k)
		}
	}
}

// rawFiles lists raw/ of a run directory.
func rawFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, cni.RawDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

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
	got := rawFiles(t, cfg.RunDir)
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
	got := rawFiles(t, cfg.RunDir)
	if want := []string{"same-node-tcp-1.json"}; !slices.Equal(got, want) {
		t.Fatalf("raw/ holds %q, want %q", got, want)
	}
	b, _ := os.ReadFile(filepath.Join(cfg.RunDir, "raw", got[0]))
	if !json.Valid(b) {
		t.Errorf("raw/%s does not parse: %q", got[0], b)
	}
}

// TestRemoveRaw removes the files of the named cases only, whatever their kind, and leaves other files alone.
func TestRemoveRaw(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"same-node-tcp-1.json", "same-node-tcp-2.err.txt", "same-node-udp-1.json", "host-rr-1.txt", "host-crr-1.txt", "notes.md"} {
		if err := os.WriteFile(filepath.Join(dir, "raw", n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := cni.RemoveRaw(dir, []string{"same-node/tcp", "host/rr"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("raw", "host-rr-1.txt"), filepath.Join("raw", "same-node-tcp-1.json"), filepath.Join("raw", "same-node-tcp-2.err.txt")}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	if got, want := rawFiles(t, dir), []string{"host-crr-1.txt", "notes.md", "same-node-udp-1.json"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if removed, err := cni.RemoveRaw(t.TempDir(), []string{"same-node/tcp"}); err != nil || removed != nil {
		t.Errorf("no raw dir: %q %v", removed, err)
	}
}
