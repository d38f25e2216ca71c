package cni

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/nettool"
	mbtarget "github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// placement is where the test pods run.
type placement struct {
	// ClientNode (node A) runs the clients and the same-node server; ServerNode (node B) the cross-node, Service
	// and host servers. ServerNode is "" when the cluster has a single usable node.
	ClientNode string `json:"clientNode"`
	ServerNode string `json:"serverNode,omitempty"`
	// Auto is true when meshbench picked the nodes (spec.cni.placement empty or partial).
	Auto bool `json:"auto"`
	// Candidates are the Ready schedulable nodes that were considered, by name.
	Candidates []string `json:"candidates,omitempty"`
	// SingleNodeReason says why there is no node B.
	SingleNodeReason string `json:"singleNodeReason,omitempty"`
}

// usable reports whether pods without tolerations can run on n, and if not, why.
func usable(n *corev1.Node) (bool, string) {
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	if !mbtarget.NodeReady(n) {
		return false, "not Ready"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false, "tainted " + t.Key + ":" + string(t.Effect)
		}
	}
	return true, ""
}

// choosePlacement picks node A and node B. Explicit nodes must exist and be usable (an error otherwise: the user asked
// for something the cluster cannot give); missing ones are chosen automatically among usable nodes, by name. It is
// pure.
func choosePlacement(want scenario.CNIPlacement, nodes []corev1.Node) (placement, error) {
	byName := map[string]*corev1.Node{}
	var cands []string
	for i := range nodes {
		n := &nodes[i]
		byName[n.Name] = n
		if ok, _ := usable(n); ok {
			cands = append(cands, n.Name)
		}
	}
	slices.Sort(cands)
	p := placement{Candidates: cands, Auto: want.ClientNode == "" || want.ServerNode == ""}
	var errs []error
	for _, f := range []struct{ field, node string }{{"clientNode", want.ClientNode}, {"serverNode", want.ServerNode}} {
		if f.node == "" {
			continue
		}
		n, ok := byName[f.node]
		if !ok {
			errs = append(errs, fmt.Errorf("spec.cni.placement.%s: node %q does not exist (nodes: %s)", f.field, f.node, strings.Join(names(nodes), ", ")))
			continue
		}
		if ok, why := usable(n); !ok {
			errs = append(errs, fmt.Errorf("spec.cni.placement.%s: node %q cannot run the test pods: %s", f.field, f.node, why))
		}
	}
	if want.ClientNode != "" && want.ClientNode == want.ServerNode {
		errs = append(errs, fmt.Errorf("spec.cni.placement: clientNode and serverNode are both %q", want.ClientNode))
	}
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	p.ClientNode, p.ServerNode = want.ClientNode, want.ServerNode
	pick := func(not string) string {
		for _, c := range cands {
			if c != not && c != p.ClientNode && c != p.ServerNode {
				return c
			}
		}
		return ""
	}
	if p.ClientNode == "" {
		p.ClientNode = pick(p.ServerNode)
	}
	if p.ClientNode == "" {
		return p, fmt.Errorf("no Ready schedulable node for the test pods (nodes: %s)", describeNodes(nodes))
	}
	if p.ServerNode == "" {
		p.ServerNode = pick(p.ClientNode)
	}
	if p.ServerNode == "" {
		p.SingleNodeReason = fmt.Sprintf("only one Ready schedulable node (%s): cross-node, service and host paths need a second node (nodes: %s)",
			p.ClientNode, describeNodes(nodes))
	}
	return p, nil
}

func names(nodes []corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

func describeNodes(nodes []corev1.Node) string {
	if len(nodes) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range names(nodes) {
		for i := range nodes {
			if nodes[i].Name != name {
				continue
			}
			if ok, why := usable(&nodes[i]); ok {
				parts = append(parts, name+" usable")
			} else {
				parts = append(parts, name+" "+why)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// pathTest is one path x test of the plan.
type pathTest struct {
	Path scenario.CNIPath `json:"path"`
	Test scenario.CNITest `json:"test"`
	// Tool is filled once the RR tool is known (iperf3 for tcp/udp).
	Tool nettool.Tool `json:"tool,omitempty"`
	// SkipReason is set when the case cannot run (e.g. a single node); it is recorded, never left blank.
	SkipReason string `json:"skipReason,omitempty"`
}

// id is the case ID of the whole path x test ("cross-node/tcp"); samples add "/<n>".
func (c pathTest) id() string { return scenario.CNICaseID(c.Path, c.Test) }

// sampleID is the case ID of sample n (1-based).
func (c pathTest) sampleID(n int) string { return c.id() + "/" + strconv.Itoa(n) }

// needsNodeB reports whether the path needs a second node.
func needsNodeB(p scenario.CNIPath) bool {
	return p == scenario.CNIPathCrossNode || p == scenario.CNIPathService || p == scenario.CNIPathHost
}

// plan is scenario's plan of the cni section (scenario.NewCNIPlan: the cases and IDs `meshbench plan` prints) with
// what the cluster tells: the iperf3 tool of tcp and udp, and the skip reason of a path that needs a second node
// the cluster does not have. It is pure.
func plan(c scenario.CNI, p placement) []pathTest {
	var out []pathTest
	for _, pc := range scenario.NewCNIPlan(c).Cases {
		cs := pathTest{Path: pc.Path, Test: pc.Test}
		if cs.Test == scenario.CNITestTCP || cs.Test == scenario.CNITestUDP {
			cs.Tool = nettool.ToolIperf3
		}
		if needsNodeB(cs.Path) && p.ServerNode == "" {
			cs.SkipReason = p.SingleNodeReason
			if cs.SkipReason == "" {
				cs.SkipReason = "no second node: the path needs a server on another node"
			}
		}
		out = append(out, cs)
	}
	return out
}

// withRRTool sets the request/response tool on the rr and crr cases.
func withRRTool(cases []pathTest, tool nettool.Tool) []pathTest {
	out := slices.Clone(cases)
	for i := range out {
		if out[i].Test == scenario.CNITestRR || out[i].Test == scenario.CNITestCRR {
			out[i].Tool = tool
		}
	}
	return out
}
