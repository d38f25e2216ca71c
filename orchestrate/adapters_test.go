package orchestrate

import (
	"testing"

	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// TestTargetFactsChainDepth: a fortio-chain case records its topology's chain depth (the topology's chainDepth, else
// workload.chain.depth) as fact chain-depth; another app records none.
func TestTargetFactsChainDepth(t *testing.T) {
	t.Parallel()
	s, err := scenario.Load("../examples/chain-depth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"1", "2", "4"} {
		topo := s.Spec.Workload.Topologies[i]
		_, tg, err := workloads.Objects(s, topo, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if got := targetFacts(s.Spec.Workload, topo, tg)["chain-depth"]; got != want {
			t.Errorf("%s: chain-depth %q, want %q", topo.Name, got, want)
		}
	}
	boa := scenario.Workload{App: scenario.AppBankOfAnthos}
	if _, ok := targetFacts(boa, scenario.Topology{Name: "single"}, workloads.Target{})["chain-depth"]; ok {
		t.Error("bank-of-anthos case has a chain-depth fact")
	}
}
