package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// moduleFile is a file of the pinned istio.io/istio module (hack/localistio/go.mod), found through `go list`.
func moduleFile(t *testing.T, rel string) []byte {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/istio").Output()
	if err != nil {
		t.Fatalf("go list -m istio.io/istio: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The module's template includes the metadata_discovery bootstrap extension (istio.workload.BootstrapExtension)
// under `{{- if .metadata_discovery }}`, which istio/istio pkg/bootstrap/config.go forces on for "waypoint~"
// proxies at the pin: the generated template has none of it and is still a template pkg/bootstrap can parse.
func TestWaypointBootstrapTemplate(t *testing.T) {
	src := moduleFile(t, "tools/packaging/common/envoy_bootstrap.json")
	if !strings.Contains(string(src), metadataDiscoveryGuard) || !strings.Contains(string(src), "istio.workload.BootstrapExtension") {
		t.Fatalf("the module's envoy_bootstrap.json has no %q block with the extension: upstream changed", metadataDiscoveryGuard)
	}
	out, err := WaypointBootstrapTemplate(src)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), ".metadata_discovery") {
		t.Error("the generated template still reads .metadata_discovery")
	}
	// It parses as pkg/bootstrap's newTemplate parses it (istio/istio pkg/bootstrap/instance.go: toJSON and sprig's
	// generic functions).
	funcs := template.FuncMap{"toJSON": func(any) (string, error) { return "{}", nil }}
	if _, err := template.New("bootstrap").Funcs(funcs).Funcs(sprig.GenericFuncMap()).Parse(string(out)); err != nil {
		t.Errorf("the generated template does not parse: %v", err)
	}
	if _, err := WaypointBootstrapTemplate([]byte(`{"admin": {}}`)); err == nil {
		t.Error("a template without the block must be refused (upstream changed)")
	}
}

// The EnvoyFilter removes the two peer-metadata filters (io.istio.http.peer_metadata.Config, which upstream Envoy
// does not have) and replaces connect_authority with istiod's own filter (istio/istio pilot/pkg/xds/filters
// ConnectAuthorityFilter at the pin) whose istio.hashable_string factory keys are upstream Envoy's
// envoy.hashable_string; it targets the istio-waypoint GatewayClass in the root namespace.
func TestWaypointEnvoyFilter(t *testing.T) {
	ef, err := WaypointEnvoyFilter("istio-system", "canary")
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(ef)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"name: meshbench-upstream-envoy-waypoint", "namespace: istio-system", "istio.io/rev: canary",
		"name: istio-waypoint", "kind: GatewayClass", "context: SIDECAR_INBOUND",
		"name: waypoint_downstream_peer_metadata", "name: waypoint_upstream_peer_metadata", "operation: REMOVE",
		"name: connect_authority", "operation: REPLACE", envoyHashableString, "type.googleapis.com/envoy.extensions.filters.http.set_filter_state.v3.Config",
		"name: connect_terminate", "name: main_internal"} {
		if !strings.Contains(s, want) {
			t.Errorf("EnvoyFilter lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, istioHashableString) {
		t.Errorf("EnvoyFilter still carries %s:\n%s", istioHashableString, s)
	}
}
