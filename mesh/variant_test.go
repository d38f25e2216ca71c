package mesh

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// decodeInto reads an unstructured object into Istio's own typed API (istio.io/client-go), so a field name the API
// does not have shows as a missing value.
func decodeInto(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func TestVariantObjects(t *testing.T) {
	t.Parallel()
	wp := scenario.Waypoint{Name: "waypoint", Scope: scenario.WaypointPerNamespace}
	nss := []string{"app-a", "app-b"}
	t.Run("sidecar STRICT, L4 rules, access log: namespace-wide", func(t *testing.T) {
		t.Parallel()
		v := scenario.Variant{Name: "all", MTLS: scenario.MTLSStrict, AccessLog: true, Authorization: &scenario.Authorization{Rules: 10, Layer: scenario.AuthzL4}}
		objs, err := variantObjects("run-1", "app-a", nss, scenario.ModeSidecar, v, wp)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 3 {
			t.Fatalf("%d objects, want 3", len(objs))
		}
		var pa securityv1.PeerAuthentication
		decodeInto(t, objs[0].u.Object, &pa)
		if pa.Spec.GetMtls().GetMode().String() != "STRICT" || pa.Spec.GetSelector() != nil || pa.Namespace != "app-a" || pa.Name != variantObjectName {
			t.Errorf("PeerAuthentication %+v", &pa)
		}
		var ap securityv1.AuthorizationPolicy
		decodeInto(t, objs[1].u.Object, &ap)
		rules := ap.Spec.GetRules()
		if ap.Spec.GetAction().String() != "ALLOW" || len(rules) != 10 || len(ap.Spec.GetTargetRefs()) != 0 {
			t.Fatalf("AuthorizationPolicy %+v", &ap)
		}
		for i, r := range rules[:9] {
			if p := r.GetFrom()[0].GetSource().GetPrincipals(); len(p) != 1 || !strings.Contains(p[0], "meshbench-none") || len(r.GetTo()) != 0 {
				t.Errorf("rule %d %v: want a principal no workload has, no L7 match", i, r)
			}
		}
		if got := rules[9].GetFrom()[0].GetSource().GetNamespaces(); !slices.Equal(got, nss) || len(rules[9].GetTo()) != 0 {
			t.Errorf("allowing rule %v: want the app's namespaces %v, no L7 match", rules[9], nss)
		}
		var tel telemetryv1.Telemetry
		decodeInto(t, objs[2].u.Object, &tel)
		if al := tel.Spec.GetAccessLogging(); len(al) != 1 || al[0].GetProviders()[0].GetName() != "envoy" {
			t.Errorf("Telemetry %+v", &tel)
		}
		for _, o := range objs {
			if o.u.GetLabels()[kube.RunLabel] != "run-1" {
				t.Errorf("%s has no run labels: cleanup would not find it", o.u.GetKind())
			}
		}
	})
	t.Run("waypoint L7 rules attach to the waypoint and leave the probe path out", func(t *testing.T) {
		t.Parallel()
		v := scenario.Variant{Name: "l7", Authorization: &scenario.Authorization{Rules: 100, Layer: scenario.AuthzL7}}
		objs, err := variantObjects("run-1", "app-b", nss, scenario.ModeWaypoint, v, wp)
		if err != nil || len(objs) != 1 {
			t.Fatalf("objects %v, err %v", objs, err)
		}
		var ap securityv1.AuthorizationPolicy
		decodeInto(t, objs[0].u.Object, &ap)
		refs, rules := ap.Spec.GetTargetRefs(), ap.Spec.GetRules()
		if len(refs) != 1 || refs[0].GetKind() != "Gateway" || refs[0].GetGroup() != "gateway.networking.k8s.io" || refs[0].GetName() != "waypoint" {
			t.Errorf("targetRefs %v", refs)
		}
		if len(rules) != 100 || rules[0].GetTo()[0].GetOperation().GetPaths()[0] != "/meshbench-rule-1" {
			t.Fatalf("rules %d, first %v", len(rules), rules[0])
		}
		last := rules[99]
		if np := last.GetTo()[0].GetOperation().GetNotPaths(); !slices.Equal(np, []string{VariantProbePath}) || !slices.Equal(last.GetFrom()[0].GetSource().GetNamespaces(), nss) {
			t.Errorf("allowing rule %v", last)
		}
	})
	t.Run("waypoint tracing and access log: one Telemetry on the waypoint naming the run's provider", func(t *testing.T) {
		t.Parallel()
		pct := 0.0
		v := scenario.Variant{Name: "t", AccessLog: true, Tracing: &scenario.Tracing{SamplingPercent: &pct}}
		objs, err := variantObjects("run-1", "app-a", nss, scenario.ModeWaypoint, v, wp)
		if err != nil || len(objs) != 1 || objs[0].gvr != telemetryGVR {
			t.Fatalf("objects %v, err %v", objs, err)
		}
		var tel telemetryv1.Telemetry
		decodeInto(t, objs[0].u.Object, &tel)
		tr := tel.Spec.GetTracing()
		if len(tr) != 1 || len(tr[0].GetProviders()) != 1 || tr[0].GetProviders()[0].GetName() != TracingProviderName("run-1") {
			t.Fatalf("tracing %v", tr)
		}
		// 0 % is written, not left out: a Telemetry without it takes the mesh default (1 %: pilot PILOT_TRACE_SAMPLING).
		if s := tr[0].GetRandomSamplingPercentage(); s == nil || s.GetValue() != 0 {
			t.Errorf("randomSamplingPercentage %v, want 0", s)
		}
		if len(tel.Spec.GetAccessLogging()) != 1 || len(tel.Spec.GetTargetRefs()) != 1 || tel.Spec.GetTargetRefs()[0].GetName() != "waypoint" {
			t.Errorf("Telemetry %+v: want the access log too, attached to the waypoint", &tel)
		}
	})
	t.Run("waypoint mTLS is namespace-wide (ztunnel enforces it)", func(t *testing.T) {
		t.Parallel()
		objs, err := variantObjects("run-1", "app-a", nss, scenario.ModeWaypoint, scenario.Variant{Name: "s", MTLS: scenario.MTLSPermissive}, wp)
		if err != nil || len(objs) != 1 || objs[0].gvr != peerAuthenticationGVR {
			t.Fatalf("objects %v, err %v", objs, err)
		}
	})
	for _, tc := range []struct {
		name string
		mode scenario.Mode
		v    scenario.Variant
		wp   scenario.Waypoint
		want string
	}{
		{"L7 in ambient", scenario.ModeAmbient, scenario.Variant{Name: "x", Authorization: &scenario.Authorization{Rules: 1, Layer: scenario.AuthzL7}}, wp, "L7 rules need a waypoint"},
		{"shared waypoint", scenario.ModeWaypoint, scenario.Variant{Name: "x", AccessLog: true}, scenario.Waypoint{Name: "w", Scope: scenario.WaypointShared}, "use waypoint.scope"},
	} {
		if _, err := variantObjects("run-1", "app-a", nss, tc.mode, tc.v, tc.wp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestNotPushed(t *testing.T) {
	t.Parallel()
	proof := func(name string, lds float64, readErr string) ProxyConfigProof {
		return ProxyConfigProof{Namespace: "a", Name: name, Stats: XDSStats{LDSSuccess: lds}, ReadError: readErr}
	}
	before := []ProxyConfigProof{proof("p1", 3, ""), proof("p2", 3, ""), proof("p3", 3, "")}
	now := []ProxyConfigProof{proof("p1", 4, ""), proof("p2", 3, ""), proof("p3", 0, "connection refused")}
	if got := notPushed(before, now); !slices.Equal(got, []string{"a/p2", "a/p3"}) {
		t.Errorf("notPushed = %v, want a/p2 (no update) and a/p3 (unread)", got)
	}
	if got := notPushed(before, []ProxyConfigProof{proof("p1", 4, "")}); len(got) != 0 {
		t.Errorf("a proxy that took an update: %v", got)
	}
}

func TestCheckMTLS(t *testing.T) {
	t.Parallel()
	ms := []MTLS{{Namespace: "a", Mode: "STRICT", Source: "PeerAuthentication a/meshbench-variant"}, {Namespace: "b", Mode: "PERMISSIVE", Source: "PeerAuthentication b/old"}}
	if err := CheckMTLS(ms, scenario.MTLSStrict); err == nil || !strings.Contains(err.Error(), "b: PERMISSIVE") || strings.Contains(err.Error(), "a: ") {
		t.Errorf("err %v, want namespace b named", err)
	}
	if err := CheckMTLS(ms[:1], scenario.MTLSStrict); err != nil {
		t.Errorf("in effect: %v", err)
	}
}

// The status shape istiod 1.24+ writes on a policy bound to a waypoint, as the local cluster's istiod wrote it.
func TestPolicyAcceptance(t *testing.T) {
	t.Parallel()
	cond := func(kind, status string) map[string]any {
		return map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type": kind, "status": status, "reason": "Accepted", "message": "bound to mb-variants-single/waypoint", "observedGeneration": "1"}}}}
	}
	if a, ok := policyAcceptance(cond("WaypointAccepted", "True")); !ok || !a.accepted || a.kind != "WaypointAccepted" {
		t.Errorf("accepted: %+v %v", a, ok)
	}
	if a, ok := policyAcceptance(cond("ZtunnelAccepted", "False")); !ok || a.accepted || !strings.Contains(a.message, "bound to") {
		t.Errorf("refused: %+v %v", a, ok)
	}
	if _, ok := policyAcceptance(cond("Reconciled", "True")); ok {
		t.Error("another condition read as istiod's verdict")
	}
	if _, ok := policyAcceptance(map[string]any{}); ok {
		t.Error("no status read as a verdict")
	}
}
