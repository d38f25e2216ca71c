package mesh

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// TestDenyPolicy pins the policy's shape to upstream's: a waypoint's L7 policy is attached with targetRefs to its
// Gateway (group gateway.networking.k8s.io), a sidecar's applies namespace-wide without a selector; both
// security.istio.io/v1 (istio/istio tests/integration/ambient/baseline_test.go at 1.24.0, deny-policy-waypoint and
// policy-waypoint; the same at 1.30.3).
func TestDenyPolicy(t *testing.T) {
	t.Parallel()
	wp := scenario.Waypoint{Scope: scenario.WaypointPerNamespace, Name: "waypoint", For: "service"}
	when := []any{map[string]any{"when": []any{map[string]any{"key": "request.headers[x-meshbench-deny]", "values": []any{"yes"}}}}}
	u, err := denyPolicy("run-1", "shop", scenario.ModeWaypoint, wp)
	if err != nil {
		t.Fatal(err)
	}
	spec := u.Object["spec"].(map[string]any)
	want := map[string]any{"action": "DENY", "rules": when, "targetRefs": []any{map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "waypoint"}}}
	if !reflect.DeepEqual(spec, want) || u.GetAPIVersion() != "security.istio.io/v1" || u.GetKind() != "AuthorizationPolicy" || u.GetNamespace() != "shop" ||
		u.GetLabels()[kube.RunLabel] != "run-1" {
		t.Errorf("waypoint policy %v", u.Object)
	}
	u, err = denyPolicy("run-1", "shop", scenario.ModeSidecar, wp)
	if err != nil || !reflect.DeepEqual(u.Object["spec"], map[string]any{"action": "DENY", "rules": when}) {
		t.Errorf("sidecar policy %v (%v): want namespace-wide, no selector, no targetRefs", u, err)
	}
	for _, tc := range []struct {
		mode scenario.Mode
		wp   scenario.Waypoint
		want string
	}{
		{scenario.ModeAmbient, wp, "enforces no L7 rule"},
		{scenario.ModeNone, wp, "enforces no L7 rule"},
		{scenario.ModeWaypoint, scenario.Waypoint{Scope: scenario.WaypointShared, Name: "w"}, "waypoint.scope per-namespace"},
	} {
		if _, err := denyPolicy("r", "ns", tc.mode, tc.wp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.mode, err, tc.want)
		}
	}
}

// ApplyDeny creates the policy in every app namespace; RemoveDeny deletes them, and again without an error.
func TestApplyAndRemoveDeny(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{authorizationPolicyGVR: "AuthorizationPolicyList"})
	s := &Switcher{Clients: &kube.Clients{Kube: fake.NewClientset(), Dynamic: dyn}, RunID: "run-1"}
	tg := target.Target{Namespaces: []string{"a", "b"}}
	if err := s.ApplyDeny(ctx, tg, scenario.ModeSidecar, scenario.Waypoint{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range tg.Namespaces {
		if _, err := dyn.Resource(authorizationPolicyGVR).Namespace(ns).Get(ctx, denyPolicyName, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
	for range 2 {
		if err := s.RemoveDeny(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	l, err := dyn.Resource(authorizationPolicyGVR).Namespace("a").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 0 {
		t.Errorf("after RemoveDeny: %v %v", l, err)
	}
	s.Protected = []string{"b"}
	if err := s.ApplyDeny(ctx, tg, scenario.ModeSidecar, scenario.Waypoint{}); err == nil {
		t.Error("a protected namespace got a policy")
	}
}
