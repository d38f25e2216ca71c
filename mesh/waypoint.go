package mesh

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// WaypointRef locates one waypoint Gateway.
type WaypointRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (w WaypointRef) String() string { return w.Namespace + "/" + w.Name }

// Waypoints returns the waypoints mode waypoint uses for the target: one per app namespace (per-namespace scope),
// or one in the entry namespace shared by all (shared scope).
func Waypoints(t target.Target, wp scenario.Waypoint) []WaypointRef {
	name := waypointName(wp)
	if wp.Scope == scenario.WaypointShared {
		return []WaypointRef{{Namespace: sharedWaypointNamespace(t), Name: name}}
	}
	out := make([]WaypointRef, len(t.Namespaces))
	for i, ns := range t.Namespaces {
		out[i] = WaypointRef{Namespace: ns, Name: name}
	}
	return out
}

func sharedWaypointNamespace(t target.Target) string {
	if t.EntryNamespace != "" {
		return t.EntryNamespace
	}
	if len(t.Namespaces) > 0 {
		return t.Namespaces[0]
	}
	return ""
}

// waypointNamespaceFor is where the waypoint used by namespace ns lives.
func waypointNamespaceFor(t target.Target, wp scenario.Waypoint, ns string) string {
	if wp.Scope == scenario.WaypointShared {
		return sharedWaypointNamespace(t)
	}
	return ns
}

// waypointRunLabel is the only label istiod copies from meshbench's waypoint Gateways onto the objects it creates
// (through spec.infrastructure.labels): copied run labels would make a label-based cleanup delete istiod-owned
// objects (deploymentcontroller.go extractInfrastructureLabels; docs/modes.md).
const waypointRunLabel = "meshbench.dev/waypoint-of-run"

// WaypointGateway is the waypoint object `istioctl waypoint apply` creates: class istio-waypoint, one HBONE listener
// on 15008, istio.io/waypoint-for, and istio.io/rev for a named revision (istiod only takes its own: tag_watcher.go
// IsMine). A shared waypoint admits routes from every namespace.
func WaypointGateway(ref WaypointRef, wp scenario.Waypoint, shared bool, runID, revision string) *gwv1.Gateway {
	forWhat := wp.For
	if forWhat == "" {
		forWhat = "service"
	}
	l := gwv1.Listener{Name: "mesh", Port: 15008, Protocol: "HBONE"}
	if shared {
		all := gwv1.NamespacesFromAll
		l.AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}
	}
	lbl := kube.MergeLabels(kube.RunLabels(runID), map[string]string{LabelWaypointFor: forWhat})
	if revision != "" && revision != defaultRevision {
		lbl[LabelRevision] = revision
	}
	return &gwv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: lbl},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: WaypointClass, Listeners: []gwv1.Listener{l},
			Infrastructure: &gwv1.GatewayInfrastructure{Labels: map[gwv1.LabelKey]gwv1.LabelValue{waypointRunLabel: gwv1.LabelValue(runID)}},
		},
	}
}

// WaypointGateways returns the Gateways of mode waypoint for the target.
func WaypointGateways(t target.Target, wp scenario.Waypoint, runID, revision string) []*gwv1.Gateway {
	refs := Waypoints(t, wp)
	out := make([]*gwv1.Gateway, len(refs))
	for i, r := range refs {
		out[i] = WaypointGateway(r, wp, wp.Scope == scenario.WaypointShared, runID, revision)
	}
	return out
}

// WaypointProof is the evidence that a waypoint is ready: istiod programmed the Gateway AND the Deployment istiod
// created for it is available (Programmed=True alone is set from the Service and does not mean a proxy runs).
type WaypointProof struct {
	Namespace           string `json:"namespace"`
	Name                string `json:"name"`
	Programmed          bool   `json:"programmed"`
	DeploymentAvailable bool   `json:"deploymentAvailable"`
	Ready               bool   `json:"ready"`
	Problem             string `json:"problem,omitempty"`
}

// proveWaypoint decides from the Gateway and its Deployment (nil when absent) whether the waypoint is ready. It is
// pure.
func proveWaypoint(ref WaypointRef, gw *gwv1.Gateway, dep *appsv1.Deployment) WaypointProof {
	p := WaypointProof{Namespace: ref.Namespace, Name: ref.Name}
	if gw == nil {
		p.Problem = "Gateway not found"
		return p
	}
	var programmed, accepted *metav1.Condition
	for i := range gw.Status.Conditions {
		c := &gw.Status.Conditions[i]
		switch c.Type {
		case string(gwv1.GatewayConditionProgrammed):
			programmed = c
		case string(gwv1.GatewayConditionAccepted):
			accepted = c
		}
	}
	p.Programmed = programmed != nil && programmed.Status == metav1.ConditionTrue &&
		(programmed.ObservedGeneration == 0 || programmed.ObservedGeneration >= gw.Generation)
	if dep != nil {
		for _, c := range dep.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue && dep.Status.AvailableReplicas > 0 {
				p.DeploymentAvailable = true
			}
		}
	}
	p.Ready = p.Programmed && p.DeploymentAvailable
	switch {
	case p.Ready:
	case programmed == nil && accepted == nil:
		p.Problem = fmt.Sprintf("Gateway has no status: no controller serves GatewayClass %s. Is istiod running with ambient enabled (PILOT_ENABLE_AMBIENT=true) "+
			"and are the Gateway API CRDs' bundle-version at least the one this Istio needs? (meshbench preflight)", WaypointClass)
	case accepted != nil && accepted.Status != metav1.ConditionTrue:
		p.Problem = fmt.Sprintf("Gateway not accepted: %s: %s", accepted.Reason, accepted.Message)
	case !p.Programmed:
		msg := "not yet"
		if programmed != nil {
			msg = strings.TrimSpace(programmed.Reason + ": " + programmed.Message)
		}
		p.Problem = "Gateway not Programmed: " + msg
	case dep == nil:
		p.Problem = "Gateway Programmed but istiod has not created its Deployment yet"
	default:
		p.Problem = fmt.Sprintf("Gateway Programmed but Deployment %s/%s not available (%d of %d replicas): check its pods (image pull? resources?)",
			dep.Namespace, dep.Name, dep.Status.AvailableReplicas, dep.Status.Replicas)
	}
	return p
}

// checkWaypoint reads a waypoint's Gateway and Deployment and proves it.
func checkWaypoint(ctx context.Context, kc kubernetes.Interface, gc gatewayclient.Interface, ref WaypointRef) (WaypointProof, error) {
	gw, err := gc.GatewayV1().Gateways(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		gw, err = nil, nil
	}
	if err != nil {
		return WaypointProof{}, fmt.Errorf("get waypoint Gateway %s: %w", ref, err)
	}
	dep, err := kc.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		dep, err = nil, nil
	}
	if err != nil {
		return WaypointProof{}, fmt.Errorf("get waypoint Deployment %s: %w", ref, err)
	}
	return proveWaypoint(ref, gw, dep), nil
}
