package preflight

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// istioChecks judges the detection against what the scenario needs.
func istioChecks(i mesh.IstioInfo, k8sVersion string, needIstio, needAmbient, needWaypoint bool) []Check {
	if !i.Installed {
		ch := Check{Name: "istio", Status: severity(needIstio), Detail: "no Istio control plane (no pod labelled app=istiod in any namespace)",
			Fix: "install Istio (e.g. istioctl install --set profile=ambient), or keep only mode \"none\" in spec.modes"}
		if !needIstio {
			ch.Status, ch.Fix = StatusOK, ""
			ch.Detail += "; only mode none is requested"
		}
		return []Check{ch}
	}
	out := []Check{revisionCheck(i, needIstio)}
	if i.RevisionError != "" {
		return out // no control plane chosen: facts of another revision would be wrong
	}
	out = append(out, istiodCheck(i, needIstio))
	if minK := mesh.MinKubernetes(i.Version); minK > 0 && mesh.CompareVersions(k8sVersion, fmt.Sprintf("1.%d.0", minK)) < 0 {
		out = append(out, Check{Name: "istio-kubernetes", Status: StatusWarn,
			Detail: fmt.Sprintf("Istio %s needs Kubernetes >= 1.%d (istioctl precheck), cluster is %s", i.Version, minK, k8sVersion),
			Fix:    "upgrade the cluster or use an older Istio"})
	}
	out = append(out, ambientCheck(i, needAmbient))
	if i.NativeSidecars != nil {
		out = append(out, Check{Name: "native-sidecars", Status: StatusOK,
			Detail: fmt.Sprintf("sidecars will be native=%v: %s", *i.NativeSidecars, i.NativeSidecarsReason)})
	}
	out = append(out, gatewayAPICheck(i, needWaypoint), dataPlaneCheck(i))
	if len(i.Problems) > 0 {
		out = append(out, Check{Name: "istio-detection", Status: StatusWarn, Detail: strings.Join(i.Problems, "; "),
			Fix: "some facts could not be read (permissions?): the run records them as unknown"})
	}
	return out
}

// severity is how a missing part counts: FAIL when the scenario needs it, else WARN.
func severity(needed bool) Status {
	if needed {
		return StatusFail
	}
	return StatusWarn
}

// istiodCheck says the chosen istiod's version and how many of its pods are ready (none ready: severity(needIstio)).
func istiodCheck(i mesh.IstioInfo, needIstio bool) Check {
	ready := 0
	for _, d := range i.Istiods {
		if d.Ready {
			ready++
		}
	}
	ch := Check{Name: "istio", Status: StatusOK, Detail: fmt.Sprintf("istiod %s (from %s) in %s, %d of %d pods ready",
		i.Version, i.VersionSource, i.Namespace, ready, len(i.Istiods))}
	if ready == 0 {
		ch.Status, ch.Fix = severity(needIstio), "no istiod pod is Ready: check `kubectl -n "+i.Namespace+" get pods -l app=istiod`"
	}
	return ch
}

// ambientCheck lists the ambient parts found, or what is missing (FAIL only when an ambient mode is requested).
func ambientCheck(i mesh.IstioInfo, needAmbient bool) Check {
	amb := Check{Name: "ambient", Status: StatusOK}
	if !i.AmbientCapable {
		amb.Status = severity(needAmbient)
		amb.Detail = "not ambient-capable: missing " + strings.Join(i.AmbientMissing, ", ")
		amb.Fix = "install the ambient profile (istioctl install --set profile=ambient), or remove ambient and waypoint from spec.modes"
		if !needAmbient {
			amb.Status, amb.Fix = StatusOK, ""
			amb.Detail += " (no ambient mode requested)"
		}
		return amb
	}
	parts := []string{"PILOT_ENABLE_AMBIENT=true"}
	if i.Ztunnel != nil {
		parts = append(parts, fmt.Sprintf("ztunnel %s/%s %d/%d ready", i.Ztunnel.Namespace, i.Ztunnel.Name, i.Ztunnel.Ready, i.Ztunnel.Desired))
	}
	if i.IstioCNI != nil {
		parts = append(parts, fmt.Sprintf("istio-cni %s/%s %d/%d ready", i.IstioCNI.Namespace, i.IstioCNI.Name, i.IstioCNI.Ready, i.IstioCNI.Desired))
	} else {
		parts = append(parts, "istio-cni: "+i.IstioCNIEvidence)
	}
	parts = append(parts, fmt.Sprintf("HBONE in mesh config %v", i.HBONE))
	amb.Detail = strings.Join(parts, "; ")
	return amb
}

