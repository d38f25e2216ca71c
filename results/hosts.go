package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// HostGroup is the nodes that run on one host: the same machine ID and boot ID (status.nodeInfo). The nodes of a
// local cluster (kind) share one machine, so their whole-node figures added up would count the host once per node.
type HostGroup struct {
	// MachineID and BootID identify the host; both are "" for a group of one node whose IDs are unknown.
	MachineID string `json:"machineID,omitempty"`
	BootID    string `json:"bootID,omitempty"`
	// Nodes are the node names, sorted.
	Nodes []string `json:"nodes"`
}

// Shared reports whether several nodes run on the group's host.
func (g HostGroup) Shared() bool { return len(g.Nodes) > 1 }

// HostGroups groups nodes by machine ID and boot ID together (the machine ID alone is equal on cloned machines), in
// order of the groups' first node name; a node without either ID is a group of its own, a name listed twice counts
// once. It is pure.
func HostGroups(nodes []NodeFacts) []HostGroup {
	type host struct{ machine, boot string }
	var out []HostGroup
	at := map[host]int{}
	seen := map[string]bool{}
	for _, n := range slices.SortedFunc(slices.Values(nodes), func(a, b NodeFacts) int { return cmp.Compare(a.Name, b.Name) }) {
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		if n.MachineID == "" || n.BootID == "" {
			out = append(out, HostGroup{Nodes: []string{n.Name}})
			continue
		}
		h := host{n.MachineID, n.BootID}
		if i, ok := at[h]; ok {
			out[i].Nodes = append(out[i].Nodes, n.Name)
			continue
		}
		at[h] = len(out)
		out = append(out, HostGroup{MachineID: n.MachineID, BootID: n.BootID, Nodes: []string{n.Name}})
	}
	return out
}

// SharedHostNotes are the run's or case's warnings for nodes that share a host: one per shared host, e.g. "node
// figures of a and b are the same machine's (machineID 1234abcd…, bootID 5678ef01…): whole-node totals count it
// once". Nodes with their own host give none. It is pure.
func SharedHostNotes(nodes []NodeFacts) []string {
	var out []string
	for _, g := range HostGroups(nodes) {
		if g.Shared() {
			out = append(out, fmt.Sprintf("node figures of %s are the same machine's (%s): whole-node totals count it once", andList(g.Nodes), g.ids()))
		}
	}
	return out
}

// SharesHostWith names the other nodes on node's host (HostGroups of nodes), sorted; nil when it has a host of its
// own or its IDs are unknown. It is pure.
func SharesHostWith(node string, nodes []NodeFacts) []string {
	for _, g := range HostGroups(nodes) {
		if g.Shared() && slices.Contains(g.Nodes, node) {
			return slices.DeleteFunc(slices.Clone(g.Nodes), func(n string) bool { return n == node })
		}
	}
	return nil
}

// NodeTotal is the sum of one figure over nodes, each host counted once.
type NodeTotal struct {
	Value float64 `json:"value"`
	// Nodes are every node whose figure the total covers (sorted), Counted those whose figure was added: one per host.
	Nodes   []string `json:"nodes"`
	Counted []string `json:"counted"`
	// Notes name the nodes of each shared host and which one stands for it.
	Notes []string `json:"notes,omitempty"`
}

// SumNodes adds figures (node name -> value) counting each host of HostGroups(nodes) once, by the figure of its first
// node (by name) that has one; a node missing from nodes is its own host. Only for additive figures (averages, never
// maxima: nodes peak at different moments). It is pure.
func SumNodes(figures map[string]float64, nodes []NodeFacts) NodeTotal {
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	all := slices.Clone(nodes)
	for name := range figures {
		if !known[name] {
			all = append(all, NodeFacts{Name: name})
		}
	}
	var t NodeTotal
	for _, g := range HostGroups(all) {
		var have []string
		for _, n := range g.Nodes {
			if _, ok := figures[n]; ok {
				have = append(have, n)
			}
		}
		if len(have) == 0 {
			continue
		}
		t.Nodes = append(t.Nodes, have...)
		t.Counted = append(t.Counted, have[0])
		t.Value += figures[have[0]]
		if len(have) > 1 {
			t.Notes = append(t.Notes, fmt.Sprintf("nodes %s share one host (%s): counted once (the figure of %s)", strings.Join(have, ", "), g.ids(), have[0]))
		}
	}
	slices.Sort(t.Nodes)
	return t
}

// ids names a group's host by its IDs, shortened to 8 characters (enough to tell hosts apart in a note).
func (g HostGroup) ids() string {
	short := func(s string) string {
		if len(s) > 8 {
			return s[:8] + "…"
		}
		return s
	}
	return "machineID " + short(g.MachineID) + ", bootID " + short(g.BootID)
}

// andList joins names as "a and b", "a, b and c".
func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// ModeNodeTotal is a mesh run's whole-node average of one topology, mode, load level and window, added up over the
// test nodes each host once (SumNodes): Nodes name every node it covers, Counted the ones added.
type ModeNodeTotal struct {
	Topology string   `json:"topology"`
	Mode     Mode     `json:"mode"`
	Load     string   `json:"load,omitempty"`
	Window   string   `json:"window"`
	Metric   Metric   `json:"metric"`
	Unit     Unit     `json:"unit"`
	Avg      float64  `json:"avg"`
	Nodes    []string `json:"nodes"`
	Counted  []string `json:"counted"`
	Notes    []string `json:"notes,omitempty"`
}

// ModeNodeTotals adds the means of the summary's node "avg" series of mesh cases (a mode set; each node a series
// labelled node=<name>) per topology, mode, load, window, metric and unit, in series order, each host of nodes
// counted once. A node with two series in one group (two sources) counts with its first. It is pure.
func ModeNodeTotals(sum Summary, nodes []NodeFacts) []ModeNodeTotal {
	type key struct {
		topo         string
		mode         Mode
		load, window string
		metric       Metric
		unit         Unit
		rest         string
	}
	var order []key
	figures := map[key]map[string]float64{}
	for _, x := range sum.Series {
		if x.Component != ComponentNode || x.Stat != StatAvg || x.Mode == "" || (x.Metric != MetricCPU && x.Metric != MetricMemory) {
			continue
		}
		l := ParseLabels(x.Labels)
		node := l[labelNode]
		if node == "" {
			continue
		}
		delete(l, labelNode)
		delete(l, labelSeries)
		k := key{x.Topology, x.Mode, x.Load, x.Window, x.Metric, x.Unit, CanonicalLabels(l)}
		if figures[k] == nil {
			figures[k], order = map[string]float64{}, append(order, k)
		}
		if _, dup := figures[k][node]; !dup {
			figures[k][node] = x.Mean
		}
	}
	var out []ModeNodeTotal
	for _, k := range order {
		t := SumNodes(figures[k], nodes)
		out = append(out, ModeNodeTotal{Topology: k.topo, Mode: k.mode, Load: k.load, Window: k.window, Metric: k.metric, Unit: k.unit,
			Avg: t.Value, Nodes: t.Nodes, Counted: t.Counted, Notes: t.Notes})
	}
	return out
}
