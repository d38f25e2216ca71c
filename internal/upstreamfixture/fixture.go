// Package upstreamfixture loads testdata/upstream/istio.yaml: per Istio minor 1.24 ... 1.31, the labels, annotations
// and container names of istiod, ztunnel, istio-cni, waypoint and injected pods, read from istio/istio at each tag,
// so tests catch a fact that differs between minors. It is imported by tests only.
package upstreamfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Minor is one Istio minor's facts.
type Minor struct {
	Minor      string     `json:"minor"`
	Tag        string     `json:"tag"`
	Commit     string     `json:"commit"`
	Istiod     Component  `json:"istiod"`
	Ztunnel    Component  `json:"ztunnel"`
	IstioCNI   Component  `json:"istioCNI"`
	Waypoint   Waypoint   `json:"waypoint"`
	Injected   Injected   `json:"injected"`
	Ambient    Ambient    `json:"ambient"`
	GatewayAPI GatewayAPI `json:"gatewayAPI"`
	Sources    []string   `json:"sources"`
}

// Component is a control-plane or node-agent workload.
type Component struct {
	Deployment             string            `json:"deployment"`
	DeploymentWithRevision string            `json:"deploymentWithRevision"`
	DaemonSet              string            `json:"daemonSet"`
	Namespace              string            `json:"namespace"`
	PodLabels              map[string]string `json:"podLabels"`
	RevisionOverrides      map[string]string `json:"revisionOverrides"`
	CommonLabels           map[string]string `json:"commonLabels"`
	PodAnnotations         map[string]string `json:"podAnnotations"`
	Containers             []string          `json:"containers"`
}

// Waypoint is what istiod renders for a waypoint Gateway.
type Waypoint struct {
	GatewayClass    string            `json:"gatewayClass"`
	PodLabels       map[string]string `json:"podLabels"`
	AbsentPodLabels []string          `json:"absentPodLabels"`
	PodAnnotations  map[string]string `json:"podAnnotations"`
	Containers      []string          `json:"containers"`
	InitContainers  []string          `json:"initContainers"`
}

// Injected is what the sidecar injector adds to an app pod.
type Injected struct {
	AddsPodLabels        map[string]string `json:"addsPodLabels"`
	AddsPodAnnotations   []string          `json:"addsPodAnnotations"`
	PodAnnotationValues  map[string]string `json:"podAnnotationValues"`
	InitContainers       []string          `json:"initContainers"`
	InitContainerWithCNI string            `json:"initContainerWithCNI"`
	ProxyContainer       string            `json:"proxyContainer"`
	NativeSidecarDefault string            `json:"nativeSidecarDefault"` // "false" | "auto" | "true"
}

// Ambient is istio-cni's enrolment annotation.
type Ambient struct {
	RedirectionAnnotation string   `json:"redirectionAnnotation"`
	Values                []string `json:"values"`
}

// GatewayAPI is what istiod checks of the Gateway API CRDs.
type GatewayAPI struct {
	MinimumBundleVersion map[string]string `json:"minimumBundleVersion"`
	BuiltAgainst         string            `json:"builtAgainst"`
}

// Path is the fixture's path, found from this source file (tests run in their package directories).
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "upstream", "istio.yaml")
}

// Load reads the fixture; every minor 1.24 ... 1.31 must be present, in order.
func Load() ([]Minor, error) {
	b, err := os.ReadFile(Path())
	if err != nil {
		return nil, err
	}
	var f struct {
		Minors []Minor `json:"minors"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", Path(), err)
	}
	for i, m := range f.Minors {
		if want := fmt.Sprintf("1.%d", 24+i); m.Minor != want {
			return nil, fmt.Errorf("%s: entry %d is minor %q, want %q", Path(), i, m.Minor, want)
		}
	}
	if len(f.Minors) != 8 {
		return nil, fmt.Errorf("%s: %d minors, want 1.24 ... 1.31", Path(), len(f.Minors))
	}
	return f.Minors, nil
}

// Expand replaces the fixture's placeholders ($GATEWAY, $REV, $APP, ...) in every value of m.
func Expand(m map[string]string, vars map[string]string) map[string]string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	// Longest first: $GATEWAY must not eat the start of $GATEWAY_CLASS.
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) > len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
	})
	out := make(map[string]string, len(m))
	for k, v := range m {
		for _, n := range names {
			v = strings.ReplaceAll(v, "$"+n, vars[n])
		}
		out[k] = v
	}
	return out
}

// Vars are the placeholder values tests render the fixture with: waypoint Gateway "waypoint", revision rev (""
// or "default" for a non-revisioned install), Helm release "istio", app "web" v1.
func Vars(m Minor, rev string) map[string]string {
	return map[string]string{"GATEWAY": "waypoint", "GATEWAY_CLASS": m.Waypoint.GatewayClass, "REV": rev, "RELEASE": "istio",
		"CHART": "istio", "ISTIO_VERSION": m.Tag, "APP": "web", "VERSION": "v1"}
}

// PodLabels are the labels a component's pods carry: the chart's pod labels and common Helm labels, with the
// revision's overrides when rev names one.
func PodLabels(c Component, vars map[string]string, rev string) map[string]string {
	l := Expand(c.PodLabels, vars)
	for k, v := range Expand(c.CommonLabels, vars) {
		l[k] = v
	}
	if rev != "" && rev != "default" {
		for k, v := range Expand(c.RevisionOverrides, vars) {
			l[k] = v
		}
	}
	return l
}
