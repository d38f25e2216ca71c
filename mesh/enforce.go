package mesh

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// DenyHeader is the header of a time-to-enforce case's denied slice of the load; its policy denies the requests that
// carry it with the value "yes" (docs/enforce.md).
const DenyHeader = "x-meshbench-deny"

// denyPolicyName is the AuthorizationPolicy's name in every app namespace.
const denyPolicyName = "meshbench-deny"

var authorizationPolicyGVR = schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}

// denyPolicy is the AuthorizationPolicy in namespace ns that denies every request with DenyHeader: yes, as mode
// enforces L7 rules: namespace-wide without a selector, so every sidecar (mode sidecar), or attached to the
// namespace's waypoint through targetRefs (mode waypoint: ztunnel does not enforce L7 rules, a waypoint does).
// security.istio.io/v1 and targetRefs: Istio 1.22 and later. It is pure.
func denyPolicy(runID, ns string, mode scenario.Mode, wp scenario.Waypoint) (*unstructured.Unstructured, error) {
	spec := map[string]any{
		"action": "DENY",
		"rules": []any{map[string]any{"when": []any{map[string]any{
			"key": "request.headers[" + DenyHeader + "]", "values": []any{"yes"},
		}}}},
	}
	switch mode {
	case scenario.ModeSidecar:
	case scenario.ModeWaypoint:
		if wp.Scope != scenario.WaypointPerNamespace {
			return nil, fmt.Errorf("a policy attached to a %s waypoint is not supported: use waypoint.scope %s", wp.Scope, scenario.WaypointPerNamespace)
		}
		spec["targetRefs"] = []any{map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": wp.Name}}
	default:
		return nil, fmt.Errorf("mode %s enforces no L7 rule (only sidecars and waypoints do)", mode)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": map[string]any{"name": denyPolicyName, "namespace": ns},
		"spec":     spec,
	}}
	u.SetLabels(kube.RunLabels(runID))
	return u, nil
}

// ApplyDeny creates the deny policy (denyPolicy) in every namespace of t for mode. The objects carry the run's labels:
// RemoveDeny deletes them, and the run's cleanup finds any left by a crash.
func (s *Switcher) ApplyDeny(ctx context.Context, t target.Target, mode scenario.Mode, wp scenario.Waypoint) error {
	if err := scenario.RefuseProtected(t.Namespaces, s.Protected...); err != nil {
		return err
	}
	if s.Clients.Dynamic == nil {
		return errors.New("apply the deny policy: no dynamic client")
	}
	for _, ns := range t.Namespaces {
		u, err := denyPolicy(s.RunID, ns, mode, wp)
		if err != nil {
			return err
		}
		if _, err := s.Clients.Dynamic.Resource(authorizationPolicyGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create AuthorizationPolicy %s/%s: %w", ns, denyPolicyName, err)
		}
	}
	return nil
}

// RemoveDeny deletes the deny policy from every namespace of t (one already gone is no error).
func (s *Switcher) RemoveDeny(ctx context.Context, t target.Target) error {
	if s.Clients.Dynamic == nil {
		return errors.New("remove the deny policy: no dynamic client")
	}
	var errs []error
	for _, ns := range t.Namespaces {
		err := s.Clients.Dynamic.Resource(authorizationPolicyGVR).Namespace(ns).Delete(ctx, denyPolicyName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete AuthorizationPolicy %s/%s: %w", ns, denyPolicyName, err))
		}
	}
	return errors.Join(errs...)
}
