package preflight

import (
	"context"
	"strings"
	"testing"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// standIn is what mesh.Detect reports for hack/localistio's ambient install (mesh's TestDetect pins it): istiod 1.30.1
// not yet ready, ztunnel 2/2, a host-process istio-cni, the stand-in marker, the Gateway CRD at v1.4.0 and a
// grpcroutes CRD at v1.0.0 (below istiod's minimum v1.1.0: ignored by istiod).
func standIn() mesh.IstioInfo {
	native := false
	return mesh.IstioInfo{
		Installed: true, Version: "1.30.1", VersionSource: "image tag", Namespace: "istio-system", RootNamespace: "istio-system",
		Istiods:       []mesh.IstiodInfo{{Namespace: "istio-system", Pod: "istiod-1", Revision: "default", Ready: true}},
		ControlPlanes: mesh.ControlPlanes{Revisions: []string{"default"}, DefaultInjector: "default"},
		Revision:      "default", RevisionSource: "the only control plane",
		PilotEnableAmbient: true, AmbientCapable: true, HBONE: true,
		Ztunnel:          &mesh.DaemonSetInfo{Namespace: "istio-system", Name: "ztunnel", Desired: 2, Ready: 2},
		IstioCNIEvidence: "pods annotated by istio-cni (app/web)",
		NativeSidecars:   &native, NativeSidecarsReason: "auto: kubelet node2 v1.32.0 < 1.33",
		ProxyImage: "docker.io/istio/proxyv2:1.30.1-distroless", ZtunnelImage: "docker.io/istio/ztunnel:1.30.1-distroless",
		GatewayAPI: mesh.GatewayAPIInfo{Installed: true, BundleVersion: "v1.4.0", Channel: "standard", WaypointClass: true,
			Ignored: []string{"grpcroutes.gateway.networking.k8s.io (bundle-version v1.0.0 < v1.1.0)"}},
		StandIn: true, StandInEvidence: []string{"injector values inject meshbench.dev/test-standin"},
	}
}

func byName(chs []Check) map[string]Check {
	m := map[string]Check{}
	for _, ch := range chs {
		m[ch.Name] = ch
	}
	return m
}

func TestIstioChecks(t *testing.T) {
	t.Parallel()
	checks := byName(istioChecks(standIn(), "v1.37.2", true, true, true))
	// istiod 1.30 accepts a v1.4.0 Gateway CRD (no minimum for it); it ignores the v1.0.0 grpcroutes CRD, which meshbench
	// does not use: a WARN naming it, never a FAIL.
	if ch := checks["gateway-api"]; ch.Status != StatusWarn || !strings.Contains(ch.Detail, "istiod ignores grpcroutes.gateway.networking.k8s.io (bundle-version v1.0.0 < v1.1.0)") {
		t.Errorf("Gateway API check: %+v", ch)
	}
	if ch := checks["istio-revision"]; ch.Status != StatusOK || !strings.Contains(ch.Detail, "revision default (the only control plane): sidecar mode labels istio-injection=enabled") {
		t.Errorf("revision check: %+v", ch)
	}
	if ch := checks["istio"]; ch.Status != StatusOK || ch.Detail != "istiod 1.30.1 (from image tag) in istio-system, 1 of 1 pods ready" {
		t.Errorf("istio %+v", ch)
	}
	if ch := checks["ambient"]; ch.Status != StatusOK || !strings.Contains(ch.Detail, "ztunnel istio-system/ztunnel 2/2 ready; istio-cni: pods annotated") {
		t.Errorf("ambient %+v", ch)
	}
	if ch := checks["native-sidecars"]; ch.Status != StatusOK || !strings.Contains(ch.Detail, "native=false") {
		t.Errorf("native sidecars %+v", ch)
	}
	if ch := checks["data-plane"]; ch.Status != StatusWarn || !strings.Contains(ch.Detail, "TEST STAND-IN") {
		t.Errorf("stand-in must be a WARN: %+v", ch)
	}
	if _, ok := checks["istio-kubernetes"]; ok {
		t.Error("Kubernetes 1.37 is new enough for Istio 1.30")
	}
	for _, ch := range istioChecks(standIn(), "v1.37.2", true, true, false) {
		if ch.Name == "gateway-api" && ch.Status == StatusFail {
			t.Errorf("without waypoint mode old CRDs are a warning only: %+v", ch)
		}
	}
	// Istio 1.30 needs Kubernetes >= 1.32 (MinKubernetes): an older cluster is a WARN.
	old := byName(istioChecks(standIn(), "v1.31.4+k3s1", true, true, true))
	if ch := old["istio-kubernetes"]; ch.Status != StatusWarn || !strings.Contains(ch.Detail, "needs Kubernetes >= 1.32") {
		t.Errorf("Kubernetes 1.31 with Istio 1.30: %+v", ch)
	}
	// Issue 29: istioctl 1.28.2 ... 1.29.x asks for Kubernetes 1.30 (istio/istio istioctl/pkg/install/k8sversion/
	// version.go at those tags); 1.29 was reported as enough.
	i129 := standIn()
	i129.Version = "1.29.1"
	if ch := byName(istioChecks(i129, "v1.29.14", true, true, true))["istio-kubernetes"]; ch.Status != StatusWarn || !strings.Contains(ch.Detail, "needs Kubernetes >= 1.30") {
		t.Errorf("Kubernetes 1.29 with Istio 1.29.1: %+v", ch)
	}
	// Not ambient-capable: a FAIL when an ambient mode is requested, else OK with the reason.
	flat := standIn()
	flat.AmbientCapable, flat.AmbientMissing = false, []string{"ztunnel DaemonSet"}
	if ch := byName(istioChecks(flat, "v1.37.2", true, true, false))["ambient"]; ch.Status != StatusFail || ch.Fix == "" {
		t.Errorf("ambient requested, not capable: %+v", ch)
	}
	if ch := byName(istioChecks(flat, "v1.37.2", true, false, false))["ambient"]; ch.Status != StatusOK || !strings.Contains(ch.Detail, "(no ambient mode requested)") {
		t.Errorf("ambient not requested: %+v", ch)
	}
}

// A Gateway CRD without a bundle-version annotation (GKE-managed CRDs may have none and cannot be upgraded by the
// user) is accepted by istiod: 1.24.0-1.31.0-rc.0 check a minimum only for grpcroutes, backendtlspolicies, tlsroutes
// and tcproutes (istio/istio pkg/kube/kclient/crdwatcher.go, pkg/config/schema/gatewayapi/minimumversions.go). The
// preflight must not FAIL waypoint mode for it (it did before).
func TestGatewayCRDWithoutBundleVersionIsAccepted(t *testing.T) {
	t.Parallel()
	info := standIn()
	info.GatewayAPI = mesh.GatewayAPIInfo{Installed: true, WaypointClass: true}
	ch := gatewayAPICheck(info, true)
	if ch.Status == StatusFail || !strings.Contains(ch.Detail, "no bundle-version annotation (istiod accepts the Gateway CRD without one)") {
		t.Errorf("Gateway CRD without annotation: %+v", ch)
	}
	none := gatewayAPICheck(mesh.IstioInfo{Version: "1.30.1"}, true)
	if none.Status != StatusFail || none.Fix == "" {
		t.Errorf("no Gateway CRD at all with waypoint mode must FAIL: %+v", none)
	}
	if ch := gatewayAPICheck(mesh.IstioInfo{Version: "1.30.1"}, false); ch.Status != StatusOK {
		t.Errorf("no Gateway CRD and no waypoint mode: %+v", ch)
	}
}

func TestIstioChecksWithoutIstio(t *testing.T) {
	t.Parallel()
	none := mesh.IstioInfo{AmbientMissing: []string{"istiod"}}
	chs := istioChecks(none, "v1.37.2", true, false, false)
	if len(chs) != 1 || chs[0].Status != StatusFail || !strings.Contains(chs[0].Detail, "no Istio control plane") || chs[0].Fix == "" {
		t.Errorf("sidecar requested without Istio: %+v", chs)
	}
	chs = istioChecks(none, "v1.37.2", false, false, false)
	if chs[0].Status != StatusOK {
		t.Errorf("mode none only: no Istio is fine: %+v", chs)
	}
	r := Report{Modes: nil, Checks: chs}
	if r.Failed() || !strings.Contains(r.Table(), "all checks passed") {
		t.Errorf("report: %s", r.Table())
	}
}

// With two control planes and no default, mesh.Detect refuses to choose (RevisionError, no facts; mesh's
// TestDetectDoesNotMixRevisions): preflight shows only the revision check, a FAIL when Istio is needed.
func TestRevisionErrorStopsTheIstioChecks(t *testing.T) {
	t.Parallel()
	info := mesh.IstioInfo{Installed: true, ControlPlanes: mesh.ControlPlanes{Revisions: []string{"1-29", "1-30"}, Tags: map[string]string{"prod": "1-30", "canary": "1-29"}},
		RevisionError: "2 control planes (1-29, 1-30) and no default injector: set spec.istio.revision"}
	chs := istioChecks(info, "v1.37.2", true, false, false)
	if len(chs) != 1 || chs[0].Name != "istio-revision" || chs[0].Status != StatusFail ||
		chs[0].Fix != "set spec.istio.revision (installed revisions 1-29, 1-30; tags canary->1-29, prod->1-30, default injector -)" {
		t.Errorf("preflight: %+v", chs)
	}
	if chs := istioChecks(info, "v1.37.2", false, false, false); chs[0].Status != StatusWarn {
		t.Errorf("mode none only: the revision problem is a WARN: %+v", chs)
	}
}

// Issue 29 section 1 item 4: the gateway-api line named only minimums ("has minimums only for"); Istio 1.29.4 also
// ignores a TLSRoute CRD above v1.4.1, which preflight now says and WARNs about when the installed one is above it.
func TestGatewayAPICheckNamesMaximums(t *testing.T) {
	t.Parallel()
	info := standIn()
	info.Version = "1.29.4"
	info.GatewayAPI = mesh.GatewayAPIInfo{Installed: true, WaypointClass: true, BundleVersion: "v1.5.0", Channel: "standard",
		Ignored: []string{"tlsroutes.gateway.networking.k8s.io (bundle-version v1.5.0 > v1.4.1, the newest this Istio watches)"}}
	ch := gatewayAPICheck(info, true)
	if ch.Status != StatusWarn || !strings.Contains(ch.Detail, "tlsroutes <= v1.4.1") || !strings.Contains(ch.Detail, "grpcroutes >= v1.1.0") ||
		strings.Contains(ch.Detail, "minimums only") || !strings.Contains(ch.Detail, "istiod ignores tlsroutes") {
		t.Errorf("Istio 1.29.4 with TLSRoute v1.5.0: %+v", ch)
	}
}

// Issue 29 section 1 item 3: Gateway API CRDs of the standard channel before v1.2.0 have no spec.infrastructure; with
// waypoint mode requested preflight WARNs with the fix (CRDs v1.2.0 or later), without it the line stays OK.
func TestGatewayAPICheckWarnsWithoutInfrastructure(t *testing.T) {
	t.Parallel()
	info := standIn()
	info.GatewayAPI = mesh.GatewayAPIInfo{Installed: true, WaypointClass: true, BundleVersion: "v1.1.0", Channel: "standard", InfrastructurePruned: true}
	ch := gatewayAPICheck(info, true)
	if ch.Status != StatusWarn || !strings.Contains(ch.Detail, "no spec.infrastructure") || !strings.Contains(ch.Fix, "v1.2.0 or later") ||
		!strings.Contains(ch.Fix, string(results.FactWaypointLabelsCopied)) {
		t.Errorf("v1.1.0 standard CRDs with waypoint mode: %+v", ch)
	}
	if ch := gatewayAPICheck(info, false); ch.Status != StatusOK {
		t.Errorf("no waypoint mode: the field is not used, want OK: %+v", ch)
	}
}

// Issue 29 section 1 item 6: preflight shows the mode each requested data plane applies, from the policies the
// chosen istiod reads: a DISABLE namespace policy is DISABLE for sidecars and PERMISSIVE (not STRICT) for ztunnel,
// and a STRICT mesh-wide policy of another revision counts for neither.
func TestMTLSCheckPerDataPlane(t *testing.T) {
	t.Parallel()
	disable := &securityv1.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "off"}}
	disable.Spec.Mtls = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: securityv1beta1.PeerAuthentication_MutualTLS_DISABLE}
	canary := &securityv1.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "canary", Labels: map[string]string{mesh.LabelRevision: "1-31"}}}
	canary.Spec.Mtls = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: securityv1beta1.PeerAuthentication_MutualTLS_STRICT}
	info := mesh.IstioInfo{Installed: true, Version: "1.30.1", Revision: "1-30", RootNamespace: "istio-system"}
	c := &kube.Clients{Istio: istiofake.NewSimpleClientset(disable, canary)}
	ch := mtlsCheck(context.Background(), c, info, []string{"app"}, []scenario.Mode{scenario.ModeNone, scenario.ModeSidecar, scenario.ModeAmbient})
	for _, want := range []string{"sidecar mode: DISABLE (PeerAuthentication app/off (namespace-wide); 1 PeerAuthentication(s) of another istio.io/rev ignored)",
		"ambient modes (ztunnel): PERMISSIVE (PeerAuthentication app/off (namespace-wide) says DISABLE; ztunnel applies only STRICT or not"} {
		if ch.Status != StatusOK || !strings.Contains(ch.Detail, want) {
			t.Errorf("mtls check %+v\nwant %q in its detail", ch, want)
		}
	}
	if ch := mtlsCheck(context.Background(), c, info, []string{"app"}, []scenario.Mode{scenario.ModeWaypoint}); strings.Contains(ch.Detail, "sidecar mode") {
		t.Errorf("waypoint only: %+v", ch)
	}
}
