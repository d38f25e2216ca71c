package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const enforcementBase = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: enforce}
spec:
  workload: {app: fortio-chain}
  modes: [none, sidecar, waypoint]
  load: {qps: [100]}
  windows: {repetitions: 2}
`

func TestEnforceCases(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(enforcementBase + "  enforcement: {modes: [sidecar, waypoint], hold: 20s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range NewPlan(s).Cases {
		if c.Kind != CaseEnforce {
			continue
		}
		ids = append(ids, c.ID)
		if pol := c.Policy; pol.Enforce == nil || pol.Enforce.Before != 20*time.Second || pol.Enforce.Hold != 20*time.Second || pol.Load == nil ||
			!pol.Load.PerSecond || !pol.Load.DeniedSlice || pol.Load.Window != 70*time.Second {
			t.Errorf("%s: policy %+v enforce %+v load %+v", c.ID, pol, pol.Enforce, pol.Load)
		}
	}
	want := []string{"single.sidecar.enforce.q100.r1", "single.waypoint.enforce.q100.r1", "single.sidecar.enforce.q100.r2", "single.waypoint.enforce.q100.r2"}
	if !slices.Equal(ids, want) {
		t.Errorf("enforce cases %q, want %q", ids, want)
	}
}

func TestEnforcementRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, path, want string }{
		{"  enforcement: {modes: [ambient]}\n", "spec.enforcement.modes[0]", "enforces no L7 rule"},
		{"  enforcement: {modes: [none]}\n", "spec.enforcement.modes[0]", "enforces no L7 rule"},
		{"  enforcement: {modes: [sidecar, sidecar]}\n", "spec.enforcement.modes[1]", "twice"},
		{"  waypoint: {scope: shared}\n  enforcement: {modes: [waypoint]}\n", "spec.enforcement.modes[0]", "set waypoint.scope per-namespace"},
		{"  enforcement: {modes: [sidecar], hold: 1s}\n", "spec.enforcement.hold", "at least 5s"},
		{"  enforcement: {modes: [sidecar], qps: max}\n", "spec.enforcement.qps", "must be a rate"},
	} {
		_, err := Parse([]byte(enforcementBase + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %s: ...%s", strings.TrimSpace(tc.yaml), err, tc.path, tc.want)
		}
	}
	if _, err := Parse([]byte(strings.Replace(enforcementBase, "[none, sidecar, waypoint]", "[none, waypoint]", 1) + "  enforcement: {modes: [sidecar]}\n")); err == nil || !strings.Contains(err.Error(), "not in spec.modes") {
		t.Errorf("a mode not in spec.modes: %v", err)
	}
}
