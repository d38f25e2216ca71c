//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// These tests drive meshbench's own mesh.Switcher and workloads.Deployer against the local REAL Istio control plane
// (hack/localistio: istiod with its injector and waypoint controller, istio-cni node agents) whose data plane is
// stand-ins (proxyv2 and ztunnel test doubles). They need `make istio-up` (or `make cluster-up ISTIO=1`); without it
// they skip, and with MESHBENCH_E2E_ISTIO=1 (make e2e-istio) they fail.

// modeTour visits every ordered pair of distinct modes exactly once (an Eulerian circuit of the complete directed
// graph on none, sidecar, ambient, waypoint): 12 transitions, starting and ending at none.
var modeTour = []scenario.Mode{
	scenario.ModeNone, scenario.ModeSidecar, scenario.ModeAmbient, scenario.ModeWaypoint,
	scenario.ModeNone, scenario.ModeAmbient, scenario.ModeSidecar, scenario.ModeWaypoint,
	scenario.ModeAmbient, scenario.ModeNone, scenario.ModeWaypoint, scenario.ModeSidecar, scenario.ModeNone,
}

// recipeSeconds are the switch times the local-Istio recipe measured with kubectl on 2 cores (label + rollout
// restart + rollout status), for comparison.
var recipeSeconds = map[string]string{"sidecar->ambient": "2.7", "ambient->sidecar": "5.0", "sidecar->none": "3.0"}

type switchTiming struct {
	topology, from, to            string
	apply, total, labelToVerified time.Duration
	verify                        time.Duration
	restarted, ztunnelForwarded   int
}

func TestIstioModeSwitches(t *testing.T) {
	e := RequireIstio(t)
	seen := map[[2]scenario.Mode]bool{}
	for i := 1; i < len(modeTour); i++ {
		seen[[2]scenario.Mode{modeTour[i-1], modeTour[i]}] = true
	}
	if len(seen) != 12 || len(modeTour) != 13 {
		t.Fatalf("mode tour covers %d distinct transitions, want 12", len(seen))
	}
	for _, multi := range []bool{false, true} {
		name := "single"
		if multi {
			name = "multi3"
		}
		t.Run(name, func(t *testing.T) {
			timings := e.runTour(t, "mbi"+name[:1]+"-"+e.RunID[len(e.RunID)-6:], multi)
			printTimings(t, name, timings)
		})
	}
}

