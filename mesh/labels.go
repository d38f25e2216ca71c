package mesh

import (
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Istio labels and annotations (shared/reference/istio-modes.md).
const (
	labelInjection            = "istio-injection"                 // namespace: enabled | disabled
	LabelRevision             = "istio.io/rev"                    // namespace: revision-based injection
	LabelDataplaneMode        = "istio.io/dataplane-mode"         // namespace/pod: ambient | none
	LabelUseWaypoint          = "istio.io/use-waypoint"           // namespace/service/pod: <gateway> | none
	LabelUseWaypointNamespace = "istio.io/use-waypoint-namespace" // with a shared waypoint in another namespace
	LabelWaypointFor          = "istio.io/waypoint-for"           // gateway: service | workload | all | none

	AnnotationSidecarStatus = "sidecar.istio.io/status"      // set by the injector on injected pods
	AnnotationRedirection   = "ambient.istio.io/redirection" // set by istio-cni: enabled | pending
	RedirectionEnabled      = "enabled"
	redirectionPending      = "pending"

	// ProxyContainer is the sidecar's (and ztunnel's and waypoints') container name.
	ProxyContainer = "istio-proxy"

	// WaypointClass is the GatewayClass istiod serves waypoints with.
	WaypointClass = "istio-waypoint"
	// GatewayNameLabel is on the pods istiod creates for a Gateway.
	GatewayNameLabel = "gateway.networking.k8s.io/gateway-name"

	// StandInAnnotation marks test doubles of the data plane built by hack/ (OCI label and pod annotation
	// meshbench.dev/test-standin=true): figures measured on them are not Istio's.
	StandInAnnotation = "meshbench.dev/test-standin"

	// restartAnnotation is what `kubectl rollout restart` sets on the pod template; the readiness wait reads it
	// too (target.podsRolledOut).
	restartAnnotation = target.RestartedAtAnnotation
	// FieldManager owns the mode labels and restart annotations, apart from the workload's own field manager, so
	// that re-applying the workload keeps them.
	FieldManager = "meshbench-mesh"
)

// modeLabelKeys are every namespace label a mode switch may set or remove.
var modeLabelKeys = []string{labelInjection, LabelRevision, LabelDataplaneMode, LabelUseWaypoint, LabelUseWaypointNamespace}

// NamespaceLabels returns the mode labels namespace ns must carry in mode: a value to set, or nil to remove, for every
// key of modeLabelKeys except istio.io/rev in sidecar mode without a revision (left alone: istio-injection wins).
// wpNamespace is where ns's waypoint lives.
func NamespaceLabels(mode scenario.Mode, ns string, wp scenario.Waypoint, wpNamespace, revision string) map[string]*string {
	out := map[string]*string{}
	for _, k := range modeLabelKeys {
		out[k] = nil
	}
	switch mode {
	case scenario.ModeSidecar:
		if revision != "" && revision != "default" {
			out[LabelRevision] = ptr(revision)
		} else {
			out[labelInjection] = ptr("enabled")
			delete(out, LabelRevision)
		}
	case scenario.ModeAmbient:
		out[LabelDataplaneMode] = ptr("ambient")
	case scenario.ModeWaypoint:
		out[LabelDataplaneMode] = ptr("ambient")
		out[LabelUseWaypoint] = ptr(waypointName(wp))
		if wp.Scope == scenario.WaypointShared && wpNamespace != "" {
			out[LabelUseWaypointNamespace] = ptr(wpNamespace)
		}
	}
	return out
}

// modeOfLabels infers the mode a namespace is in from its labels (what Apply switches from).
func modeOfLabels(l map[string]string) scenario.Mode {
	switch {
	case l[labelInjection] == "enabled" || (l[LabelRevision] != "" && l[labelInjection] != "disabled"):
		return scenario.ModeSidecar
	case l[LabelDataplaneMode] == "ambient" && l[LabelUseWaypoint] != "" && l[LabelUseWaypoint] != "none":
		return scenario.ModeWaypoint
	case l[LabelDataplaneMode] == "ambient":
		return scenario.ModeAmbient
	default:
		return scenario.ModeNone
	}
}

// UsesSidecar reports whether pods of mode carry a sidecar.
func UsesSidecar(m scenario.Mode) bool { return m == scenario.ModeSidecar }

// UsesAmbient reports whether pods of mode are captured by ztunnel.
func UsesAmbient(m scenario.Mode) bool {
	return m == scenario.ModeAmbient || m == scenario.ModeWaypoint
}

// NeedsIstio reports whether mode needs an Istio control plane.
func NeedsIstio(m scenario.Mode) bool { return m != scenario.ModeNone }

func waypointName(wp scenario.Waypoint) string {
	if wp.Name != "" {
		return wp.Name
	}
	return "waypoint"
}

func ptr(s string) *string { return &s }
