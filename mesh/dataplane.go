package mesh

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// DataPlaneAnnotation, on a pod, names a proxy that is neither Istio's own nor a stand-in: the local test bed's
// injector sets it to DataPlaneUpstreamEnvoyValue on every sidecar pod (upstream Envoy under the real pilot-agent).
const (
	DataPlaneAnnotation         = "meshbench.dev/data-plane"
	DataPlaneUpstreamEnvoyValue = "upstream-envoy"
)

// The keys of the test bed's marker ConfigMap (hack/localistio, istio-system/meshbench-test-standin) that say what
// ran each data-plane component. Older markers listed the stand-ins by image ("components=proxyv2,ztunnel", the
// proxyv2 stand-in serving sidecars and waypoints alike).
const (
	markerStandIns      = "standins"       // components that are test stand-ins: "ztunnel,waypoint"
	markerUpstreamEnvoy = "upstream-envoy" // components run by upstream Envoy: "sidecar"
	markerEnvoyVersion  = "envoy.version"  // "1.40.0"
	markerIstioVersion  = "istio.version"  // pilot-agent's version: "1.31-dev"
	markerLegacyList    = "components"     // older markers: "proxyv2,ztunnel"
)

// dataPlaneComponents are the components a data plane is named for, in report order.
var dataPlaneComponents = []results.Component{results.ComponentSidecar, results.ComponentZtunnel, results.ComponentWaypoint}

// ComponentsOfMode are the data-plane components mode runs (none: none).
func ComponentsOfMode(m scenario.Mode) []results.Component {
	return results.DataPlaneComponentsOfMode(results.Mode(m))
}

// dataPlanesFromMarker reads what ran each component from the test bed's marker data; without a marker (nil data)
// every component is Istio's own. It is pure.
func dataPlanesFromMarker(data map[string]string, proxyImage, ztunnelImage string) []results.ComponentDataPlane {
	standIns := splitList[results.Component](data[markerStandIns])
	upstream := splitList[results.Component](data[markerUpstreamEnvoy])
	for _, c := range splitList[string](data[markerLegacyList]) {
		switch c {
		case "proxyv2":
			standIns = append(standIns, results.ComponentSidecar, results.ComponentWaypoint)
		case "ztunnel":
			standIns = append(standIns, results.ComponentZtunnel)
		}
	}
	out := make([]results.ComponentDataPlane, 0, len(dataPlaneComponents))
	for _, comp := range dataPlaneComponents {
		switch {
		case slices.Contains(standIns, comp):
			out = append(out, results.ComponentDataPlane{Component: comp, Kind: results.DataPlaneStandIn, Description: standInDescription(comp, data)})
		case slices.Contains(upstream, comp):
			out = append(out, results.ComponentDataPlane{Component: comp, Kind: results.DataPlaneUpstreamEnvoy,
				Description: upstreamEnvoyDescription(data[markerEnvoyVersion], data[markerIstioVersion])})
		default:
			out = append(out, results.ComponentDataPlane{Component: comp, Kind: results.DataPlaneIstio, Description: istioDescription(comp, proxyImage, ztunnelImage)})
		}
	}
	return out
}

// upstreamEnvoyDescription names upstream Envoy under pilot-agent as every result shows it.
func upstreamEnvoyDescription(envoyVersion, agentVersion string) string {
	return fmt.Sprintf("upstream Envoy %s (pilot-agent %s; Istio telemetry filters off)", orUnknown(envoyVersion), orUnknown(agentVersion))
}

// standInDescription names a stand-in by what the marker says it is (its "<component>.standin" entry, e.g.
// "hack/localistio/cmd/hbone-node").
func standInDescription(comp results.Component, marker map[string]string) string {
	return string(results.DataPlaneStandIn) + inParens(marker[string(comp)+".standin"])
}

func istioDescription(comp results.Component, proxyImage, ztunnelImage string) string {
	switch comp {
	case results.ComponentZtunnel:
		return "Istio's ztunnel" + inParens(ztunnelImage)
	case results.ComponentWaypoint:
		return "Istio's proxy (Envoy) as waypoint" + inParens(proxyImage)
	}
	return "Istio's proxy (Envoy)" + inParens(proxyImage)
}

// podDataPlane is what a pod's proxy is, from its annotations: a stand-in, upstream Envoy, or Istio's own.
func podDataPlane(pod *corev1.Pod) results.DataPlaneKind {
	switch {
	case pod.Annotations[StandInAnnotation] == "true":
		return results.DataPlaneStandIn
	case pod.Annotations[DataPlaneAnnotation] == DataPlaneUpstreamEnvoyValue:
		return results.DataPlaneUpstreamEnvoy
	}
	return results.DataPlaneIstio
}

// leastOf is the least representative of kinds (DataPlaneIstio for none).
func leastOf(kinds []results.DataPlaneKind) results.DataPlaneKind {
	cs := make([]results.ComponentDataPlane, len(kinds))
	for i, k := range kinds {
		cs[i].Kind = k
	}
	return results.LeastRepresentative(cs)
}

func splitList[T ~string](s string) []T {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, T(f))
		}
	}
	return out
}

func inParens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}
