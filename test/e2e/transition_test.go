//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// TestRunTransitionSidecarToAmbient moves the fortio chain from sidecar (real pilot-agent + upstream Envoy) to ambient
// while a 50 qps load runs (spec.transitions), on the local cluster with real istiod and istio-cni: the case records
// the move's phases in order inside the load, a per-second record covering the whole load, the pods the move started
// (redirected by istio-cni), and the report shows the move.
func TestRunTransitionSidecarToAmbient(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-move-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	path := quickstartVariant(t, "move", func(spec map[string]any) {
		spec["modes"] = []string{"sidecar", "ambient"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		spec["load"].(map[string]any)["qps"] = []int{50}
		spec["windows"] = map[string]any{"idle": "10s", "load": "15s", "repetitions": 1, "settle": "2s"}
		spec["transitions"] = map[string]any{"moves": []any{map[string]any{"from": "sidecar", "to": "ambient"}}, "before": "10s", "budget": "60s", "after": "15s"}
	})
	run, _ := runScenario(ctx, t, c, path)
	i := slices.IndexFunc(run.Cases, func(cs results.CaseResult) bool { return cs.Transition != nil })
	if i < 0 || len(run.Cases) != 3 {
		t.Fatalf("cases %d, want 2 mesh cases and the move", len(run.Cases))
	}
	cs := run.Cases[i]
	tr := cs.Transition
	if cs.Status != results.StatusOK || cs.CaseID != "single.sidecar-to-ambient.q50.r1" || tr.From != results.ModeSidecar || tr.To != results.ModeAmbient {
		t.Fatalf("move case %s: %s %s, %s -> %s", cs.CaseID, cs.Status, cs.Reason, tr.From, tr.To)
	}
	// Phases in order, inside the load's record.
	var phases []string
	for j, m := range tr.Phases {
		phases = append(phases, string(m.Phase)+" "+m.At.Format("15:04:05.000"))
		if j > 0 && m.At.Before(tr.Phases[j-1].At) {
			t.Errorf("phase %s before %s", m.Phase, tr.Phases[j-1].Phase)
		}
	}
	if len(tr.Phases) != 4 || tr.Phases[3].Phase != results.PhaseModeVerified {
		t.Fatalf("phases %q, want the move started, applied, ready and verified", phases)
	}
	secs := tr.Seconds
	if len(secs) < 80 || len(secs) > 90 {
		t.Errorf("%d seconds recorded for an 85 s load", len(secs))
	}
	var requests int64
	for j, s := range secs {
		requests += s.Requests
		if j > 0 && !s.Start.Equal(secs[j-1].Start.Add(time.Second)) {
			t.Errorf("second %d at %s after %s: not contiguous", j, s.Start, secs[j-1].Start)
		}
	}
	if requests < 50*80 || requests > 50*87 {
		t.Errorf("%d requests in the record of 85 s at 50 qps", requests)
	}
	first, last := secs[0].Start, secs[len(secs)-1].Start.Add(time.Second)
	if start := tr.Phases[0].At; start.Sub(first) < 8*time.Second || start.Sub(first) > 13*time.Second || tr.Phases[3].At.After(last) {
		t.Errorf("the move (%s .. %s) is not 10 s into the load's record (%s .. %s)", start, tr.Phases[3].At, first, last)
	}
	f := tr.Figures()
	t.Logf("phases %q; figures %+v", phases, f)
	// The move restarted the chain's 3 pods without sidecars; istio-cni redirected them.
	if len(cs.PodStartups) != 3 {
		t.Errorf("%d pod starts recorded in the move, want the chain's 3", len(cs.PodStartups))
	}
	for _, p := range cs.PodStartups {
		if !p.Redirected {
			t.Errorf("pod %s started in the move was not redirected", p.Pod)
		}
	}
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "Migration under load") || !strings.Contains(string(md), "| sidecar → ambient | 1 |") {
		t.Errorf("report.md lacks the move (err %v)", err)
	}
}
