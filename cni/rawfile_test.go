package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/nettool"
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
		wantKind    RawKind
		wantKeep    bool
		wantData    string // exact, or a prefix when wantPrefix
		wantPrefix  bool
	}{
		{name: "iperf3 json", tool: nettool.ToolIperf3, stdout: iperfJSON, wantKind: rawJSON, wantKeep: true, wantData: string(iperfJSON)},
		// iperf3 exits 1 on failures and explains them in its JSON: that is still the tool's report.
		{name: "iperf3 json with exit 1", tool: nettool.ToolIperf3, stdout: iperfJSON, err: execErr, wantKind: rawJSON, wantKeep: true, wantData: string(iperfJSON)},
		{name: "builtin json", tool: nettool.ToolBuiltin, stdout: []byte(`{"tool":"builtin"}`), wantKind: rawJSON, wantKeep: true, wantData: `{"tool":"builtin"}`},
		{name: "iperf3 plain-text error", tool: nettool.ToolIperf3, stdout: []byte("iperf3: error - unable to connect"), err: execErr, wantKind: rawError, wantKeep: true,
			wantData: "exec failed: command terminated with exit code 1\n--- stdout ---\niperf3: error - unable to connect\n"},
		{name: "iperf3 truncated json", tool: nettool.ToolIperf3, stdout: []byte(`{"start":{`), wantKind: rawError, wantKeep: true,
			wantData: "iperf3 printed output that is not its JSON report\n--- stdout ---\n{\"start\":{\n"},
		{name: "exec failed, nothing printed", tool: nettool.ToolIperf3, err: errors.New("dial tcp: connection refused"), wantKind: rawError, wantKeep: true,
			wantData: "exec failed: dial tcp: connection refused\n"},
		{name: "success, nothing printed", tool: nettool.ToolBuiltin, wantKind: rawError, wantKeep: true, wantData: "exec succeeded but printed nothing on stdout\n"},
		// The case: Ctrl-C mid-sample left raw/*.json holding "exec failed: ... context canceled".
		{name: "interrupted, nothing printed", tool: nettool.ToolIperf3, err: fmt.Errorf("exec: %w", context.Canceled), interrupted: true, wantKeep: false},
		{name: "interrupted with json", tool: nettool.ToolIperf3, stdout: iperfJSON, err: context.Canceled, interrupted: true, wantKind: rawJSON, wantKeep: true, wantData: string(iperfJSON)},
		{name: "netperf text", tool: nettool.ToolNetperf, stdout: []byte("MIGRATED TCP REQUEST/RESPONSE TEST\n"), wantKind: rawText, wantKeep: true,
			wantData: "MIGRATED TCP REQUEST/RESPONSE TEST\n"},
		{name: "netperf failed", tool: nettool.ToolNetperf, stdout: []byte("establish control: are you sure there is a netserver listening\n"), err: execErr,
			wantKind: rawError, wantKeep: true, wantData: "exec failed: command terminated with exit code 1\n--- stdout ---\nestablish control", wantPrefix: true},
		{name: "netperf json-looking output is still text", tool: nettool.ToolNetperf, stdout: []byte("{}"), wantKind: rawText, wantKeep: true, wantData: "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kind, data, keep := rawOutput(tt.tool, tt.stdout, tt.err, tt.interrupted)
			if keep != tt.wantKeep || kind != tt.wantKind {
				t.Fatalf("kind %q keep %v, want %q %v", kind, keep, tt.wantKind, tt.wantKeep)
			}
			if !keep {
				return
			}
			if got := string(data); tt.wantPrefix && !strings.HasPrefix(got, tt.wantData) || !tt.wantPrefix && got != tt.wantData {
				t.Errorf("data %q, want %q", got, tt.wantData)
			}
			if kind == rawJSON && !json.Valid(data) {
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
		kind RawKind
		want string
	}{
		{scenario.CNIPathSameNode, scenario.CNITestTCP, 1, rawJSON, "raw/same-node-tcp-1.json"},
		{scenario.CNIPathCrossNode, scenario.CNITestUDP, 12, rawError, "raw/cross-node-udp-12.err.txt"},
		{scenario.CNIPathService, scenario.CNITestRR, 3, rawText, "raw/service-rr-3.txt"},
		{scenario.CNIPathHost, scenario.CNITestCRR, 2, rawError, "raw/host-crr-2.err.txt"},
	}
	for _, tt := range tests {
		got := rawName(tt.path, tt.test, tt.n, tt.kind)
		if got != filepath.FromSlash(tt.want) {
			t.Errorf("RawName(%s, %s, %d, %s) = %q, want %q", tt.path, tt.test, tt.n, tt.kind, got, tt.want)
		}
		p, te, n, k, ok := ParseRawName(got)
		if !ok || p != tt.path || te != tt.test || n != tt.n || k != tt.kind {
			t.Errorf("ParseRawName(%q) = %s %s %d %s %v", got, p, te, n, k, ok)
		}
	}
	for _, bad := range []string{"same-node-tcp.json", "same-node-tcp-0.json", "same-node-tcp-01.json", "same-node-tcp-x.json",
		"moon-tcp-1.json", "same-node-ping-1.json", "same-node-tcp-1.log", "host-rr-crr-1.json", "node-tcp-1.txt"} {
		if p, te, n, k, ok := ParseRawName(bad); ok {
			t.Errorf("ParseRawName(%q) = %s %s %d %s, want not a raw name", bad, p, te, n, k)
		}
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
	removed, err := removeRaw(dir, []string{"same-node/tcp", "host/rr"})
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
	if removed, err := removeRaw(t.TempDir(), []string{"same-node/tcp"}); err != nil || removed != nil {
		t.Errorf("no raw dir: %q %v", removed, err)
	}
}

// rawFiles lists raw/ of a run directory.
func rawFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, RawDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