// runTour deploys the chain (in none) and walks modeTour; after every switch mesh.Verify must pass, the real Istio
// components must have done the work, and a request must get through the whole chain.
func (e *IstioEnv) runTour(t *testing.T, prefix string, multi bool) []switchTiming {
	s, target := e.deployChain(t, prefix, multi)
	sw := &mesh.Switcher{Clients: e.Clients, RunID: e.RunID, Timeout: 3 * time.Minute}
	wp := s.Spec.Waypoint
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	t.Logf("fortio-chain %s: namespaces %v, services %v, entry %s", target.Topology, target.Namespaces, target.Services, target.EntryURL)

	if v, err := sw.Verify(ctx, target, scenario.ModeNone, wp, time.Minute); err != nil {
		t.Fatalf("fresh app is not in mode none: %v", err)
	} else if len(v.Pods) != target.ExpectedPods() {
		t.Fatalf("verified %d pods, want %d", len(v.Pods), target.ExpectedPods())
	}
	var out []switchTiming
	for i := 1; i < len(modeTour); i++ {
		from, to := modeTour[i-1], modeTour[i]
		ok := t.Run(fmt.Sprintf("%02d-%s-to-%s", i, from, to), func(t *testing.T) {
			fwdBefore, _ := e.ztunnelForwarded(ctx)
			applyStart := time.Now()
			tr, err := sw.Apply(ctx, target, to, wp)
			applied := time.Since(applyStart)
			if err != nil {
				t.Fatalf("apply %s: %v", to, err)
			}
			if tr.From != from {
				t.Errorf("transition from %q, want %q", tr.From, from)
			}
			v, err := sw.Verify(ctx, target, to, wp, 2*time.Minute)
			if err != nil {
				t.Fatalf("verify %s: %v", to, err)
			}
			// What the pods show, per component: the sidecar and the waypoint are real Envoy, ztunnel is the Go
			// HBONE node proxy (a stand-in).
			want := map[results.Component]results.DataPlaneKind{}
			for _, comp := range mesh.ComponentsOfMode(to) {
				want[comp] = results.DataPlaneStandIn
			}
			for _, comp := range []results.Component{results.ComponentSidecar, results.ComponentWaypoint} {
				if _, ok := want[comp]; ok {
					want[comp] = results.DataPlaneUpstreamEnvoy
				}
			}
			if !maps.Equal(v.DataPlanes, want) && (len(want) > 0 || len(v.DataPlanes) > 0) {
				t.Errorf("verification of %s saw data planes %v, want %v", to, v.DataPlanes, want)
			}
			if to == scenario.ModeSidecar {
				// Real Envoy took its config from istiod: every sampled proxy has accepted listeners and clusters.
				if len(v.ProxyConfig) != target.ExpectedPods() {
					t.Errorf("proxy config read on %d proxies, want all %d app pods", len(v.ProxyConfig), target.ExpectedPods())
				}
				for _, p := range v.ProxyConfig {
					if p.ReadError != "" || p.Stats[mesh.LDSSuccess] < 1 || p.Stats[mesh.CDSSuccess] < 1 || len(p.Rejected()) > 0 {
						t.Errorf("proxy %s/%s: %s", p.Namespace, p.Name, p.Describe())
					}
				}
			}
			if err := e.realIstioEvidence(ctx, target, to); err != nil {
				t.Fatalf("mode %s verified, but not by the real Istio components:\n  %v", to, err)
			}
			msg, err := e.chainTraffic(ctx, target)
			if err != nil {
				t.Fatalf("traffic through the chain after switching to %s: %v", to, err)
			}
			fwdAfter, ferr := e.ztunnelForwarded(ctx)
			if mesh.UsesAmbient(to) {
				// The request left a captured pod: the ztunnel stand-in must have forwarded it (capture is real).
				if ferr != nil || fwdAfter <= fwdBefore {
					t.Errorf("in %s mode the ztunnel stand-ins forwarded %d -> %d connections (err %v): traffic was not captured", to, fwdBefore, fwdAfter, ferr)
				}
			}
			timings := tr.Timings(&v)
			ltv, _ := time.ParseDuration(timings["label-to-verified"])
			// NB: measured here, not from tr.Start/tr.End (Apply sets tr.End in a defer, after its value was returned).
			total := v.End.Sub(applyStart)
			out = append(out, switchTiming{topology: target.Topology, from: string(from), to: string(to),
				apply: applied, total: total, labelToVerified: ltv, verify: v.Elapsed,
				restarted: len(tr.Restarted), ztunnelForwarded: fwdAfter - fwdBefore})
			t.Logf("%s -> %s: apply %s (steps %s), verify %s, label->verified %s, apply->verified %s, restarted %d; %s; ztunnel stand-ins forwarded %d connections",
				from, to, applied.Round(time.Millisecond), stepsString(tr), v.Elapsed.Round(time.Millisecond),
				timings["label-to-verified"], total.Round(time.Millisecond), len(tr.Restarted), msg, fwdAfter-fwdBefore)
		})
		if !ok {
			t.Fatalf("stopping the tour after a failed transition %s -> %s", from, to)
		}
	}
	return out
}

