package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCNIBadInputExits2 : a bad config exits 2 before any cluster is contacted (the kubeconfig points nowhere, so
// any contact would fail differently) and nothing is written.
func TestCNIBadInputExits2(t *testing.T) {
	t.Parallel()
	head := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: cni-bad\nspec:\n"
	tests := []struct {
		name, body string
		args       []string
		want       string
	}{
		{"no cni section", "  workload: {app: fortio-chain}\n", nil, "no spec.cni section"},
		{"udp without bitrate", "  cni:\n    tests: [udp]\n", nil, "udpBitrate"},
		{"unknown path and one node twice", "  cni:\n    paths: [same-node, moon]\n    placement: {clientNode: a, serverNode: a}\n", nil, "moon"},
		{"unknown field", "  cni:\n    tests: [tcp]\n    sampels: 3\n", nil, "sampels"},
		{"bad output format", "  cni:\n    tests: [tcp]\n", []string{"-o", "xml"}, "--output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(f, []byte(head+tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "runs")
			args := append([]string{"cni", "-f", f, "--output-dir", out, "--kubeconfig", filepath.Join(dir, "nope")}, tt.args...)
			code, stdout, stderr := run(t, args...)
			if code != ExitBadInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("code %d, stderr %q, stdout %q; want exit 2 mentioning %q", code, stderr, stdout, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run directory created for bad input: %v", err)
			}
		})
	}
	if code, _, stderr := run(t, "cni"); code != ExitBadInput || !strings.Contains(stderr, "file") {
		t.Errorf("cni without -f: code %d, %q", code, stderr)
	}
}
