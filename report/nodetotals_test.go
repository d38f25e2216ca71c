package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestNodeTotalsTable checks the whole-node totals: a shared host counted once with its note, and a run recorded
// before nodes carried machine and boot IDs (each node its own machine) saying so instead of passing silently.
func TestNodeTotalsTable(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	rows := []results.CNIResourceRow{
		{Window: results.WindowIdle, Path: "all", Component: results.ComponentNode, Node: "a", Metric: results.MetricCPU, Unit: "millicores", Avg: f(1310)},
		{Window: results.WindowIdle, Path: "all", Component: results.ComponentNode, Node: "b", Metric: results.MetricCPU, Unit: "millicores", Avg: f(1305)},
	}
	oneHost := []results.NodeFacts{{Name: "a", MachineID: "m", BootID: "b"}, {Name: "b", MachineID: "m", BootID: "b"}}
	tests := []struct {
		name      string
		nodes     []results.NodeFacts
		avg, note string
	}{
		{name: "local cluster", nodes: oneHost, avg: "1310", note: "nodes a, b share one host (machineID m, bootID b): counted once (the figure of a)"},
		{name: "old run without IDs", nodes: []results.NodeFacts{{Name: "a"}, {Name: "b"}}, avg: "2615",
			note: "The run did not record the machine and boot IDs of a, b"},
	}
	for _, tt := range tests {
		tab, ok := cniNodeTotalsTable(results.CNINodeTotals(rows, tt.nodes), tt.nodes)
		if !ok || len(tab.Rows) != 1 {
			t.Fatalf("%s: table %+v", tt.name, tab)
		}
		if got := tab.Rows[0]; got[4] != tt.avg || got[6] != "a, b" {
			t.Errorf("%s: row %q: want avg %s over a, b", tt.name, got, tt.avg)
		}
		if len(tab.Notes) != 1 || !strings.HasPrefix(tab.Notes[0], tt.note) {
			t.Errorf("%s: notes %q, want %q", tt.name, tab.Notes, tt.note)
		}
	}
	if _, ok := cniNodeTotalsTable(nil, oneHost); ok {
		t.Error("a table without totals")
	}
	if tab, _ := cniNodeTotalsTable(results.CNINodeTotals(rows[:1], nil), nil); len(tab.Notes) != 0 || !slices.Equal(tab.Rows[0][6:], []string{"a", "a"}) {
		t.Errorf("one node, IDs unknown: %+v: nothing was added up, no note", tab)
	}
}

func TestHostText(t *testing.T) {
	t.Parallel()
	nodes := []results.NodeFacts{{Name: "a", MachineID: "m", BootID: "b"}, {Name: "b", MachineID: "m", BootID: "b"},
		{Name: "c", MachineID: "m2", BootID: "b"}, {Name: "d"}}
	want := map[string]string{"a": "one host with b", "b": "one host with a", "c": "its own", "d": "unknown"}
	for _, n := range nodes {
		if got := hostText(n, nodes); got != want[n.Name] {
			t.Errorf("hostText(%s) = %q, want %q", n.Name, got, want[n.Name])
		}
	}
}

func TestModeNodeTotalsTable(t *testing.T) {
	t.Parallel()
	totals := []results.ModeNodeTotal{
		{Topology: "single", Mode: "ambient", Load: "1000", Window: results.WindowLoad, Metric: results.MetricCPU, Unit: "millicores", Avg: 1310,
			Nodes: []string{"a", "b"}, Counted: []string{"a"}, Notes: []string{"nodes a, b share one host (...): counted once (the figure of a)"}},
		{Topology: "multi", Mode: "ambient", Window: results.WindowIdle, Metric: results.MetricCPU, Unit: "millicores", Avg: 1, Nodes: []string{"a"}, Counted: []string{"a"}},
	}
	oneHost := []results.NodeFacts{{Name: "a", MachineID: "m", BootID: "b"}, {Name: "b", MachineID: "m", BootID: "b"}}
	tab, ok := modeNodeTotalsTable("single", totals, oneHost)
	want := [][]string{{"ambient", "load 1000 qps", "cpu", "1310", "millicores", "a, b", "a"}}
	if !ok || !slices.EqualFunc(tab.Rows, want, slices.Equal) || len(tab.Notes) != 1 || tab.ID != "study-a-single-node-totals" {
		t.Errorf("table %+v, want rows %q and the shared-host note", tab, want)
	}
	if _, ok := modeNodeTotalsTable("other", totals, oneHost); ok {
		t.Error("a table for a topology without node figures")
	}
}
