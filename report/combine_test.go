package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestCombinedReportGolden: a mesh run and a cni run of the same cluster make one report, in either order: the pod
// network underneath in the headlines and its own section, next to what each mode adds on top.
func TestCombinedReportGolden(t *testing.T) {
	t.Parallel()
	rep, err := Combine(readRun(t, "mesh-local"), readRun(t, "cni-local"))
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown()
	golden(t, "combined/report.md", md)
	swapped, err := Combine(readRun(t, "cni-local"), readRun(t, "mesh-local"))
	if err != nil {
		t.Fatal(err)
	}
	if string(swapped.Markdown()) != string(md) {
		t.Error("the order of the run directories changed the report")
	}
	text := string(md)
	for _, want := range []string{
		"pod network baseline | cni run 20261128-020000-cni",
		"Pod network underneath, pod to pod cross-node (cni run 20261128-020000-cni): tcp 8.",
		"On top, mode sidecar (topology single, load 1000 qps): app latency p50",
		"On top, mode none (topology single, load 1000 qps): app latency p50",
		"## Pod network underneath (cni run 20261128-020000-cni)",
		"| host | tcp | throughput |", "Resource use of the test pods and test nodes",
		"charts/baseline-",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("combined report lacks %q", want)
		}
	}
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "|") && (strings.Contains(line, "|  |") || strings.Contains(line, "| |")) {
			t.Errorf("line %d has an empty cell: %s", i+1, line)
		}
	}
	for _, f := range rep.Files() {
		if strings.HasPrefix(f.Name, "charts/baseline-") {
			return
		}
	}
	t.Error("the baseline's charts are not written")
}

func TestCombineRefuses(t *testing.T) {
	t.Parallel()
	otherVersion := readRun(t, "cni-local")
	otherVersion.Meta.Cluster.KubernetesVersion = "v1.36.0"
	otherNodes := readRun(t, "cni-local")
	otherNodes.Meta.Cluster.Nodes = otherNodes.Meta.Cluster.Nodes[:2]
	unrecorded := readRun(t, "cni-local")
	unrecorded.Meta.Cluster.Nodes = nil
	tests := []struct {
		name     string
		runs     []*results.Run
		mismatch bool
		want     string
	}{
		{"kubernetes version", []*results.Run{readRun(t, "mesh-local"), otherVersion}, true, "Kubernetes v1.37.2 vs v1.36.0"},
		{"nodes", []*results.Run{otherNodes, readRun(t, "mesh-local")}, true, "nodes node-1, node-2, node-3 vs node-1, node-2"},
		{"nodes not recorded", []*results.Run{readRun(t, "mesh-local"), unrecorded}, true, "nodes not recorded by both runs"},
		{"two mesh runs", []*results.Run{readRun(t, "mesh-local"), readRun(t, "aa-1")}, false, "needs one mesh run (meshbench run) and one cni run"},
		{"two cni runs", []*results.Run{readRun(t, "cni-local"), readRun(t, "cni-local")}, false, "needs one mesh run"},
		{"three runs", []*results.Run{readRun(t, "mesh-local"), readRun(t, "cni-local"), readRun(t, "aa-1")}, false, "3 run directories"},
	}
	for _, tt := range tests {
		_, err := Combine(tt.runs...)
		var cm *clusterMismatchError
		if err == nil || errors.As(err, &cm) != tt.mismatch || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q (cluster mismatch %v)", tt.name, err, tt.want, tt.mismatch)
		}
	}
}