func stepsString(tr mesh.Transition) string {
	parts := make([]string, 0, len(tr.Steps))
	for _, s := range tr.Steps {
		parts = append(parts, fmt.Sprintf("%s %s", s.Name, s.Elapsed().Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

func printTimings(t *testing.T, topology string, ts []switchTiming) {
	var b strings.Builder
	fmt.Fprintf(&b, "mode-switch times, fortio-chain %s (apply = mesh.Switcher.Apply incl. waypoint creation and rollouts;\n"+
		"  label->verified = first namespace label change until mesh.Verify passed; total = Apply start until verified;\n"+
		"  recipe = kubectl label + rollout restart + rollout status of one Deployment on 2 cores):\n", topology)
	fmt.Fprintf(&b, "  %-20s %8s %14s %8s %9s %8s\n", "transition", "apply", "label->verified", "total", "restarts", "recipe")
	for _, s := range ts {
		tr := s.from + "->" + s.to
		rec := recipeSeconds[tr]
		if rec != "" {
			rec += "s"
		}
		fmt.Fprintf(&b, "  %-20s %7.2fs %14.2fs %7.2fs %9d %8s\n", tr, s.apply.Seconds(), s.labelToVerified.Seconds(), s.total.Seconds(), s.restarted, rec)
	}
	t.Log(b.String())
	fmt.Print(b.String()) // also on stdout for CI logs without -v
}

// TestIstioNegativeIstiodDown: with istiod stopped (scaled to 0) a switch to sidecar cannot inject anything, and
// mesh.Verify must fail naming the pods. istiod is restored afterwards and the same switch then verifies.
func TestIstioNegativeIstiodDown(t *testing.T) {
	e := RequireIstio(t)
	s, target := e.deployChain(t, "mbin-"+e.RunID[len(e.RunID)-6:], false)
	wp := s.Spec.Waypoint
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	restored := false
	t.Cleanup(func() {
		if !restored {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := e.scaleIstiod(ctx, 1); err != nil {
				t.Errorf("restore istiod: %v", err)
			}
		}
	})
	if err := e.scaleIstiod(ctx, 0); err != nil {
		t.Fatalf("stop istiod: %v", err)
	}
	t.Log("istiod scaled to 0")
	sw := &mesh.Switcher{Clients: e.Clients, RunID: e.RunID, Timeout: 40 * time.Second}
	_, applyErr := sw.Apply(ctx, target, scenario.ModeSidecar, wp)
	t.Logf("apply sidecar without istiod: %v", applyErr) // the rollout cannot finish: pod creation is refused by the webhook
	// 33s, not 30s: mesh.Verify re-checks every 5s, and a re-check cut off by the deadline currently replaces the
	// last good snapshot with an empty one (reported to the mesh owner); off the 5s grid that cannot happen.
	_, err := sw.Verify(ctx, target, scenario.ModeSidecar, wp, 33*time.Second)
	var ve *mesh.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("verify sidecar without istiod: got %v, want a *mesh.VerifyError", err)
	}
	if len(ve.Verification.Pods) != target.ExpectedPods() {
		t.Errorf("the failed verification holds %d pods, want all %d app pods", len(ve.Verification.Pods), target.ExpectedPods())
	}
	t.Logf("verify sidecar without istiod failed as it must:\n%v", err)
	named := 0
	for _, p := range ve.Verification.Pods {
		if !p.Proved && strings.Contains(err.Error(), "pod "+p.Namespace+"/"+p.Name) {
			named++
		}
	}
	if named == 0 {
		t.Errorf("the verification error names none of the unproved pods")
	}

	if err := e.scaleIstiod(ctx, 1); err != nil {
		t.Fatalf("restore istiod: %v", err)
	}
	restored = true
	sw.Timeout = 3 * time.Minute
	if _, err := sw.Apply(ctx, target, scenario.ModeSidecar, wp); err != nil {
		t.Fatalf("apply sidecar after istiod is back: %v", err)
	}
	if _, err := sw.Verify(ctx, target, scenario.ModeSidecar, wp, 2*time.Minute); err != nil {
		t.Fatalf("verify sidecar after istiod is back: %v", err)
	}
	if err := e.realIstioEvidence(ctx, target, scenario.ModeSidecar); err != nil {
		t.Fatal(err)
	}
	t.Log("istiod restored: the sidecar switch verifies again")
}

// TestIstioNegativeZtunnelDown: with the ztunnel stand-in stopped on every node, the real istio-cni agents capture
// the pods but cannot hand them to a ztunnel, so ambient stays pending; mesh.Verify must report exactly that. With
// ztunnel back, the same pods become enabled without a restart.
func TestIstioNegativeZtunnelDown(t *testing.T) {
	e := RequireIstio(t)
	s, target := e.deployChain(t, "mbiz-"+e.RunID[len(e.RunID)-6:], false)
	wp := s.Spec.Waypoint
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	restored := false
	t.Cleanup(func() {
		if !restored {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := e.setZtunnel(ctx, true); err != nil {
				t.Errorf("restore ztunnel: %v", err)
			}
		}
	})
	if err := e.setZtunnel(ctx, false); err != nil {
		t.Fatalf("stop the ztunnel stand-in: %v", err)
	}
	t.Log("ztunnel stand-in stopped on every node")
	sw := &mesh.Switcher{Clients: e.Clients, RunID: e.RunID, Timeout: time.Minute}
	if _, err := sw.Apply(ctx, target, scenario.ModeAmbient, wp); err != nil {
		t.Fatalf("apply ambient: %v", err)
	}
	v, err := sw.Verify(ctx, target, scenario.ModeAmbient, wp, 33*time.Second) // 33s: see TestIstioNegativeIstiodDown
	var ve *mesh.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("verify ambient without ztunnel: got %v, want a *mesh.VerifyError", err)
	}
	t.Logf("verify ambient without ztunnel failed as it must:\n%v", err)
	if len(v.Pods) != target.ExpectedPods() {
		t.Errorf("the failed verification holds %d pods, want all %d app pods", len(v.Pods), target.ExpectedPods())
	}
	for _, p := range v.Pods {
		if p.Observed != mesh.ObservedAmbientPending {
			t.Errorf("pod %s/%s observed %q, want %q", p.Namespace, p.Name, p.Observed, mesh.ObservedAmbientPending)
		}
	}
	if !strings.Contains(err.Error(), "pending") {
		t.Errorf("the error does not say the pods are pending: %v", err)
	}

	if err := e.setZtunnel(ctx, true); err != nil {
		t.Fatalf("restore the ztunnel stand-in: %v", err)
	}
	restored = true
	start := time.Now()
	if _, err := sw.Verify(ctx, target, scenario.ModeAmbient, wp, 2*time.Minute); err != nil {
		t.Fatalf("verify ambient after ztunnel is back: %v", err)
	}
	t.Logf("ztunnel restored: pending -> enabled in %s, no restart", time.Since(start).Round(time.Millisecond))
	if msg, err := e.chainTraffic(ctx, target); err != nil {
		t.Fatal(err)
	} else {
		t.Log(msg)
	}
}
