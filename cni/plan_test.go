package cni

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/scenario"
)

func node(name string, mods ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mods {
		m(&n)
	}
	return n
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
func tainted(n *corev1.Node) {
	n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
}

func TestChoosePlacement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		want         scenario.CNIPlacement
		nodes        []corev1.Node
		client, serv string
		single       bool
		err          string
	}{
		{name: "auto picks the first two usable by name", nodes: []corev1.Node{node("c"), node("b"), node("a", tainted)}, client: "b", serv: "c"},
		{name: "auto single node", nodes: []corev1.Node{node("a"), node("b", notReady), node("c", cordoned)}, client: "a", single: true},
		{name: "explicit", want: scenario.CNIPlacement{ClientNode: "z", ServerNode: "a"}, nodes: []corev1.Node{node("a"), node("z")}, client: "z", serv: "a"},
		{name: "explicit client, auto server", want: scenario.CNIPlacement{ClientNode: "b"}, nodes: []corev1.Node{node("a"), node("b")}, client: "b", serv: "a"},
		{name: "explicit server, auto client", want: scenario.CNIPlacement{ServerNode: "a"}, nodes: []corev1.Node{node("a"), node("b")}, client: "b", serv: "a"},
		{name: "explicit node missing", want: scenario.CNIPlacement{ClientNode: "x", ServerNode: "a"}, nodes: []corev1.Node{node("a")}, err: `node "x" does not exist`},
		{name: "explicit node cordoned", want: scenario.CNIPlacement{ClientNode: "a", ServerNode: "b"}, nodes: []corev1.Node{node("a"), node("b", cordoned)}, err: "cordoned"},
		{name: "no usable node", nodes: []corev1.Node{node("a", notReady)}, err: "a not Ready"},
		{name: "same node twice", want: scenario.CNIPlacement{ClientNode: "a", ServerNode: "a"}, nodes: []corev1.Node{node("a"), node("b")}, err: "both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := choosePlacement(tt.want, tt.nodes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.ClientNode != tt.client || p.ServerNode != tt.serv {
				t.Errorf("placement %s/%s, want %s/%s", p.ClientNode, p.ServerNode, tt.client, tt.serv)
			}
			if tt.single != (p.SingleNodeReason != "") {
				t.Errorf("single-node reason %q", p.SingleNodeReason)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	c := scenario.CNI{Tests: []scenario.CNITest{"udp", "rr"}, Paths: []scenario.CNIPath{"host", "same-node", "service"}}
	two := plan(c, placement{ClientNode: "a", ServerNode: "b"})
	var ids []string
	for _, cs := range two {
		ids = append(ids, cs.id())
		if cs.SkipReason != "" {
			t.Errorf("%s skipped with two nodes", cs.id())
		}
	}
	if got := strings.Join(ids, " "); got != "host/udp host/rr same-node/udp same-node/rr service/udp service/rr" {
		t.Errorf("order %s", got)
	}
	one := plan(c, placement{ClientNode: "a", SingleNodeReason: "only one node"})
	for _, cs := range one {
		if (cs.Path == scenario.CNIPathSameNode) != (cs.SkipReason == "") {
			t.Errorf("%s skip reason %q", cs.id(), cs.SkipReason)
		}
	}
	withTool := withRRTool(two, nettool.ToolBuiltin)
	for _, cs := range withTool {
		want := nettool.ToolIperf3
		if cs.Test == scenario.CNITestRR {
			want = nettool.ToolBuiltin
		}
		if cs.Tool != want {
			t.Errorf("%s tool %q", cs.id(), cs.Tool)
		}
	}
	if two[1].Tool != "" {
		t.Error("WithRRTool modified its input")
	}
	if got := two[0].sampleID(2); got != "host/udp/2" {
		t.Errorf("SampleID %s", got)
	}
}
