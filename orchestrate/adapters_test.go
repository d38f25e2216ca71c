package orchestrate

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
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
	if _, ok := targetFacts(boa, scenario.Topology{Name: "single"}, target.Target{})["chain-depth"]; ok {
		t.Error("bank-of-anthos case has a chain-depth fact")
	}
}

// TestAppCacheLifetime: the readiness wait's cache goes only to the verification of the same app; a failed wait
// (no verification follows), a teardown or another app's verification stops it, so no informer runs on into a
// measured window.
func TestAppCacheLifetime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := scaleLayouts[0]
	tg := scaleTarget(l)
	kc := scaleCluster(l, tg, scenario.ModeNone)
	cache := &appCache{kc: kc}
	wa := &workloadsAdapter{d: &workloads.Deployer{Clients: &kube.Clients{Kube: kc}, RunID: scaleRun}, timeout: time.Minute, cache: cache}
	held := func() *target.Cache {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		return cache.c
	}
	if err := wa.WaitReady(ctx, tg); err != nil {
		t.Fatal(err)
	}
	if held() == nil {
		t.Fatal("a successful wait keeps no cache for the verification")
	}
	if got, want := len(wa.PodStartups()), tg.ExpectedPods(); got != want {
		t.Errorf("a successful wait reports the start of %d pods, want every app pod (%d)", got, want)
	}
	other := tg
	other.Namespaces = []string{"elsewhere"}
	if c := cache.take(other); c != nil || held() != nil {
		t.Errorf("another app's verification got the cache (%v) or it is still held (%v)", c != nil, held() != nil)
	}
	if err := wa.WaitReady(ctx, tg); err != nil {
		t.Fatal(err)
	}
	if err := wa.Teardown(ctx, tg); err != nil {
		t.Fatal(err)
	}
	if held() != nil {
		t.Error("the teardown left the cache running")
	}
	// A wait that fails: a workload that never appears.
	missing := tg
	missing.Workloads = append(slices.Clone(tg.Workloads), target.WorkloadRef{Kind: target.KindDeployment, Namespace: tg.Namespaces[0], Name: "absent", Replicas: 1})
	wa.timeout = 300 * time.Millisecond
	if err := wa.WaitReady(ctx, missing); err == nil {
		t.Fatal("the wait for a missing workload succeeded")
	}
	if held() != nil {
		t.Error("a failed wait left its cache running (no verification follows it)")
	}
}
