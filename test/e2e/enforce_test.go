//go:build e2e

package e2e

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/results"
)

// TestRunEnforceSidecarAndWaypoint measures the time to enforce a deny policy (spec.enforcement) with real
// pilot-agent + upstream Envoy sidecars and waypoint on the local cluster: in each mode the denied slice of the load
// is refused while the policy holds and let through after it, the allowed slice never, and both delays are short.
func TestRunEnforceSidecarAndWaypoint(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-enforce-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	path := quickstartVariant(t, "enforce", func(spec map[string]any) {
		spec["modes"] = []string{"sidecar", "waypoint"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		spec["load"].(map[string]any)["qps"] = []int{50}
		spec["windows"] = map[string]any{"idle": "10s", "load": "15s", "repetitions": 1, "settle": "2s"}
		spec["enforcement"] = map[string]any{"modes": []string{"sidecar", "waypoint"}, "before": "10s", "hold": "20s", "after": "15s"}
	})
	run, _ := runScenario(ctx, t, c, path)
	seen := map[results.Mode]bool{}
	for _, cs := range run.Cases {
		e := cs.Enforcement
		if e == nil {
			continue
		}
		seen[e.Mode] = true
		if cs.Status != results.StatusOK {
			t.Errorf("%s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if d := e.Removed.Sub(e.Applied); d < 20*time.Second || d > 25*time.Second {
			t.Errorf("%s: the policy held %s, want 20 s", cs.CaseID, d)
		}
		var refused, denied int64
		for _, s := range e.Denied {
			denied += s.Requests
			refused += s.Errors["403"]
		}
		f := e.Figures()
		t.Logf("%s: %d of %d denied-slice requests refused; figures %+v", cs.CaseID, refused, denied, f)
		if refused < denied/4 || refused == denied {
			t.Errorf("%s: %d of %d denied-slice requests refused, want those of the 20 s hold in a 45 s load", cs.CaseID, refused, denied)
		}
		for _, v := range []float64{f.FirstEnforced, f.AllEnforced, f.FirstLifted, f.AllLifted} {
			if math.IsNaN(v) || v > 15 {
				t.Errorf("%s: figures %+v: every change should show within 15 s", cs.CaseID, f)
				break
			}
		}
		if f.AllowedErrors != 0 {
			t.Errorf("%s: %d errors in the allowed slice", cs.CaseID, f.AllowedErrors)
		}
	}
	if !seen[results.ModeSidecar] || !seen[results.ModeWaypoint] {
		t.Errorf("enforce cases in %v, want sidecar and waypoint", seen)
	}
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "Time to enforce") {
		t.Errorf("report.md lacks the time to enforce (err %v)", err)
	}
	gvr := schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}
	if l, err := env.Clients.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: kube.RunSelector("")}); err != nil || len(l.Items) > 0 {
		t.Errorf("deny policies left behind: %v (%v)", l, err)
	}
}
