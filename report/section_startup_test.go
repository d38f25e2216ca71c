package report

import (
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestStartupSectionGolden: the pods each mode's switches started, pooled over repetitions, as distributions per
// phase in the modes' order; a mode whose switches started no pod has no row, a run without any has no section.
func TestStartupSectionGolden(t *testing.T) {
	t.Parallel()
	pod := func(uid string, redirected bool, s map[results.StartupPhase]float64) results.PodStartup {
		return results.PodStartup{Pod: "mb-single/" + uid, UID: uid, Seconds: s, Redirected: redirected}
	}
	plain := func(uid string, ready float64) results.PodStartup {
		return pod(uid, false, map[results.StartupPhase]float64{results.PhaseScheduled: 0, results.PhaseInitialized: 1, results.PhaseContainersStarted: 2, results.PhaseReady: ready})
	}
	sidecar := func(uid string, proxy, ready float64) results.PodStartup {
		return pod(uid, false, map[results.StartupPhase]float64{results.PhaseScheduled: 0, results.PhaseInitialized: 2, results.PhaseProxyStarted: proxy, results.PhaseContainersStarted: proxy + 2, results.PhaseReady: ready})
	}
	ambient := func(uid string, ready float64) results.PodStartup {
		p := plain(uid, ready)
		p.Redirected = true
		return p
	}
	r := Report{Cases: []results.CaseResult{
		{CaseID: "single.sidecar.q50.r1", Mode: results.ModeSidecar, PodStartups: []results.PodStartup{sidecar("s1", 3, 6), sidecar("s2", 4, 8)}},
		{CaseID: "single.sidecar.q200.r1", Mode: results.ModeSidecar},
		{CaseID: "single.none.q50.r1", Mode: results.ModeNone, PodStartups: []results.PodStartup{plain("n1", 3), plain("n2", 4), plain("n3", 3)}},
		{CaseID: "single.ambient.q50.r1", Mode: results.ModeAmbient, PodStartups: []results.PodStartup{ambient("a1", 3), ambient("a2", 5)}},
		{CaseID: "single.waypoint.q50.r1", Mode: results.ModeWaypoint},
		{CaseID: "single.sidecar.q50.r2", Mode: results.ModeSidecar, PodStartups: []results.PodStartup{sidecar("s3", 3, 7)}},
	}}
	text, missing := r.Text(sectionStartup)
	if len(missing) > 0 {
		t.Fatalf("no startup section: %v", missing)
	}
	golden(t, "startup/startup.txt", text)
	if _, ok := (Report{Cases: []results.CaseResult{{CaseID: "x", Mode: results.ModeNone}}}).startupSection(); ok {
		t.Error("a run without pod starts has a startup section")
	}
}
