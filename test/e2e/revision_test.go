//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/results"
)

// TestIstioRevisionCanary runs meshbench against istiod installed under a revision with NO default
// (make istio-up ISTIO_CP_REVISION=canary: istiod-canary, injector istio-sidecar-injector-canary, no revision tag), the
// install that broke every mode before: sidecar mode labelled istio-injection=enabled (which reaches no injector),
// and the waypoint Gateway carried no istio.io/rev (so no istiod took it and it was never Programmed). Preflight and
// run must find the revision themselves, inject, enrol and program a waypoint, and record the revision in run.json.
func TestIstioRevisionCanary(t *testing.T) {
	env := RequireIstioRevision(t)
	c := env.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	// The install really has no default: no webhook serves istio-injection=enabled.
	whs, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, wh := range whs.Items {
		for _, w := range wh.Webhooks {
			if w.Name == "namespace.sidecar-injector.istio.io" {
				t.Fatalf("MutatingWebhookConfiguration %s serves istio-injection=enabled: the install has a default", wh.Name)
			}
		}
	}

	const prefix = "mb-rev-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	path := quickstartVariant(t, "revision", func(spec map[string]any) {
		spec["modes"] = []string{"sidecar", "ambient", "waypoint"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		spec["load"].(map[string]any)["qps"] = []int{100}
		spec["windows"] = map[string]any{"idle": "10s", "load": "20s", "repetitions": 1, "settle": "2s"}
	})
	work := t.TempDir()

	stdout, stderr, code := runCLI(ctx, t, c, work, "preflight", "-f", path, "--prometheus-url", c.PrometheusURL)
	if code != 0 || !strings.Contains(stdout, "revision "+env.Revision+" (the only control plane): sidecar mode labels istio.io/rev="+env.Revision) {
		t.Fatalf("preflight exited %d; want the revision found and used:\n%s\n%s", code, stdout, tail(stderr, 2000))
	}
	for _, want := range []string{"istio-revision", "mtls", "gateway-api", "image meshbench-agent"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("preflight lists no %q check:\n%s", want, stdout)
		}
	}

	run, _ := runScenario(ctx, t, c, path)
	if ist := run.Meta.Cluster.Istio; ist == nil || ist.Revision != env.Revision || ist.RevisionSource != "the only control plane" {
		t.Errorf("run.json istio facts %+v: want revision %s", ist, env.Revision)
	}
	idx := indexSamples(run.Samples)
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK {
			t.Errorf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if cs.Facts["verified-pods"] != "3" || cs.Facts["istio-revision"] != env.Revision || cs.Facts["mtls"] == "" {
			t.Errorf("case %s: facts %v: want 3 verified pods, revision %s and the mTLS mode", cs.CaseID, cs.Facts, env.Revision)
		}
		if q := idx[cs.CaseID+"|load|loadgen|qps|value"]; q < 90 || q > 105 {
			t.Errorf("case %s: achieved %.1f qps for 100 (traffic must flow in every mode)", cs.CaseID, q)
		}
		if idx[cs.CaseID+"|load|istiod|cpu|avg"] <= 0 {
			t.Errorf("case %s: no CPU of istiod-%s", cs.CaseID, env.Revision)
		}
		switch cs.Mode {
		case "waypoint":
			// Programmed and available (the proof), and measured: its pods found by gateway-name.
			if cs.Facts["waypoints"] != "1" || idx[cs.CaseID+"|load|waypoint|memory|avg"] <= 0 {
				t.Errorf("case %s: waypoint not verified or not measured: facts %v", cs.CaseID, cs.Facts)
			}
		case "sidecar":
			if idx[cs.CaseID+"|load|sidecar|memory|avg"] <= 0 {
				t.Errorf("case %s: no sidecar memory: injection by istiod-%s did not happen", cs.CaseID, env.Revision)
			}
		}
		if cs.Mode != "waypoint" && idx[cs.CaseID+"|load|waypoint|memory|avg"] > 0 {
			t.Errorf("case %s: waypoint figures outside waypoint mode", cs.CaseID)
		}
	}
	if len(run.Cases) != 3 {
		t.Errorf("%d cases, want sidecar, ambient, waypoint", len(run.Cases))
	}
}
