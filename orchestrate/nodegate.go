package orchestrate

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// nodeGate puts target.NodeGate behind the runner's NodeGate.
type nodeGate struct{ g target.NodeGate }

// newNodeGate is the gate of a run of s whose load clients clients selects: the app's pods must land on nodes
// matching spec.workload.nodeSelector, except for app existing, whose pods meshbench does not place.
func newNodeGate(kc kubernetes.Interface, s *scenario.Scenario, clients string) nodeGate {
	g := target.NodeGate{Kube: kc, Clients: clients, Probe: func(ctx context.Context, name string) error {
		return target.KubeletProbe(ctx, kc, name)
	}}
	if s.Spec.Workload.App != scenario.AppExisting {
		g.Selector = s.Spec.Workload.NodeSelector
	}
	return nodeGate{g: g}
}

func (n nodeGate) Check(ctx context.Context, t *target.Target, nodes []string) runner.NodeCheck {
	c := n.g.Check(ctx, t, nodes)
	return runner.NodeCheck{Recovered: c.Recovered, Skip: c.Skip, Node: c.Node}
}
