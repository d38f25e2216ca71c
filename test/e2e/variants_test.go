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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
)

// TestRunVariantsMTLSAndL7Rules measures variants (spec.variants) with real pilot-agent + upstream Envoy sidecars and
// waypoint on the local cluster: a STRICT vs PERMISSIVE pair on the sidecars and an L7 rule count sweep (1 and 100
// rules) on the waypoint, two repetitions interleaved with the plain modes. Every variant case is verified before
// it is measured (the proxies took the update, the mTLS mode is in effect, the waypoint refuses the probe path the
// L7 rules leave out), the load is unchanged by the rules
// (no errors), the summary compares each variant with its plain mode and the report says what each costs; nothing
// is left behind.
func TestRunVariantsMTLSAndL7Rules(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-variants-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	path := quickstartVariant(t, "variants", func(spec map[string]any) {
		spec["modes"] = []string{"sidecar", "waypoint"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		spec["load"].(map[string]any)["qps"] = []int{50}
		spec["windows"] = map[string]any{"idle": "10s", "load": "15s", "repetitions": 2, "settle": "2s"}
		spec["variants"] = []map[string]any{
			{"name": "strict", "modes": []string{"sidecar"}, "mtls": "STRICT"},
			{"name": "permissive", "modes": []string{"sidecar"}, "mtls": "PERMISSIVE"},
			{"name": "l7-1", "modes": []string{"waypoint"}, "authorization": map[string]any{"rules": 1, "layer": "L7"}},
			{"name": "l7-100", "modes": []string{"waypoint"}, "authorization": map[string]any{"rules": 100, "layer": "L7"}},
		}
	})
	run, _ := runScenario(ctx, t, c, path)
	okCases := map[string]int{}
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK {
			t.Errorf("%s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if cs.Variant == "" {
			continue
		}
		okCases[string(cs.Mode)+"+"+cs.Variant]++
		if proof := cs.Facts[results.FactVariantProof]; proof != "" {
			t.Logf("%s: %s (%s)", cs.CaseID, proof, cs.Facts[results.FactVariant])
			if !strings.Contains(proof, "proxies took a listener update") {
				t.Errorf("%s: proof %q: want the Envoy proxies' listener update", cs.CaseID, proof)
			}
			want := map[string]string{"strict": "mTLS STRICT", "permissive": "mTLS PERMISSIVE", "l7-1": "GET /meshbench-variant-probe refused (403)",
				"l7-100": "GET /meshbench-variant-probe refused (403)"}[cs.Variant]
			if !strings.Contains(proof, want) {
				t.Errorf("%s: proof %q lacks %q", cs.CaseID, proof, want)
			}
		}
		if cs.Facts[results.FactErrorRate] != "" && !strings.HasPrefix(cs.Facts[results.FactErrorRate], "0") {
			t.Errorf("%s: error rate %s: the variant's rules must allow the load", cs.CaseID, cs.Facts[results.FactErrorRate])
		}
	}
	sum := checkVariantArms(t, run, okCases, []string{"sidecar+strict", "sidecar+permissive", "waypoint+l7-1", "waypoint+l7-100"},
		results.ComponentSidecar, results.ComponentWaypoint)
	for _, s := range sum.Series {
		if s.Variant != "" {
			t.Errorf("a variant's series among the plain modes': %+v", s.Key)
		}
	}
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "What each feature costs") || !strings.Contains(string(md), "100 L7 authorization rules") {
		t.Errorf("report.md lacks what each feature costs (err %v)", err)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"},
		{Group: "security.istio.io", Version: "v1", Resource: "peerauthentications"},
	} {
		if l, err := env.Clients.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: kube.RunSelector("")}); err != nil || len(l.Items) > 0 {
			t.Errorf("%s left behind: %v (%v)", gvr.Resource, l, err)
		}
	}
}

