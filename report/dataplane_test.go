package report

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// mixedDataPlane is the local test bed after issue 30: the sidecar is upstream Envoy, ztunnel and waypoint are
// stand-ins.
func mixedDataPlane() Report {
	dps := []results.ComponentDataPlane{
		{Component: results.ComponentSidecar, Kind: results.DataPlaneUpstreamEnvoy, Description: "upstream Envoy 1.40.0 (pilot-agent 1.31-dev; Istio telemetry filters off)"},
		{Component: results.ComponentZtunnel, Kind: results.DataPlaneStandIn, Description: "test stand-in (hack/localistio/cmd/hbone-node)"},
		{Component: results.ComponentWaypoint, Kind: results.DataPlaneStandIn, Description: "test stand-in (hack/localistio/cmd/istio-standin)"},
	}
	var r Report
	r.Meta.Cluster.Istio = &results.IstioFacts{DataPlane: results.LeastRepresentative(dps), DataPlanes: dps}
	r.Meta.Notes = results.DataPlaneNotes(dps, []results.Component{results.ComponentSidecar, results.ComponentZtunnel, results.ComponentWaypoint})
	return r
}

func TestHeadlineCaveatNamesEachComponent(t *testing.T) {
	t.Parallel()
	r := mixedDataPlane()
	for _, tc := range []struct {
		modes []string
		want  string
	}{
		{[]string{"sidecar", "ambient"}, " [built on a test stand-in, not Istio's cost: ztunnel; upstream Envoy, a lower bound of Istio's: sidecar]"},
		{[]string{"sidecar"}, " [upstream Envoy, a lower bound of Istio's: sidecar]"},
		{[]string{"waypoint"}, " [built on a test stand-in, not Istio's cost: ztunnel, waypoint]"},
		{[]string{"none"}, ""},
	} {
		if got := r.headlineCaveat(tc.modes...); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.modes, got, tc.want)
		}
	}
	var istio Report
	istio.Meta.Cluster.Istio = &results.IstioFacts{DataPlane: results.DataPlaneIstio}
	if got := istio.headlineCaveat("sidecar", "waypoint"); got != "" {
		t.Errorf("Istio's own data plane: caveat %q", got)
	}
}

func TestBannerSaysTheTruthPerComponent(t *testing.T) {
	t.Parallel()
	b := strings.Join(mixedDataPlane().Banner(), "\n")
	for _, want := range []string{
		"data plane: sidecar is upstream Envoy 1.40.0 (pilot-agent 1.31-dev; Istio telemetry filters off): a lower bound of Istio's own sidecar cost",
		"data plane: ztunnel is a test stand-in (hack/localistio/cmd/hbone-node): its figures are not ztunnel's",
		"data plane: waypoint is a test stand-in (hack/localistio/cmd/istio-standin): its figures are not waypoint's",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "data plane: test stand-in, figures are not Istio's") {
		t.Errorf("banner carries the blanket sentence of runs without per-component facts:\n%s", b)
	}
}

// Sections printed alone (the demo's result screen: meshbench report --show headlines,modes) keep the caveats.
func TestTextOfSomeSectionsKeepsTheCaveats(t *testing.T) {
	t.Parallel()
	text, _ := mixedDataPlane().Text(sectionHeadlines)
	if !strings.Contains(string(text), "WARNING: data plane: ztunnel is a test stand-in") ||
		!strings.Contains(string(text), "WARNING: data plane: sidecar is upstream Envoy") {
		t.Errorf("text of one section lacks the per-component caveats:\n%s", text)
	}
}
