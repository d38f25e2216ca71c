package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// nodeWorkloads fails its first waits as target.WaitReady does when the app's pods sit on a dead node.
type nodeWorkloads struct {
	fakeWorkloads
	fail *int // waits left to fail
	err  error
}

func (w nodeWorkloads) WaitReady(ctx context.Context, t target.Target) error {
	if err := w.fakeWorkloads.WaitReady(ctx, t); err != nil {
		return err
	}
	if *w.fail > 0 {
		*w.fail--
		return w.err
	}
	return nil
}

// scriptedGate answers the runner's checks in order and records them.
type scriptedGate struct {
	answers []NodeCheck
	asked   []string
}

func (g *scriptedGate) Check(_ context.Context, t *target.Target, nodes []string) NodeCheck {
	g.asked = append(g.asked, fmt.Sprintf("%v deployed=%v", nodes, t != nil))
	a := g.answers[0]
	g.answers = g.answers[1:]
	return a
}

var errNode2 = &target.NodeNotReadyError{Target: target.Target{App: "fortio-chain", Topology: "single"},
	Readiness: target.Readiness{Nodes: []string{"node2: Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)"}}}

// runSkippingAfterNode runs h's plan of four cases (two groups of two) whose first case fails on node2 while the
// gate answers skip, then that node2 is back: the second case is recorded skipped with skip and the node, the others
// measured, and the gate asked twice for node2 on the deployed target. It returns the first case's record.
func runSkippingAfterNode(t *testing.T, h *harness, gate *scriptedGate, skip string) results.CaseResult {
	t.Helper()
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range h.store.cases {
		got = append(got, c.CaseID+"="+string(c.Status))
	}
	want := "single.none.q50.r1=failed single.none.q200.r1=skipped single.none.q50.r2=ok single.none.q200.r2=ok"
	if strings.Join(got, " ") != want {
		t.Fatalf("cases %s, want %s", strings.Join(got, " "), want)
	}
	if second := h.store.cases[1]; second.Reason != skip || second.Facts[results.FactSkippedNode] != "node2" {
		t.Errorf("skipped case: reason %q facts %v", second.Reason, second.Facts)
	}
	if out.Skipped != 1 || out.OK != 2 || len(out.Failed) != 1 {
		t.Errorf("outcome %+v", out)
	}
	if fmt.Sprint(gate.asked) != "[[node2] deployed=true [node2] deployed=true]" {
		t.Errorf("gate asked %v, want twice for node2 only, on the deployed target", gate.asked)
	}
	return h.store.cases[0]
}

// TestLaterCasesAfterANodeFailure: the case whose wait met the dead node fails naming it; the next is skipped naming
// it while the gate says the app needs it; once the node is back the group is switched again and measured, and no
// further check is made.
func TestLaterCasesAfterANodeFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	fail := 1
	h.r.Workloads = nodeWorkloads{fakeWorkloads{h.calls, h.clock}, &fail, &switchError{Step: "x", What: "y", Err: errNode2}}
	skip := "node node2 not Ready (Ready=Unknown for 1m40s (NodeStatusUnknown: Kubelet stopped posting node status.)): the app's pods are pinned there"
	gate := &scriptedGate{answers: []NodeCheck{{Skip: skip, Node: "node2"}, {Recovered: []string{"node2"}}}}
	h.r.Nodes = gate
	first := runSkippingAfterNode(t, h, gate, skip)
	if !strings.Contains(first.Reason, "node node2: Ready=Unknown") {
		t.Errorf("first case reason %q: want the node named", first.Reason)
	}
	// The group that failed on the node is switched again once the node is back (not failed on the old error).
	if n := strings.Count(strings.Join(h.calls.log, "\n"), "wait-ready"); n != 2 {
		t.Errorf("%d waits, want 2 (the failed one, the one after the node came back): %q", n, h.calls.log)
	}
}

// TestNoNodeChecksWithoutANodeFailure: a switch that fails for another reason never asks the gate (no requests).
func TestNoNodeChecksWithoutANodeFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	fail := 1
	h.r.Workloads = nodeWorkloads{fakeWorkloads{h.calls, h.clock}, &fail, errors.New("pod web-1: ImagePullBackOff")}
	gate := &scriptedGate{}
	h.r.Nodes = gate
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(gate.asked) != 0 {
		t.Errorf("gate asked %v, want never", gate.asked)
	}
	for _, c := range h.store.cases[1:] {
		if c.Status != results.StatusFailed || !strings.Contains(c.Reason, "failed earlier in this group") {
			t.Errorf("case %s: %s %q, want failed as before", c.CaseID, c.Status, c.Reason)
		}
	}
}

// nodeLoad fails its first runs as loadgen.Cluster.Run does when a client's exec breaks through a dead kubelet.
type nodeLoad struct {
	fakeLoad
	fail *int // runs left to fail
	err  error
}