// checkVariantArms fails unless every arm ("<mode>+<variant>") has two cases ok (okCases) and summary.json a
// load-window CPU comparison of it with its plain mode for one of components (each logged); it returns the summary.
func checkVariantArms(t *testing.T, run *results.Run, okCases map[string]int, arms []string, components ...results.Component) *results.Summary {
	t.Helper()
	for _, a := range arms {
		if okCases[a] != 2 {
			t.Errorf("%s: %d cases ok, want 2", a, okCases[a])
		}
	}
	sum := run.Summary
	if sum == nil {
		t.Fatal("no summary.json")
	}
	compared := map[string]bool{}
	for _, d := range sum.VariantDeltas {
		if d.Metric == results.MetricCPU && d.Stat == results.StatAvg && d.Window == results.WindowLoad && slices.Contains(components, d.Component) {
			compared[string(d.Base)+"+"+d.Variant] = true
			t.Logf("%s %s %s load cpu: plain %.2f, variant %.2f (%+.1f %%)", d.Base, d.Variant, d.Component, d.BaseMean, d.OtherMean, pct(d))
		}
	}
	for _, a := range arms {
		if !compared[a] {
			t.Errorf("summary.json has no load-window CPU comparison of %s with its plain mode", a)
		}
	}
	return sum
}

func pct(d results.Delta) float64 {
	if d.Percent == nil {
		return 0
	}
	return *d.Percent
}

