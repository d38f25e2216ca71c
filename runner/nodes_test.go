package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
)

// nodeWorkloads fails its first waits as target.WaitReady does when the app's pods sit on a dead node.
type nodeWorkloads struct {
	fakeWorkloads
	fail *int // waits left to fail
	err  error
}

func (w nodeWorkloads) WaitReady(ctx context.Context, t Target) error {
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

func (g *scriptedGate) Check(_ context.Context, t *Target, nodes []string) NodeCheck {
	g.asked = append(g.asked, fmt.Sprintf("%v deployed=%v", nodes, t != nil))
	a := g.answers[0]
	g.answers = g.answers[1:]
	return a
}

var errNode2 = &target.NodeNotReadyError{Target: target.Target{App: "fortio-chain", Topology: "single"},
	Readiness: target.Readiness{Nodes: []string{"node2: Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)"}}}

// TestLaterCasesAfterANodeFailure: the case whose wait met the dead node fails naming it; the next is skipped naming
// it while the gate says the app needs it; once the node is back the group is switched again and measured, and no
// further check is made.
func TestLaterCasesAfterANodeFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "[none]", "")
	fail := 1
	h.r.Workloads = nodeWorkloads{fakeWorkloads{h.calls, h.clock}, &fail, &SwitchError{Step: "x", What: "y", Err: errNode2}}
	skip := "node node2 not Ready (Ready=Unknown for 1m40s (NodeStatusUnknown: Kubelet stopped posting node status.)): the app's pods are pinned there"
	gate := &scriptedGate{answers: []NodeCheck{{Skip: skip, Node: "node2"}, {Recovered: []string{"node2"}}}}
	h.r.Nodes = gate
	out, err := h.r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range h.store.cases {
		got = append(got, c.CaseID+"="+c.Status)
	}
	want := "single.none.q50.r1=failed single.none.q200.r1=skipped single.none.q50.r2=ok single.none.q200.r2=ok"
	if strings.Join(got, " ") != want {
		t.Fatalf("cases %s, want %s", strings.Join(got, " "), want)
	}
	first, second := h.store.cases[0], h.store.cases[1]
	if !strings.Contains(first.Reason, "node node2: Ready=Unknown") {
		t.Errorf("first case reason %q: want the node named", first.Reason)
	}
	if second.Reason != skip || second.Facts[results.FactSkippedNode] != "node2" {
		t.Errorf("skipped case: reason %q facts %v", second.Reason, second.Facts)
	}
	if out.Skipped != 1 || out.OK != 2 || len(out.Failed) != 1 {
		t.Errorf("outcome %+v", out)
	}
	if fmt.Sprint(gate.asked) != "[[node2] deployed=true [node2] deployed=true]" {
		t.Errorf("gate asked %v, want twice for node2 on the deployed target", gate.asked)
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
