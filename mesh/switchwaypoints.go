package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// ensureWaypoints creates (or updates) the waypoint Gateways of the target. The API server answers a create or a
// patch with the object as it stored it, after pruning the fields its CRD does not know: a Gateway that came back
// without meshbench's spec.infrastructure.labels is returned as a WarningInfrastructurePruned.
func (s *Switcher) ensureWaypoints(ctx context.Context, t target.Target, wp scenario.Waypoint) ([]SwitchWarning, error) {
	gc := s.Clients.Gateway
	if gc == nil {
		return nil, errors.New("create waypoint: no Gateway API client")
	}
	if err := s.checkGatewayAPI(); err != nil {
		return nil, fmt.Errorf("create waypoint: %w", err)
	}
	var warns []SwitchWarning
	for _, gw := range WaypointGateways(t, wp, s.RunID, s.Revision) {
		cur, err := gc.GatewayV1().Gateways(gw.Namespace).Get(ctx, gw.Name, metav1.GetOptions{})
		var stored *gwv1.Gateway
		switch {
		case apierrors.IsNotFound(err):
			stored, err = gc.GatewayV1().Gateways(gw.Namespace).Create(ctx, gw, metav1.CreateOptions{FieldManager: FieldManager})
		case err == nil:
			if cur.Labels[kube.RunLabel] == "" && cur.Labels[kube.ManagedByLabel] != kube.ManagedByValue {
				return warns, fmt.Errorf("create waypoint %s/%s: a Gateway of that name exists and was not created by meshbench; set spec.waypoint.name to another name", gw.Namespace, gw.Name)
			}
			// Merge patch (RBAC: patch, as for every other object meshbench changes): our labels and the whole spec.
			var body []byte
			body, err = json.Marshal(map[string]any{"metadata": map[string]any{"labels": gw.Labels}, "spec": gw.Spec})
			if err == nil {
				stored, err = gc.GatewayV1().Gateways(gw.Namespace).Patch(ctx, gw.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
			}
		}
		if err != nil {
			return warns, fmt.Errorf("create waypoint %s/%s: %w", gw.Namespace, gw.Name, err)
		}
		if !infrastructureKept(stored) {
			w := SwitchWarning{Kind: WarningInfrastructurePruned, Object: "Gateway " + gw.Namespace + "/" + gw.Name,
				Detail: "the API server dropped spec.infrastructure (Gateway API CRDs of the standard channel before v1.2.0): istiod copies all the " +
					"Gateway's labels, the run labels among them, onto the waypoint's Deployment, pods, Service and ServiceAccount; install the " +
					"standard-channel CRDs v1.2.0 or later"}
			s.log().Warn("waypoint Gateway stored without spec.infrastructure", "gateway", gw.Namespace+"/"+gw.Name, "detail", w.Detail)
			warns = append(warns, w)
		}
	}
	return warns, nil
}

// errNoGatewayAPI means the cluster does not serve gateway.networking.k8s.io/v1 Gateways (no Gateway API CRDs):
// waypoint mode cannot run.
var errNoGatewayAPI = errors.New("the cluster does not serve gateway.networking.k8s.io/v1 Gateways: install the Gateway API CRDs (standard channel)")

// checkGatewayAPI asks API discovery (the clients' REST mapper) whether gateway.networking.k8s.io/v1 Gateways are
// served: a typed answer where a Gateway call would fail with a 404 that reads like a missing object. The error wraps
// errNoGatewayAPI; without a mapper it returns nil.
func (s *Switcher) checkGatewayAPI() error {
	if s.Clients.Mapper == nil {
		return nil
	}
	_, err := s.Clients.Mapper.RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: "Gateway"}, gwv1.GroupVersion.Version)
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err):
		return fmt.Errorf("%w (%w)", errNoGatewayAPI, err)
	default:
		return fmt.Errorf("discover the Gateway API: %w", err)
	}
}