func (l nodeLoad) Run(ctx context.Context, t target.Target, req LoadRequest) (LoadResult, error) {
	res, err := l.fakeLoad.Run(ctx, t, req)
	if err == nil && *l.fail > 0 {
		*l.fail--
		return LoadResult{}, l.err
	}
	return res, err
}

// errKubelet2 is loadgen's joined client errors with one exec broken through node2's kubelet.
var errKubelet2 = errors.Join(errors.New("client lg-a (node node1): report is for target \"x\""), &target.KubeletError{Node: "node2",
	Err: errors.New(`client lg-b (node node2): exec "meshbench-agent load" in mb-single/lg-b: error dialing backend: dial tcp 172.18.0.3:10250: connect: connection refused`)})

// TestLaterCasesAfterALoadFailedOnANode: the kubelet dies inside case 1's load window, so the load client's exec
// fails (naming the node) long before any wait could see the node not Ready. Case 2, of the same group (no switch,
// no wait), is skipped with the gate's reason; once the gate finds the node usable the cases run, with no further
// check and no switch again (the group's switch never failed).
func TestLaterCasesAfterALoadFailedOnANode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	fail := 1
	h.r.Load = nodeLoad{fakeLoad{calls: h.calls, clock: h.clock}, &fail, errKubelet2}
	skip := "node node2: kubelet does not answer (GET nodes/node2/proxy/healthz: connection refused); the app's pods cannot run there: " +
		"pinned by nodeSelector kubernetes.io/hostname=node2 (no other Ready node matches it)"
	gate := &scriptedGate{answers: []NodeCheck{{Skip: skip, Node: "node2"}, {Recovered: []string{"node2"}}}}
	h.r.Nodes = gate
	first := runSkippingAfterNode(t, h, gate, skip)
	if !strings.HasPrefix(first.Reason, "load: client lg-a (node node1)") || !strings.Contains(first.Reason, "client lg-b (node node2): exec") {
		t.Errorf("first case reason %q: want the load's error as it was", first.Reason)
	}
	if n := strings.Count(strings.Join(h.calls.log, "\n"), "wait-ready"); n != 1 {
		t.Errorf("%d waits, want 1 (a load failure switches nothing again): %q", n, h.calls.log)
	}
}

// TestNoNodeChecksWithoutANodeLoadFailure: a load that fails without blaming a node (the agent's non-zero exit)
// never asks the gate; the next case runs.
func TestNoNodeChecksWithoutANodeLoadFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	fail := 1
	h.r.Load = nodeLoad{fakeLoad{calls: h.calls, clock: h.clock}, &fail,
		errors.New(`client lg-b (node node2): exec "meshbench-agent load" in mb-single/lg-b: command terminated with exit code 1 (stderr: boom)`)}
	gate := &scriptedGate{}
	h.r.Nodes = gate
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(gate.asked) != 0 {
		t.Errorf("gate asked %v, want never", gate.asked)
	}
	if out.OK != 3 || len(out.Failed) != 1 {
		t.Errorf("outcome %+v, want the first case failed, the others ok", out)
	}
}

// nodePrepare fails its first Prepares as the login's exec does through a dead kubelet.
type nodePrepare struct {
	fakeLoad
	fail *int
	err  error
}

func (l nodePrepare) Prepare(ctx context.Context, t target.Target, m scenario.Mode) error {
	if err := l.fakeLoad.Prepare(ctx, t, m); err != nil {
		return err
	}
	if *l.fail > 0 {
		*l.fail--
		return l.err
	}
	return nil
}

// TestSwitchAgainAfterAKubeletFailedInTheSwitch: a switch step that failed through a node's kubelet (the login's
// exec in a load client) arms the gate as a wait's NodeNotReadyError does; once the node is usable the group is
// switched again instead of failing on the old error.
func TestSwitchAgainAfterAKubeletFailedInTheSwitch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	fail := 1
	h.r.Load = nodePrepare{fakeLoad{calls: h.calls, clock: h.clock}, &fail, fmt.Errorf("log in to bank-of-anthos: %w", &target.KubeletError{Node: "node2",
		Err: errors.New("client lg-a: meshbench-agent curl: exec: websocket: close 1006 (abnormal closure): unexpected EOF (stderr: )")})}
	gate := &scriptedGate{answers: []NodeCheck{{Recovered: []string{"node2"}}}}
	h.r.Nodes = gate
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.OK != 3 || len(out.Failed) != 1 || len(gate.asked) != 1 {
		t.Errorf("outcome %+v, gate asked %v: want case 1 failed, one check, the rest ok", out, gate.asked)
	}
	if n := strings.Count(strings.Join(h.calls.log, "\n"), "prepare none"); n != 2 {
		t.Errorf("%d prepares, want 2 (the failed one, the switch again): %q", n, h.calls.log)
	}
}
