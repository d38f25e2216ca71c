package mesh

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshbench/meshbench/internal/kube"
)

// GatewayAPIInfo is the Gateway API CRDs' state, judged as istiod judges it: it accepts every CRD whatever its
// bundle-version annotation, except the few it has bounds for (IstiodCRDBounds), which it ignores outside them.
type GatewayAPIInfo struct {
	// Installed is true when the gateways.gateway.networking.k8s.io CRD exists.
	Installed bool `json:"installed"`
	// BundleVersion and Channel are the Gateway CRD's gateway.networking.k8s.io/bundle-version and /channel
	// annotations ("" when missing: istiod accepts it anyway).
	BundleVersion string `json:"bundleVersion,omitempty"`
	Channel       string `json:"channel,omitempty"`
	// Ignored lists the installed CRDs istiod ignores (bundle-version missing, unparsable, below its minimum or
	// above its maximum), e.g. "grpcroutes.gateway.networking.k8s.io (bundle-version v1.0.0 < v1.1.0)". meshbench
	// uses none of them.
	Ignored []string `json:"ignored,omitempty"`
	// WaypointClass is true when the GatewayClass istio-waypoint exists (istiod creates it).
	WaypointClass bool `json:"waypointClass"`
	// InfrastructurePruned is true when the Gateway CRD's v1 schema has no spec.infrastructure.labels (standard
	// channel before v1.2.0): the API server prunes the field, and istiod then copies ALL the Gateway's labels onto
	// the objects it creates for a waypoint (see waypointRunLabel).
	InfrastructurePruned bool `json:"infrastructurePruned,omitempty"`
}

// hasInfrastructureLabels reports whether a Gateway CRD keeps spec.infrastructure.labels in the schema of its v1
// version (else its storage version): the schema, not the bundle-version, so unannotated CRDs are judged too
// (standard channel from gateway-api v1.2.0; docs/modes.md). ok is false when the CRD has no readable schema.
func hasInfrastructureLabels(crd map[string]any) (has, ok bool) {
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	var chosen map[string]any
	for _, v := range versions {
		m, isMap := v.(map[string]any)
		if !isMap {
			continue
		}
		name, _, _ := unstructured.NestedString(m, "name")
		storage, _, _ := unstructured.NestedBool(m, "storage")
		if name == gwv1.GroupVersion.Version {
			chosen = m
			break
		}
		if storage && chosen == nil {
			chosen = m
		}
	}
	if chosen == nil {
		return false, false
	}
	spec, found, _ := unstructured.NestedMap(chosen, "schema", "openAPIV3Schema", "properties", "spec", "properties")
	if !found {
		return false, false
	}
	_, has, _ = unstructured.NestedMap(spec, "infrastructure", "properties", "labels")
	return has, true
}

// istiodMinimumCRDs are the Gateway API CRDs istiod ignores when their bundle-version is missing or below a
// minimum, per Istio minor (istio/istio pkg/kube/kclient/crdwatcher.go, gatewayapi/minimumversions.go; pinned in
// testdata/upstream/istio.yaml and istio-patches.yaml; docs/modes.md).
var istiodMinimumCRDs = []struct {
	sinceMinor int
	crd, min   string
}{
	{24, "grpcroutes.gateway.networking.k8s.io", "v1.1.0"},
	{28, "backendtlspolicies.gateway.networking.k8s.io", "v1.4.0"},
	{30, "tlsroutes.gateway.networking.k8s.io", "v1.5.0"},
	{31, "tcproutes.gateway.networking.k8s.io", "v1.6.0"},
}

// istiodMaximumCRDs are the CRDs istiod ignores when their bundle-version is missing or above a maximum (inclusive),
// per patch release that set it (crdwatcher.go MaximumCRDVersions at every tag, testdata/upstream/istio-patches.yaml);
// a later patch of these minors keeps the last entry (docs/modes.md).
var istiodMaximumCRDs = []struct {
	minor, sincePatch int
	crd, max          string
}{
	{27, 9, "tlsroutes.gateway.networking.k8s.io", "v1.4.0"},
	{28, 6, "tlsroutes.gateway.networking.k8s.io", "v1.4.0"},
	{28, 7, "tlsroutes.gateway.networking.k8s.io", "v1.4.1"},
	{29, 2, "tlsroutes.gateway.networking.k8s.io", "v1.4.0"},
	{29, 3, "tlsroutes.gateway.networking.k8s.io", "v1.4.1"},
}