// dataPlaneCheck warns when a data-plane component is not Istio's own (upstream Envoy, a test stand-in), naming
// each component's and the evidence.
func dataPlaneCheck(i mesh.IstioInfo) Check {
	if !i.StandIn && results.LeastRepresentative(i.DataPlanes) == results.DataPlaneIstio {
		return Check{Name: "data-plane", Status: StatusOK, Detail: "proxy image " + orDash(i.ProxyImage) + ", ztunnel image " + orDash(i.ZtunnelImage)}
	}
	var parts []string
	for _, c := range i.DataPlanes {
		parts = append(parts, string(c.Component)+": "+c.Description)
	}
	detail := "data plane per component: " + strings.Join(parts, "; ")
	if i.StandIn {
		detail = "TEST STAND-IN in the data plane; " + detail
	}
	if len(parts) == 0 {
		detail = "data plane is a TEST STAND-IN"
	}
	if len(i.StandInEvidence) > 0 {
		detail += " (evidence: " + strings.Join(i.StandInEvidence, "; ") + ")"
	}
	return Check{Name: "data-plane", Status: StatusWarn, Detail: detail,
		Fix: "mode switching is real; figures of a test stand-in are not Istio's, figures of upstream Envoy are a lower bound of istio-proxy's; every result and report says so per component"}
}

// revisionCheck says which control plane the run uses and how the modes will reach it.
func revisionCheck(i mesh.IstioInfo, needIstio bool) Check {
	ch := Check{Name: "istio-revision", Status: StatusOK}
	cp := i.ControlPlanes
	installed := fmt.Sprintf("installed revisions %s%s, default injector %s", strings.Join(cp.Revisions, ", "), tagsSuffix(cp.Tags), orDash(cp.DefaultInjector))
	if i.RevisionError != "" {
		ch.Status, ch.Detail = StatusWarn, i.RevisionError
		if needIstio {
			ch.Status = StatusFail
		}
		ch.Fix = "set spec.istio.revision (" + installed + ")"
		return ch
	}
	choice := mesh.RevisionChoice{Revision: i.Revision, Source: i.RevisionSource}
	if choice.Revisioned() {
		ch.Detail = fmt.Sprintf("revision %s (%s): sidecar mode labels istio.io/rev=%s, waypoint Gateways carry istio.io/rev=%s; %s",
			choice.Revision, choice.Source, choice.Revision, choice.Revision, installed)
	} else {
		ch.Detail = fmt.Sprintf("revision %s (%s): sidecar mode labels istio-injection=enabled; %s", choice.Revision, choice.Source, installed)
		if cp.DefaultInjector == "" && len(cp.Tags) == 0 && len(cp.Revisions) > 0 {
			ch.Status = StatusWarn
			ch.Fix = "no webhook serves istio-injection=enabled (no namespace.sidecar-injector.istio.io): sidecar injection may not happen"
		}
	}
	return ch
}

