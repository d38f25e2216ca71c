package orchestrate

import (
	"testing"

	"github.com/meshbench/meshbench/runner"
)

// The pod network's adapters implement only what the pod network does: no rollout wait (Deploy waits for its pods
// and servers) and no load clients (the samples run in the test pods), so the runner takes no such step for a cni
// case and records no timing of one.
func TestCNIAdaptersAreNarrow(t *testing.T) {
	t.Parallel()
	var w runner.Workloads = cniWorkloads{}
	if _, ok := w.(runner.ReadyWaiter); ok {
		t.Error("cniWorkloads is a runner.ReadyWaiter: the runner would time a wait-ready step that waits for nothing")
	}
	var l runner.LoadGenerator = cniLoad{}
	if _, ok := l.(runner.LoadClients); ok {
		t.Error("cniLoad is a runner.LoadClients: the runner would time a load-clients step that places nothing")
	}
}
