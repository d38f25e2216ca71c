package orchestrate

import (
	"context"
	"testing"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// TestRunDataPlane: a run's data-plane kind is the least representative of the components its modes run, not of
// every component the cluster has (make bench-envoy, none and sidecar on the test bed, was titled "test stand-in"
// for the ztunnel stand-in no case used).
func TestRunDataPlane(t *testing.T) {
	t.Parallel()
	testBed := []results.ComponentDataPlane{
		{Component: results.ComponentSidecar, Kind: results.DataPlaneUpstreamEnvoy},
		{Component: results.ComponentZtunnel, Kind: results.DataPlaneStandIn},
		{Component: results.ComponentWaypoint, Kind: results.DataPlaneStandIn},
	}
	for _, c := range []struct {
		name  string
		dps   []results.ComponentDataPlane
		modes []scenario.Mode
		want  results.DataPlaneKind
	}{
		{"none and sidecar", testBed, []scenario.Mode{scenario.ModeNone, scenario.ModeSidecar}, results.DataPlaneUpstreamEnvoy},
		{"sidecar and ambient", testBed, []scenario.Mode{scenario.ModeSidecar, scenario.ModeAmbient}, results.DataPlaneStandIn},
		{"none only keeps what was recorded", testBed, []scenario.Mode{scenario.ModeNone}, results.DataPlaneStandIn},
		{"not recorded per component", nil, []scenario.Mode{scenario.ModeSidecar}, results.DataPlaneStandIn},
		{"a user's cluster", []results.ComponentDataPlane{{Component: results.ComponentSidecar, Kind: results.DataPlaneIstio}},
			[]scenario.Mode{scenario.ModeSidecar, scenario.ModeWaypoint}, results.DataPlaneIstio},
	} {
		ist := &results.IstioFacts{DataPlanes: c.dps, DataPlane: results.DataPlaneStandIn}
		if got := runDataPlane(ist, c.modes); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestReconcileOnlyAfterAnInjectionChange: a switch that did not change sidecar injection lists no pods again (the
// adapter has no Switcher here: a call would panic).
func TestReconcileOnlyAfterAnInjectionChange(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]scenario.Mode{{scenario.ModeAmbient, scenario.ModeWaypoint}, {scenario.ModeNone, scenario.ModeAmbient},
		{scenario.ModeSidecar, scenario.ModeSidecar}} {
		a := &meshAdapter{last: mesh.Transition{From: c[0]}}
		facts, restarted, err := a.Reconcile(context.Background(), target.Target{}, c[1])
		if facts != nil || restarted || err != nil {
			t.Errorf("%s -> %s: %v %v %v, want nothing done", c[0], c[1], facts, restarted, err)
		}
	}
}