// waitWaypoints waits, watching Gateways and Deployments, until every waypoint is ready.
func (s *Switcher) waitWaypoints(ctx context.Context, refs []WaypointRef) error {
	var watches []kube.WatchOpener
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.Namespace] {
			continue
		}
		seen[r.Namespace] = true
		ns := r.Namespace
		watches = append(watches,
			func(ctx context.Context) (watch.Interface, error) {
				return s.Clients.Gateway.GatewayV1().Gateways(ns).Watch(ctx, metav1.ListOptions{})
			},
			func(ctx context.Context) (watch.Interface, error) {
				return s.Clients.Kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
			})
	}
	var proofs []WaypointProof
	err := kube.WaitFor(ctx, s.timeout(), watches, func(ctx context.Context) (bool, error) {
		proofs = proofs[:0]
		ready := true
		for _, r := range refs {
			p, err := checkWaypoint(ctx, s.Clients.Kube, s.Clients.Gateway, r)
			if err != nil {
				return false, err
			}
			proofs = append(proofs, p)
			ready = ready && p.Ready
		}
		return ready, nil
	})
	if errors.Is(err, kube.ErrWaitTimeout) {
		var lines []string
		for _, p := range proofs {
			if !p.Ready {
				lines = append(lines, fmt.Sprintf("waypoint %s/%s: %s", p.Namespace, p.Name, p.Problem))
			}
		}
		return fmt.Errorf("waypoint not ready after %s (nothing was labelled to use it):\n  %s", s.timeout(), strings.Join(lines, "\n  "))
	}
	return err
}

// staleWaypoints lists this run's waypoint Gateways in the target's namespaces that the mode does not want.
func (s *Switcher) staleWaypoints(ctx context.Context, t target.Target, wanted map[WaypointRef]bool) ([]WaypointRef, error) {
	if s.Clients.Gateway == nil {
		return nil, nil
	}
	if err := s.checkGatewayAPI(); errors.Is(err, errNoGatewayAPI) {
		return nil, nil // no Gateway API in the cluster: nothing to delete
	} else if err != nil {
		return nil, fmt.Errorf("list waypoints: %w", err)
	}
	var out []WaypointRef
	sel := kube.RunSelector(s.RunID)
	for _, ns := range t.Namespaces {
		list, err := s.Clients.Gateway.GatewayV1().Gateways(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if apierrors.IsNotFound(err) {
			return nil, nil // a list is never "not found" unless the resource is not served: no Gateway API, nothing to delete
		}
		if err != nil {
			return nil, fmt.Errorf("list waypoints in %s: %w", ns, err)
		}
		for _, gw := range list.Items {
			r := WaypointRef{Namespace: gw.Namespace, Name: gw.Name}
			if string(gw.Spec.GatewayClassName) == WaypointClass && !wanted[r] && gw.DeletionTimestamp == nil {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// deleteWaypoints deletes waypoint Gateways and waits until istiod's Deployments for them are gone, so their pods
// do not run into the next measurement.
func (s *Switcher) deleteWaypoints(ctx context.Context, refs []WaypointRef) error {
	fg := metav1.DeletePropagationForeground
	for _, r := range refs {
		err := s.Clients.Gateway.GatewayV1().Gateways(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete waypoint %s: %w", r, err)
		}
	}
	kc := s.Clients.Kube
	var watches []kube.WatchOpener
	for _, r := range refs {
		ns := r.Namespace
		watches = append(watches, func(ctx context.Context) (watch.Interface, error) {
			return kc.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel})
		})
	}
	var left []string
	err := kube.WaitFor(ctx, s.timeout(), watches, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, r := range refs {
			if _, err := s.Clients.Gateway.GatewayV1().Gateways(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil {
				left = append(left, "Gateway "+r.String())
			}
			pods, err := kc.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel + "=" + r.Name})
			if err != nil {
				return false, fmt.Errorf("list waypoint pods of %s: %w", r, err)
			}
			for _, p := range pods.Items {
				left = append(left, "pod "+p.Namespace+"/"+p.Name)
			}
		}
		return len(left) == 0, nil
	})
	if errors.Is(err, kube.ErrWaitTimeout) {
		return fmt.Errorf("waypoint removal not finished after %s: %s still present", s.timeout(), strings.Join(left, ", "))
	}
	return err
}
