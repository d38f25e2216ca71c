package mesh

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/results"
)

func TestParseIstiodVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1.31-dev-eed52ebb66ad-Clean":         "1.31-dev",
		"1.30.1-abcdef0123-Clean\n":           "1.30.1",
		`{"version":"1.29.0","revision":"x"}`: "1.29.0",
		"weird":                               "weird",
	} {
		if got := parseIstiodVersion(in); got != want {
			t.Errorf("ParseIstiodVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVersionTables(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"1.24.3": 1, "1.27.1": 1, "1.28.0": 2, "1.29.2": 2, "1.30.0": 3, "1.31-dev": 4, "1.33.0": 4, "1.22.0": 0, "junk": 0} {
		if got := len(istiodMinimumsFor(v)); got != want {
			t.Errorf("istiodMinimumsFor(%s) has %d CRDs, want %d", v, got, want)
		}
	}
	for _, tc := range []struct {
		have string
		b    CRDBound
		want string
	}{
		{"v1.1.0", CRDBound{Min: "v1.1.0"}, ""}, {"v1.2.1", CRDBound{Min: "v1.1.0"}, ""}, {"v1.6.0-rc.1", CRDBound{Min: "v1.6.0"}, ""},
		{"v1.0.0", CRDBound{Min: "v1.1.0"}, "bundle-version v1.0.0 < v1.1.0"}, {"", CRDBound{Min: "v1.1.0"}, "no bundle-version annotation, istiod needs >= v1.1.0"},
		{"junk", CRDBound{Min: "v1.1.0"}, "cannot be parsed"},
		// Maximums (inclusive; a prerelease counts as its release, so v1.4.2-rc.1 is above v1.4.1).
		{"v1.4.1", CRDBound{Max: "v1.4.1"}, ""}, {"v1.4.1-rc.1", CRDBound{Max: "v1.4.0"}, "bundle-version v1.4.1-rc.1 > v1.4.0"},
		{"v1.5.0", CRDBound{Max: "v1.4.1"}, "bundle-version v1.5.0 > v1.4.1, the newest this Istio watches"},
		{"", CRDBound{Max: "v1.4.1"}, "no bundle-version annotation, istiod needs <= v1.4.1"},
	} {
		if got := istiodIgnoresCRD(tc.have, tc.b); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("IstiodIgnoresCRD(%q, %+v) = %q, want %q", tc.have, tc.b, got, tc.want)
		}
	}
	for v, want := range map[string]map[string]CRDBound{
		"1.27.8": {"grpcroutes.gateway.networking.k8s.io": {Min: "v1.1.0"}},
		"1.27.9": {"grpcroutes.gateway.networking.k8s.io": {Min: "v1.1.0"}, "tlsroutes.gateway.networking.k8s.io": {Max: "v1.4.0"}},
		"1.29.7": {"grpcroutes.gateway.networking.k8s.io": {Min: "v1.1.0"}, "backendtlspolicies.gateway.networking.k8s.io": {Min: "v1.4.0"},
			"tlsroutes.gateway.networking.k8s.io": {Max: "v1.4.1"}},
		"1.30.1": {"grpcroutes.gateway.networking.k8s.io": {Min: "v1.1.0"}, "backendtlspolicies.gateway.networking.k8s.io": {Min: "v1.4.0"},
			"tlsroutes.gateway.networking.k8s.io": {Min: "v1.5.0"}},
	} {
		if got := IstiodCRDBounds(v); !maps.Equal(got, want) {
			t.Errorf("IstiodCRDBounds(%s) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[string]int{"1.24.0": 28, "1.25.0": 28, "1.25.1": 29, "1.26.1": 29, "1.28.1": 29, "1.28.2": 30, "1.29.0": 30, "1.30.2": 32, "1.31-dev": 32, "1.31.0-rc.0": 32, "v1.29.6": 30, "1.20.0": 0, "junk": 0} {
		if got := MinKubernetes(v); got != want {
			t.Errorf("MinKubernetes(%s) = %d, want %d", v, got, want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{{"v1.6.3", "v1.6.0", 1}, {"v1.5.1", "v1.6.0", -1}, {"v1.6.0", "v1.6.0", 0}, {"v1.10.0", "v1.9.9", 1}, {"v1.6.0-rc1", "v1.6.0", 0}} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%s,%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestProxyImageFromValues(t *testing.T) {
	t.Parallel()
	for values, want := range map[string]string{
		`{"global":{"hub":"docker.io/istio","tag":"1.31-dev","variant":"distroless","proxy":{"image":"proxyv2"}}}`: "docker.io/istio/proxyv2:1.31-dev-distroless",
		`{"global":{"hub":"gcr.io/istio-release","tag":"1.30.1","proxy":{"image":"proxyv2"}}}`:                     "gcr.io/istio-release/proxyv2:1.30.1",
		`{"global":{"proxy":{"image":"registry.example/custom/proxy:7"}}}`:                                         "registry.example/custom/proxy:7",
		`not json`: "",
	} {
		if got := proxyImageFromValues(values); got != want {
			t.Errorf("ProxyImageFromValues(%s) = %q, want %q", values, got, want)
		}
	}
}

// fakeIstio is an ambient install like hack/localistio's: istiod (not yet ready, so no /version call), the ztunnel
// DaemonSet labelled only on its pod template, a host-process istio-cni (seen through an annotated pod), the mesh and
// injector ConfigMaps with the stand-in marker, the Gateway CRD at bundleVersion ("" = no annotation, which istiod
// accepts) and a grpcroutes CRD at v1.0.0 (below istiod's minimum v1.1.0: ignored by istiod).
func fakeIstio(t *testing.T, bundleVersion string) *kube.Clients {
	t.Helper()
	objs := []runtime.Object{
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "istiod-1", Namespace: "istio-system", Labels: map[string]string{"app": "istiod", "istio.io/rev": "default"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: "docker.io/istio/pilot:1.30.1-distroless",
				Env: []corev1.EnvVar{{Name: "PILOT_ENABLE_AMBIENT", Value: "true"}}}}},
		},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "ztunnel", Namespace: "istio-system", Labels: map[string]string{"app.kubernetes.io/name": "ztunnel"}},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ztunnel"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "docker.io/istio/ztunnel:1.30.1-distroless"}}},
			}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberReady: 2},
		},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", Annotations: map[string]string{AnnotationRedirection: "enabled"}}},
		func() runtime.Object {
			wh := injectorMWC("istio-sidecar-injector", defaultRevision, "", true)
			return &wh
		}(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: "istio-system"},
			Data: map[string]string{"mesh": "defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: \"true\"\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector", Namespace: "istio-system"},
			Data: map[string]string{"values": `{"global":{"hub":"docker.io/istio","tag":"1.30.1","variant":"distroless","proxy":{"image":"proxyv2"}},` +
				`"sidecarInjectorWebhook":{"injectedAnnotations":{"meshbench.dev/test-standin":"true"}}}`}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.32.0"}}},
	}
	crd := func(name, bundle string) *unstructured.Unstructured {
		ann := map[string]any{"gateway.networking.k8s.io/channel": "standard"}
		if bundle != "" {
			ann["gateway.networking.k8s.io/bundle-version"] = bundle
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name, "annotations": ann},
		}}
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{crdGVR: "CustomResourceDefinitionList"},
		crd("gateways.gateway.networking.k8s.io", bundleVersion), crd("grpcroutes.gateway.networking.k8s.io", "v1.0.0"))
	gc := gwfake.NewSimpleClientset(&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: WaypointClass}})
	return &kube.Clients{Kube: fake.NewClientset(objs...), Dynamic: dyn, Gateway: gc}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	c := fakeIstio(t, "v1.4.0")
	info, err := Detect(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Installed || info.Version != "1.30.1" || info.VersionSource != "image tag" || info.Revision != "default" || info.Namespace != "istio-system" {
		t.Errorf("istiod: %+v", info)
	}
	if !info.PilotEnableAmbient || info.Ztunnel == nil || info.Ztunnel.Ready != 2 || info.IstioCNI != nil || !strings.Contains(info.IstioCNIEvidence, "app/web") {
		t.Errorf("ambient parts: %+v %+v %q", info.Ztunnel, info.IstioCNI, info.IstioCNIEvidence)
	}
	if !info.AmbientCapable || !info.HBONE {
		t.Errorf("ambient capable %v (missing %v), HBONE %v", info.AmbientCapable, info.AmbientMissing, info.HBONE)
	}
	if info.NativeSidecars == nil || *info.NativeSidecars || !strings.Contains(info.NativeSidecarsReason, "node2 v1.32.0") {
		t.Errorf("a 1.32 kubelet rules native sidecars out under auto: %v %q", info.NativeSidecars, info.NativeSidecarsReason)
	}
	if info.ProxyImage != "docker.io/istio/proxyv2:1.30.1-distroless" || info.ZtunnelImage != "docker.io/istio/ztunnel:1.30.1-distroless" {
		t.Errorf("images %q %q", info.ProxyImage, info.ZtunnelImage)
	}
	if g := info.GatewayAPI; !g.Installed || g.BundleVersion != "v1.4.0" || !g.WaypointClass || len(g.Ignored) != 1 || !strings.Contains(g.Ignored[0], "grpcroutes") {
		t.Errorf("gateway api %+v", g)
	}
	if info.RootNamespace != "istio-system" || info.RevisionSource != "the only control plane" {
		t.Errorf("root namespace %q, revision source %q", info.RootNamespace, info.RevisionSource)
	}
	if !info.StandIn || len(info.StandInEvidence) == 0 {
		t.Errorf("stand-in not detected: %+v", info.StandInEvidence)
	}
	if f := info.Facts("localcluster"); f == nil || f.DataPlane != results.DataPlaneStandIn || f.Version != "1.30.1" {
		t.Errorf("facts %+v", f)
	}
}

