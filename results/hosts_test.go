package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The local cluster's two nodes: one machine, so the same machine ID and boot ID (hack/localcluster runs both
// kubelets on the host); a third node on a machine of its own.
var (
	hostA = NodeFacts{Name: "a", MachineID: "4c1f0e9d2b7a4e6f8a3b5c7d9e1f2a3b", BootID: "b0071d00-0000-4000-8000-000000000001"}
	hostB = NodeFacts{Name: "b", MachineID: hostA.MachineID, BootID: hostA.BootID}
	hostC = NodeFacts{Name: "c", MachineID: "9f8e7d6c5b4a39281706f5e4d3c2b1a0", BootID: "b0071d00-0000-4000-8000-000000000002"}
)

func TestHostGroups(t *testing.T) {
	t.Parallel()
	ab := HostGroup{MachineID: hostA.MachineID, BootID: hostA.BootID, Nodes: []string{"a", "b"}}
	tests := []struct {
		name  string
		nodes []NodeFacts
		want  []HostGroup
	}{
		{name: "none", nodes: nil, want: nil},
		{name: "one host, two nodes, any input order", nodes: []NodeFacts{hostB, hostA}, want: []HostGroup{ab}},
		{name: "shared and own host", nodes: []NodeFacts{hostC, hostA, hostB},
			want: []HostGroup{ab, {MachineID: hostC.MachineID, BootID: hostC.BootID, Nodes: []string{"c"}}}},
		{name: "unknown IDs are never grouped", nodes: []NodeFacts{{Name: "x"}, {Name: "y"}},
			want: []HostGroup{{Nodes: []string{"x"}}, {Nodes: []string{"y"}}}},
		{name: "same machine ID, another boot: a cloned image, not one host",
			nodes: []NodeFacts{hostA, {Name: "b", MachineID: hostA.MachineID, BootID: "other"}},
			want:  []HostGroup{{MachineID: hostA.MachineID, BootID: hostA.BootID, Nodes: []string{"a"}}, {MachineID: hostA.MachineID, BootID: "other", Nodes: []string{"b"}}}},
		{name: "machine ID without boot ID is unknown", nodes: []NodeFacts{{Name: "a", MachineID: "m"}, {Name: "b", MachineID: "m"}},
			want: []HostGroup{{Nodes: []string{"a"}}, {Nodes: []string{"b"}}}},
		{name: "a name twice counts once", nodes: []NodeFacts{hostA, hostA}, want: []HostGroup{{MachineID: hostA.MachineID, BootID: hostA.BootID, Nodes: []string{"a"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := HostGroups(tt.nodes)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("HostGroups = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSumNodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		figures map[string]float64
		nodes   []NodeFacts
		want    NodeTotal
	}{
		{name: "the local cluster: one machine counted once, not twice (2615 m)",
			figures: map[string]float64{"a": 1310, "b": 1305}, nodes: []NodeFacts{hostA, hostB},
			want: NodeTotal{Value: 1310, Nodes: []string{"a", "b"}, Counted: []string{"a"},
				Notes: []string{"nodes a, b share one host (machineID 4c1f0e9d…, bootID b0071d00…): counted once (the figure of a)"}}},
		{name: "own hosts add up",
			figures: map[string]float64{"a": 100, "c": 50}, nodes: []NodeFacts{hostA, hostB, hostC},
			want: NodeTotal{Value: 150, Nodes: []string{"a", "c"}, Counted: []string{"a", "c"}}},
		{name: "shared host plus another",
			figures: map[string]float64{"a": 100, "b": 99, "c": 50}, nodes: []NodeFacts{hostA, hostB, hostC},
			want: NodeTotal{Value: 150, Nodes: []string{"a", "b", "c"}, Counted: []string{"a", "c"},
				Notes: []string{"nodes a, b share one host (machineID 4c1f0e9d…, bootID b0071d00…): counted once (the figure of a)"}}},
		{name: "the first node without a figure: the next stands for the host",
			figures: map[string]float64{"b": 99}, nodes: []NodeFacts{hostA, hostB},
			want: NodeTotal{Value: 99, Nodes: []string{"b"}, Counted: []string{"b"}}},
		{name: "unknown IDs (a run recorded before them) add up",
			figures: map[string]float64{"a": 1310, "b": 1305}, nodes: []NodeFacts{{Name: "a"}, {Name: "b"}},
			want: NodeTotal{Value: 2615, Nodes: []string{"a", "b"}, Counted: []string{"a", "b"}}},
		{name: "a node missing from the facts is its own host",
			figures: map[string]float64{"a": 10, "z": 5}, nodes: []NodeFacts{hostA, hostB},
			want: NodeTotal{Value: 15, Nodes: []string{"a", "z"}, Counted: []string{"a", "z"}}},
		{name: "no figures", figures: nil, nodes: []NodeFacts{hostA}, want: NodeTotal{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := SumNodes(tt.figures, tt.nodes)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SumNodes = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSharedHostNotes(t *testing.T) {
	t.Parallel()
	if got := SharedHostNotes([]NodeFacts{hostA, hostC}); got != nil {
		t.Errorf("own hosts: %q, want none", got)
	}
	got := SharedHostNotes([]NodeFacts{hostC, hostB, hostA, {Name: "d", MachineID: hostA.MachineID, BootID: hostA.BootID}})
	want := []string{"node figures of a, b and d are the same machine's (machineID 4c1f0e9d…, bootID b0071d00…): whole-node totals count it once"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SharedHostNotes = %q, want %q", got, want)
	}
}

func TestSharesHostWith(t *testing.T) {
	t.Parallel()
	nodes := []NodeFacts{hostC, hostB, hostA, {Name: "x"}}
	for _, tt := range []struct {
		node string
		want []string
	}{{"a", []string{"b"}}, {"b", []string{"a"}}, {"c", nil}, {"x", nil}, {"missing", nil}} {
		if got := SharesHostWith(tt.node, nodes); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SharesHostWith(%s) = %q, want %q", tt.node, got, tt.want)
		}
	}
}

func TestCNINodeTotals(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	rows := []CNIResourceRow{
		{Window: WindowIdle, Path: "all", Component: ComponentNode, Node: "a", Metric: MetricCPU, Unit: "millicores", Min: f(900), Avg: f(1310), Max: f(1900)},
		{Window: WindowIdle, Path: "all", Component: ComponentNode, Node: "b", Metric: MetricCPU, Unit: "millicores", Avg: f(1305)},
		{Window: WindowIdle, Path: "all", Component: ComponentCNITest, Metric: MetricCPU, Unit: "millicores", Avg: f(7)}, // not a node
		{Window: WindowTest, Path: "cross-node", Test: "tcp", Component: ComponentNode, Node: "a", Metric: MetricMemory, Unit: "MiB", Avg: f(2000)},
		{Window: WindowTest, Path: "cross-node", Test: "tcp", Component: ComponentNode, Node: "c", Metric: MetricMemory, Unit: "MiB", Avg: f(1000)},
		{Window: WindowTest, Path: "cross-node", Test: "tcp", Component: ComponentNode, Node: "b", Metric: MetricMemory, Unit: "MiB"}, // no average
		{Window: WindowTest, Path: "host", Test: "tcp", Component: ComponentNode, Node: "a", Metric: MetricCPU, Unit: "millicores", Avg: f(1)},
		{Window: WindowTest, Path: "host", Test: "tcp", Component: ComponentNode, Node: "c", Metric: MetricCPU, Unit: "cores", Avg: f(1)}, // mixed units
	}
	got := CNINodeTotals(rows, []NodeFacts{hostA, hostB, hostC})
	want := []CNINodeTotal{
		{Window: WindowIdle, Path: "all", Metric: MetricCPU, Unit: "millicores", Avg: 1310, Nodes: []string{"a", "b"}, Counted: []string{"a"},
			Notes: []string{"nodes a, b share one host (machineID 4c1f0e9d…, bootID b0071d00…): counted once (the figure of a)"}},
		{Window: WindowTest, Path: "cross-node", Test: "tcp", Metric: MetricMemory, Unit: "MiB", Avg: 3000, Nodes: []string{"a", "c"}, Counted: []string{"a", "c"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CNINodeTotals =\n%+v\nwant\n%+v", got, want)
	}
}

// A run.json written before nodes carried machineID and bootID still loads, with the IDs empty (hosts unknown).
func TestReadRunWithoutHostIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := `{"schemaVersion":"` + SchemaVersion + `","runID":"r","command":"cni","start":"2026-11-30T10:00:00Z",` +
		`"cluster":{"nodes":[{"name":"a","kernelVersion":"6.18.0","cpu":"2","internalIP":"10.0.0.1"},{"name":"b"}]}}`
	if err := os.WriteFile(filepath.Join(dir, RunFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Read(dir)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	want := []NodeFacts{{Name: "a", KernelVersion: "6.18.0", CPU: "2", InternalIP: "10.0.0.1"}, {Name: "b"}}
	if !reflect.DeepEqual(run.Meta.Cluster.Nodes, want) {
		t.Errorf("nodes = %+v, want %+v", run.Meta.Cluster.Nodes, want)
	}
	if b, _ := json.Marshal(want[0]); strings.Contains(string(b), "machineID") || strings.Contains(string(b), "bootID") {
		t.Errorf("NodeFacts without IDs marshals to %s: want the fields left out (omitempty)", b)
	}
	if g := HostGroups(run.Meta.Cluster.Nodes); len(g) != 2 || g[0].Shared() || g[1].Shared() {
		t.Errorf("HostGroups of nodes without IDs = %+v, want two unknown hosts", g)
	}
}

func TestModeNodeTotals(t *testing.T) {
	t.Parallel()
	node := func(mode Mode, window, load, name string, metric Metric, stat Stat, mean float64) Series {
		unit := UnitMillicores
		if metric == MetricMemory {
			unit = "MiB"
		}
		return Series{Key: Key{Topology: "single", Mode: mode, Load: load, Window: window, Component: ComponentNode, Metric: metric, Stat: stat, Unit: unit,
			Labels: CanonicalLabels(map[string]string{"node": name, "series": "cadvisor-root"})}, Mean: mean}
	}
	sum := Summary{Series: []Series{
		node("sidecar", WindowLoad, "1000", "a", MetricCPU, "avg", 1310),
		node("sidecar", WindowLoad, "1000", "b", MetricCPU, "avg", 1305),
		node("sidecar", WindowLoad, "1000", "a", MetricCPU, "max", 1900), // maxima never add up
		node("sidecar", WindowLoad, "1000", "c", MetricMemory, "avg", 100),
		node("sidecar", WindowLoad, "1000", "a", MetricMemory, "avg", 2000),
		node("", WindowIdle, "", "a", MetricCPU, "avg", 5), // a cni case: CNINodeTotals' part
		{Key: Key{Topology: "single", Mode: "sidecar", Window: WindowLoad, Load: "1000", Component: ComponentSidecar, Metric: MetricCPU, Stat: "avg", Unit: "millicores"}, Mean: 40},
	}}
	got := ModeNodeTotals(sum, []NodeFacts{hostA, hostB, hostC})
	want := []ModeNodeTotal{
		{Topology: "single", Mode: "sidecar", Load: "1000", Window: WindowLoad, Metric: MetricCPU, Unit: "millicores", Avg: 1310,
			Nodes: []string{"a", "b"}, Counted: []string{"a"},
			Notes: []string{"nodes a, b share one host (machineID 4c1f0e9d…, bootID b0071d00…): counted once (the figure of a)"}},
		{Topology: "single", Mode: "sidecar", Load: "1000", Window: WindowLoad, Metric: MetricMemory, Unit: "MiB", Avg: 2100,
			Nodes: []string{"a", "c"}, Counted: []string{"a", "c"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ModeNodeTotals =\n%+v\nwant\n%+v", got, want)
	}
}