// istiodMinimumsFor returns the CRDs (full name -> minimum bundle-version) istiod of istioVersion ignores below their
// minimum; nil when the version is unknown or older than 1.24 (then nothing is judged). A newer minor than the table
// knows gets the newest entries.
func istiodMinimumsFor(istioVersion string) map[string]string {
	maj, minor, ok := parseMajorMinor(istioVersion)
	if !ok || maj != 1 || minor < 24 {
		return nil
	}
	out := map[string]string{}
	for _, e := range istiodMinimumCRDs {
		if minor >= e.sinceMinor {
			out[e.crd] = e.min
		}
	}
	return out
}

// istiodMaximumsFor returns the CRDs (full name -> maximum bundle-version, inclusive) istiod of istioVersion ignores
// above their maximum; nil for the releases that have none (every one but 1.27.9+, 1.28.6+ and 1.29.2+).
func istiodMaximumsFor(istioVersion string) map[string]string {
	maj, minor, ok := parseMajorMinor(istioVersion)
	if !ok || maj != 1 {
		return nil
	}
	patch := versionParts(istioVersion)[2]
	var out map[string]string
	for _, e := range istiodMaximumCRDs {
		if e.minor == minor && patch >= e.sincePatch {
			if out == nil {
				out = map[string]string{}
			}
			out[e.crd] = e.max
		}
	}
	return out
}

// CRDBound is the range of bundle-versions istiod accepts for one CRD, both ends inclusive ("" = unbounded).
type CRDBound struct {
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
}

func (b CRDBound) String() string {
	switch {
	case b.Min != "" && b.Max != "":
		return b.Min + " ... " + b.Max
	case b.Max != "":
		return "<= " + b.Max
	default:
		return ">= " + b.Min
	}
}

// IstiodCRDBounds returns every CRD istiod of istioVersion checks the bundle-version of, with what it accepts.
func IstiodCRDBounds(istioVersion string) map[string]CRDBound {
	out := map[string]CRDBound{}
	for crd, v := range istiodMinimumsFor(istioVersion) {
		out[crd] = CRDBound{Min: v}
	}
	for crd, v := range istiodMaximumsFor(istioVersion) {
		b := out[crd]
		b.Max = v
		out[crd] = b
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

const bundleVersionAnnotation = "gateway.networking.k8s.io/bundle-version"

// istiodIgnoresCRD says why istiod ignores a CRD it has bounds for ("" when it accepts it): annotation missing or
// unparsable, or version outside the bounds, a prerelease suffix dropped as istiod's version filters do. Pure.
func istiodIgnoresCRD(bundleVersion string, b CRDBound) string {
	switch {
	case bundleVersion == "":
		return "no bundle-version annotation, istiod needs " + b.String()
	case !validVersion(bundleVersion):
		return fmt.Sprintf("bundle-version %q cannot be parsed, istiod needs %s", bundleVersion, b)
	case b.Min != "" && CompareVersions(bundleVersion, b.Min) < 0:
		return fmt.Sprintf("bundle-version %s < %s", bundleVersion, b.Min)
	case b.Max != "" && CompareVersions(bundleVersion, b.Max) > 0:
		return fmt.Sprintf("bundle-version %s > %s, the newest this Istio watches", bundleVersion, b.Max)
	}
	return ""
}

func validVersion(v string) bool {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return false
		}
	}
	return true
}

func detectGatewayAPI(ctx context.Context, c *kube.Clients, info *IstioInfo) {
	g := &info.GatewayAPI
	if c.Dynamic == nil {
		return
	}
	crds := c.Dynamic.Resource(crdGVR)
	crd, err := crds.Get(ctx, "gateways.gateway.networking.k8s.io", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("read the Gateway API CRD: %v", err))
		return
	}
	g.Installed = true
	ann := crd.GetAnnotations()
	g.BundleVersion = ann[bundleVersionAnnotation]
	g.Channel = ann["gateway.networking.k8s.io/channel"]
	if has, ok := hasInfrastructureLabels(crd.Object); ok {
		g.InfrastructurePruned = !has
	}
	bounds := IstiodCRDBounds(info.Version)
	for _, name := range sortedKeys(bounds) {
		other, err := crds.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			info.Problems = append(info.Problems, fmt.Sprintf("read CRD %s: %v", name, err))
			continue
		}
		if why := istiodIgnoresCRD(other.GetAnnotations()[bundleVersionAnnotation], bounds[name]); why != "" {
			g.Ignored = append(g.Ignored, name+" ("+why+")")
		}
	}
	if c.Gateway != nil {
		if _, err := c.Gateway.GatewayV1().GatewayClasses().Get(ctx, WaypointClass, metav1.GetOptions{}); err == nil {
			g.WaypointClass = true
		}
	}
}