// gatewayAPICheck mirrors istiod: waypoints need the Gateway CRD served (any bundle-version); CRDs istiod ignores
// outside its bounds (mesh.IstiodCRDBounds) are a WARN, since meshbench uses none of them but other workloads might.
func gatewayAPICheck(i mesh.IstioInfo, needWaypoint bool) Check {
	g := i.GatewayAPI
	gw := Check{Name: "gateway-api", Status: StatusOK}
	if !g.Installed {
		gw.Status, gw.Detail = StatusOK, "Gateway API CRDs not installed (no waypoint mode requested)"
		if needWaypoint {
			gw.Status, gw.Detail = StatusFail, "Gateway API CRDs not installed: waypoints are gateway.networking.k8s.io/v1 Gateways"
			gw.Fix = "install the standard-channel CRDs (kubectl apply --server-side -f https://github.com/kubernetes-sigs/gateway-api/releases/download/<version>/standard-install.yaml)"
		}
		return gw
	}
	bundle := g.BundleVersion
	if bundle == "" {
		bundle = "no bundle-version annotation (istiod accepts the Gateway CRD without one)"
	} else {
		bundle = "bundle-version " + bundle + " (" + orDash(g.Channel) + " channel)"
	}
	gw.Detail = fmt.Sprintf("Gateway CRD served, %s; GatewayClass %s present: %v", bundle, mesh.WaypointClass, g.WaypointClass)
	if bounds := mesh.IstiodCRDBounds(i.Version); len(bounds) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(bounds)) {
			parts = append(parts, strings.TrimSuffix(n, ".gateway.networking.k8s.io")+" "+bounds[n].String())
		}
		gw.Detail += fmt.Sprintf("; Istio %s watches only %s of the CRDs it checks (each needs a bundle-version)", i.Version, strings.Join(parts, ", "))
	}
	var fixes []string
	if !g.WaypointClass && needWaypoint {
		gw.Status = StatusWarn
		fixes = append(fixes, "istiod has not created GatewayClass "+mesh.WaypointClass+" (ambient disabled?): waypoints will not be programmed")
	}
	if g.InfrastructurePruned && needWaypoint {
		gw.Status = StatusWarn
		gw.Detail += "; the Gateway CRD has no spec.infrastructure (standard channel before v1.2.0): the API server drops it from the waypoint " +
			"Gateways, so istiod copies all their labels, meshbench's run labels among them, onto the waypoints' Deployments, pods, Services and ServiceAccounts"
		fixes = append(fixes, "install the Gateway API standard-channel CRDs v1.2.0 or later (kubectl apply --server-side -f "+
			"https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.2.0/standard-install.yaml, or a newer release); "+
			"until then each waypoint case records the fact "+string(results.FactWaypointLabelsCopied))
	}
	if len(g.Ignored) > 0 {
		gw.Status = StatusWarn
		gw.Detail += "; istiod ignores " + strings.Join(g.Ignored, ", ")
		fixes = append(fixes, "meshbench uses none of these CRDs; upgrade them if other workloads need them")
	}
	gw.Fix = strings.Join(fixes, "; ")
	return gw
}

// mtlsCheck records the PeerAuthentication mode the app's namespaces will have, as the chosen istiod reads them and
// the requested modes' data plane applies them (mesh.DetectMTLS). It never blocks: STRICT is common, and meshbench's
// load clients and logins run inside the mesh.
func mtlsCheck(ctx context.Context, c *kube.Clients, i mesh.IstioInfo, namespaces []string, modes []scenario.Mode) Check {
	if len(namespaces) == 0 {
		return Check{Name: "mtls", Status: StatusOK, Detail: "no app namespaces (root namespace " + i.RootNamespace + ")"}
	}
	var parts []string
	for _, ambient := range []bool{false, true} {
		if !slices.ContainsFunc(modes, func(m scenario.Mode) bool { return mesh.NeedsIstio(m) && mesh.UsesAmbient(m) == ambient }) {
			continue
		}
		ms, err := mesh.DetectMTLS(ctx, c.Istio, i.RootNamespace, namespaces, mesh.MTLSView{Revision: i.Revision, Version: i.Version, Ambient: ambient})
		if err != nil {
			return Check{Name: "mtls", Status: StatusWarn, Detail: err.Error(), Fix: "grant list on peerauthentications.security.istio.io; the effective mTLS mode is recorded as unknown"}
		}
		what := "sidecar mode"
		if ambient {
			what = "ambient modes (ztunnel)"
		}
		parts = append(parts, what+": "+mesh.SummarizeMTLS(ms))
	}
	return Check{Name: "mtls", Status: StatusOK, Detail: "effective PeerAuthentication mode of the app namespaces, " + strings.Join(parts, "; ") +
		" (root namespace " + i.RootNamespace + ", revision " + orDash(i.Revision) + ")"}
}

// tagsSuffix lists revision tags as "; tags tag->revision, ..." (sorted), or "" without tags.
func tagsSuffix(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, t+"->"+tags[t])
	}
	return "; tags " + strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
