package orchestrate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// TestRunJSONRecordsInsecure: TLS verification is off only by an explicit field, and run.json then says so
// (issue 15 section 3); with verification on, run.json has no insecure key at all.
func TestRunJSONRecordsInsecure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    scenario.Prometheus
		want []string
	}{
		{"default verifies", scenario.Prometheus{URL: "https://prom:9090"}, nil},
		{"caFile verifies", scenario.Prometheus{URL: "https://prom:9090", CAFile: "ca.pem"}, nil},
		{"insecureSkipVerify", scenario.Prometheus{URL: "https://prom:9090", InsecureSkipVerify: true}, []string{results.InsecurePrometheus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &scenario.Scenario{}
			s.Spec.Prometheus = tc.p
			meta, err := newMeta("run", s, scenario.Plan{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(meta.Insecure, tc.want) {
				t.Errorf("insecure = %q, want %q", meta.Insecure, tc.want)
			}
			if noted := slices.ContainsFunc(meta.Notes, func(n string) bool { return strings.Contains(n, "TLS verification was turned off for: prometheus") }); noted != (tc.want != nil) {
				t.Errorf("notes %q: want the turned-off verification noted for every report: %v", meta.Notes, tc.want != nil)
			}
			b, err := json.Marshal(meta)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			got, ok := raw["insecure"]
			if ok != (tc.want != nil) || (ok && string(got) != `["prometheus"]`) {
				t.Errorf("run.json insecure = %s (present %v), want %q", got, ok, tc.want)
			}
		})
	}
}

// TestOwnNamespaces: the install's own namespaces (a custom mesh root namespace, istiod's namespace) are what
// the deployer refuses beyond scenario.ProtectedNamespace.
func TestOwnNamespaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ist  mesh.IstioInfo
		want []string
	}{
		{"no Istio", mesh.IstioInfo{}, nil},
		{"default install", mesh.IstioInfo{Installed: true, RootNamespace: "istio-system", Namespace: "istio-system"}, []string{"istio-system"}},
		{"custom root and control plane", mesh.IstioInfo{Installed: true, RootNamespace: "mesh-root", Namespace: "mesh-cp"}, []string{"mesh-root", "mesh-cp"}},
	} {
		if got := tc.ist.OwnNamespaces(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
