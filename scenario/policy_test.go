package scenario

import (
	"testing"
	"time"
)

// NewPlan gives every mesh case the policy the runner follows: the settle, the idle window on the first load level
// of each (topology, mode, repetition) only, the load around windows.load (cool-down: trimEnd or the rest of
// load.duration, whichever is longer), windows.attempts (at least 1), named by mode, topology, load and repetition.
func TestNewPlanCasePolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, load, windows string
		wantCoolDown        time.Duration
		wantAttempts        int
	}{
		{name: "trimEnd longer than the rest", load: "{qps: [50, 200], warmUp: 10s, trimEnd: 2s}",
			windows: "{idle: 20s, load: 30s, repetitions: 2, settle: 5s}", wantCoolDown: 2 * time.Second, wantAttempts: 2}, // windows.attempts defaults to 2
		{name: "the rest of load.duration", load: "{qps: [50, 200], warmUp: 10s, trimStart: 5s, trimEnd: 2s, duration: 60s}",
			windows: "{idle: 20s, load: 30s, repetitions: 2, settle: 5s, attempts: 3}", wantCoolDown: 15 * time.Second, wantAttempts: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: policy}
spec:
  profile: localcluster
  workload: {app: fortio-chain}
  modes: [none, ambient]
  load: `+tc.load+`
  windows: `+tc.windows+`
  prometheus: {url: "http://127.0.0.1:19090"}
`)
			p := NewPlan(s)
			if len(p.Cases) != 8 {
				t.Fatalf("%d cases", len(p.Cases))
			}
			l := s.Spec.Load
			for _, c := range p.Cases {
				pol := c.Policy
				wantIdle := time.Duration(0)
				if c.Idle {
					wantIdle = 20 * time.Second
				}
				if pol.Settle != 5*time.Second || pol.Idle != wantIdle || pol.Attempts != tc.wantAttempts || !pol.Named || pol.Facts != nil {
					t.Errorf("%s: policy %+v", c.ID, pol)
				}
				want := LoadPolicy{Window: 30 * time.Second, WarmUp: l.WarmUp.Duration, TrimStart: l.TrimStart.Duration, CoolDown: tc.wantCoolDown}
				if pol.Load == nil || *pol.Load != want {
					t.Errorf("%s: load %+v, want %+v", c.ID, pol.Load, want)
				}
			}
			if p.Cases[0].Policy.Load == p.Cases[1].Policy.Load {
				t.Error("cases share one LoadPolicy: a change to one would change every case")
			}
		})
	}
}