// TestRunTrafficShapes measures load variants (spec.variants[].load) without a mesh and with real pilot-agent +
// upstream Envoy sidecars: a new connection per request, and HTTP/2 (h2c) with a 16 KiB body, two repetitions
// interleaved with the plain modes. Each variant case is proven from the load's own record (a socket per request;
// every answer HTTP/2), creates nothing in the cluster (mode none included), changes only the variant after its
// mode's case, and the summary compares it with its plain mode.
func TestRunTrafficShapes(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-shapes-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	path := quickstartVariant(t, "traffic-shapes", func(spec map[string]any) {
		spec["modes"] = []string{"none", "sidecar"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		spec["load"].(map[string]any)["qps"] = []int{50}
		spec["windows"] = map[string]any{"idle": "10s", "load": "15s", "repetitions": 2, "settle": "2s"}
		spec["variants"] = []map[string]any{
			{"name": "churn", "modes": []string{"none", "sidecar"}, "load": map[string]any{"keepAlive": false}},
			{"name": "h2-16k", "modes": []string{"none", "sidecar"}, "load": map[string]any{"http": "2", "payloadBytes": 16384}},
		}
	})
	run, _ := runScenario(ctx, t, c, path)
	okCases := map[string]int{}
	for i, cs := range run.Cases {
		if cs.Status != results.StatusOK {
			t.Errorf("%s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if cs.Variant == "" {
			if cs.Facts[results.FactLoadShapeProof] != "" {
				t.Errorf("%s: a plain case has a load-shape proof %q", cs.CaseID, cs.Facts[results.FactLoadShapeProof])
			}
			continue
		}
		okCases[string(cs.Mode)+"+"+cs.Variant]++
		proof := cs.Facts[results.FactLoadShapeProof]
		t.Logf("%s: %s (%s)", cs.CaseID, proof, cs.Facts[results.FactVariant])
		want := map[string][]string{"churn": {"sockets for"}, "h2-16k": {"answers HTTP/2 (", "16384-byte body"}}[cs.Variant]
		for _, w := range want {
			if !strings.Contains(proof, w) {
				t.Errorf("%s: load-shape proof %q lacks %q", cs.CaseID, proof, w)
			}
		}
		if cs.Facts[results.FactVariantProof] != "" {
			t.Errorf("%s: a load variant has a mesh proof %q: it configures no proxy", cs.CaseID, cs.Facts[results.FactVariantProof])
		}
		// A variant case after a case of its mode changed only the variant: no mode switch.
		if d, ok := cs.Facts[results.FactSwitchPrefix+"mode-switch"]; ok && i > 0 && run.Cases[i-1].Mode == cs.Mode {
			t.Errorf("%s: switch timing mode-switch %s after %s: a variant's switch does not switch the mode", cs.CaseID, d, run.Cases[i-1].CaseID)
		}
		if cs.Facts[results.FactErrorRate] != "" && !strings.HasPrefix(cs.Facts[results.FactErrorRate], "0") {
			t.Errorf("%s: error rate %s", cs.CaseID, cs.Facts[results.FactErrorRate])
		}
	}
	checkVariantArms(t, run, okCases, []string{"none+churn", "none+h2-16k", "sidecar+churn", "sidecar+h2-16k"},
		results.ComponentSidecar, results.ComponentApp)
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "What each feature costs") || !strings.Contains(string(md), "a new connection per request") {
		t.Errorf("report.md lacks what each traffic shape costs (err %v)", err)
	}
}

// TestRunTracing measures tracing variants (spec.variants[].tracing) with real pilot-agent + upstream Envoy sidecars
// and waypoint: sampling 0, 1 and 100 % on sidecars, 100 % on the waypoint. The run deploys its span sink, adds its
// Zipkin provider to istiod's mesh config, proves each variant with a request forced into a trace before measuring
// and with the traces the load started after it, and leaves the mesh config as it found it.
func TestRunTracing(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-tracing-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	meshBefore, err := env.Clients.Kube.CoreV1().ConfigMaps("istio-system").Get(ctx, mesh.MeshConfigMapName(""), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := quickstartVariant(t, "tracing", func(spec map[string]any) {
		spec["modes"] = []string{"sidecar", "waypoint"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		// 100 qps for 30 s: at 1 % the 3000 requests must start at least 12 traces (checkSpans' binomial bound), so
		// the 1 % proof can fail.
		spec["load"].(map[string]any)["qps"] = []int{100}
		spec["windows"] = map[string]any{"idle": "10s", "load": "30s", "repetitions": 1, "settle": "2s"}
		spec["variants"] = []map[string]any{
			{"name": "trace-0", "modes": []string{"sidecar"}, "tracing": map[string]any{"samplingPercent": 0}},
			{"name": "trace-1", "modes": []string{"sidecar"}, "tracing": map[string]any{"samplingPercent": 1}},
			{"name": "trace-100", "modes": []string{"sidecar", "waypoint"}, "tracing": map[string]any{"samplingPercent": 100}},
		}
	})
	run, _ := runScenario(ctx, t, c, path)
	ok := map[string]bool{}
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK {
			t.Errorf("%s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if cs.Variant == "" {
			if cs.Facts[results.FactTracingProof] != "" {
				t.Errorf("%s: a plain case has a tracing proof %q", cs.CaseID, cs.Facts[results.FactTracingProof])
			}
			continue
		}
		ok[string(cs.Mode)+"+"+cs.Variant] = true
		proof, traced := cs.Facts[results.FactVariantProof], cs.Facts[results.FactTracingProof]
		t.Logf("%s: %s; %s", cs.CaseID, proof, traced)
		if !strings.Contains(proof, "requests forced into a trace") || !strings.Contains(proof, "reached the span sink") {
			t.Errorf("%s: proof %q: want the forced trace at the sink", cs.CaseID, proof)
		}
		want := map[string]string{"trace-0": "sampling 0 %: no span during the load", "trace-1": "sampling 1 %:",
			"trace-100": "sampling 100 %:"}[cs.Variant]
		if !strings.Contains(traced, want) {
			t.Errorf("%s: tracing proof %q lacks %q", cs.CaseID, traced, want)
		}
		if cs.Variant != "trace-0" && (strings.Contains(traced, "at least 0 traces") || !strings.Contains(traced, "traces expected")) {
			t.Errorf("%s: tracing proof %q: want a lower bound above 0 traces", cs.CaseID, traced)
		}
		if cs.Facts[results.FactErrorRate] != "" && !strings.HasPrefix(cs.Facts[results.FactErrorRate], "0") {
			t.Errorf("%s: error rate %s", cs.CaseID, cs.Facts[results.FactErrorRate])
		}
	}
	for _, a := range []string{"sidecar+trace-0", "sidecar+trace-1", "sidecar+trace-100", "waypoint+trace-100"} {
		if !ok[a] {
			t.Errorf("%s: no case ok", a)
		}
	}
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "tracing at 100 % to the run's span sink") {
		t.Errorf("report.md lacks the tracing variants (err %v)", err)
	}
	meshAfter, err := env.Clients.Kube.CoreV1().ConfigMaps("istio-system").Get(ctx, mesh.MeshConfigMapName(""), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if meshAfter.Data["mesh"] != meshBefore.Data["mesh"] || meshAfter.Labels[mesh.MeshConfigEditedLabel] != "" {
		t.Errorf("istiod's mesh config not restored: label %q, text\n%s", meshAfter.Labels[mesh.MeshConfigEditedLabel], meshAfter.Data["mesh"])
	}
	tel := schema.GroupVersionResource{Group: "telemetry.istio.io", Version: "v1", Resource: "telemetries"}
	if l, err := env.Clients.Dynamic.Resource(tel).List(ctx, metav1.ListOptions{LabelSelector: kube.RunSelector("")}); err != nil || len(l.Items) > 0 {
		t.Errorf("telemetries left behind: %v (%v)", l, err)
	}
}