// A Gateway CRD without a bundle-version annotation (GKE-managed CRDs may have none and cannot be upgraded by the
// user) is accepted by istiod: 1.24.0-1.31.0-rc.0 check a minimum only for grpcroutes, backendtlspolicies, tlsroutes
// and tcproutes (istio/istio pkg/kube/kclient/crdwatcher.go, pkg/config/schema/gatewayapi/minimumversions.go). The
// preflight must not FAIL waypoint mode for it (it did before).
func TestGatewayCRDWithoutBundleVersionIsAccepted(t *testing.T) {
	t.Parallel()
	info, err := Detect(context.Background(), fakeIstio(t, ""), "")
	if err != nil {
		t.Fatal(err)
	}
	// The judgement (no FAIL for waypoint mode) is preflight's TestGatewayCRDWithoutBundleVersionIsAccepted.
	if g := info.GatewayAPI; !g.Installed || g.BundleVersion != "" || slices.ContainsFunc(g.Ignored, func(s string) bool { return strings.HasPrefix(s, "gateways.") }) {
		t.Errorf("Gateway CRD without annotation must be detected as installed and not ignored: %+v", g)
	}
}

// Issue 29 section 1 item 4: on Istio 1.29.4 a TLSRoute CRD of bundle v1.5.0 (what Gateway API v1.5.0 installs) is
// above the maximum istiod watches (v1.4.1) and ignored; v1.4.1 is accepted. Before, only minimums were judged.
func TestDetectGatewayAPIMaximum(t *testing.T) {
	t.Parallel()
	crd := func(name, bundle string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name, "annotations": map[string]any{bundleVersionAnnotation: bundle}},
		}}
	}
	for tls, want := range map[string]string{"v1.5.0": "tlsroutes.gateway.networking.k8s.io (bundle-version v1.5.0 > v1.4.1", "v1.4.1": ""} {
		dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{crdGVR: "CustomResourceDefinitionList"},
			crd("gateways.gateway.networking.k8s.io", "v1.5.0"), crd("grpcroutes.gateway.networking.k8s.io", "v1.5.0"),
			crd("backendtlspolicies.gateway.networking.k8s.io", "v1.5.0"), crd("tlsroutes.gateway.networking.k8s.io", tls))
		info := IstioInfo{Version: "1.29.4"}
		detectGatewayAPI(context.Background(), &kube.Clients{Dynamic: dyn}, &info)
		got := strings.Join(info.GatewayAPI.Ignored, "; ")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("TLSRoute %s on Istio 1.29.4: ignored %q, want %q", tls, got, want)
		}
	}
}
