package mesh

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/kube"
)

// renderedMesh is the "mesh" key of ConfigMap istio-system/istio as Istio's own charts render it for the ambient
// profile (the local cluster's istiod, istio.io/istio 1.31-dev, hack/localistio/istio-values.yaml).
const renderedMesh = `defaultConfig:
  concurrency: 2
  discoveryAddress: istiod.istio-system.svc:15012
  image:
    imageType: distroless
  proxyMetadata:
    ISTIO_META_ENABLE_HBONE: "false"
    PEER_METADATA_DISCOVERY: "false"
enablePrometheusMerge: true
rootNamespace: istio-system
trustDomain: cluster.local
`

// userMesh has providers of its own and a comment, as a team's mesh config does.
const userMesh = `# tracing goes to the team's collector
extensionProviders:
- name: otel
  opentelemetry:
    service: otel-collector.observability.svc.cluster.local
    port: 4317
- name: meshbench-spans-run1
  zipkin:
    service: old.example.svc.cluster.local
    port: 9411
rootNamespace: istio-system
`

var sinkProvider = ZipkinProvider{Name: "meshbench-spans-run1", Service: "meshbench-spans.app.svc.cluster.local", Port: 9411}

// meshOf decodes a mesh config text enough to compare providers.
func meshOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("mesh config does not parse: %v\n%s", err, text)
	}
	return m
}

func providerNames(t *testing.T, text string) []string {
	var names []string
	ps, _ := meshOf(t, text)["extensionProviders"].([]any)
	for _, p := range ps {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	return names
}

// The provider is added to the mesh config's extensionProviders as istiod reads them (MeshConfig
// extensionProviders[].zipkin {service, port}: istio/api mesh/v1alpha1/config.proto at istio/istio 1.24.0), once,
// replacing an entry of the same name; everything else stays, the user's comment included; taking it out leaves the
// other providers.
func TestZipkinProviderEdit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"rendered", renderedMesh, []string{"meshbench-spans-run1"}},
		{"user providers", userMesh, []string{"otel", "meshbench-spans-run1"}},
		{"empty", "", []string{"meshbench-spans-run1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := withZipkinProvider(tc.text, sinkProvider)
			if err != nil {
				t.Fatal(err)
			}
			if got := providerNames(t, out); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("providers %v, want %v\n%s", got, tc.want, out)
			}
			m := meshOf(t, out)
			ps := m["extensionProviders"].([]any)
			z := ps[len(ps)-1].(map[string]any)["zipkin"].(map[string]any)
			if z["service"] != sinkProvider.Service || z["port"] != float64(9411) {
				t.Errorf("zipkin %v, want service %s port 9411", z, sinkProvider.Service)
			}
			if tc.text != "" && meshOf(t, tc.text)["rootNamespace"] != m["rootNamespace"] {
				t.Errorf("rootNamespace lost:\n%s", out)
			}
			if strings.HasPrefix(tc.text, "#") && !strings.Contains(out, "# tracing goes to the team's collector") {
				t.Errorf("the comment is lost:\n%s", out)
			}
			back, n, err := withoutProviders(out, func(name string) bool { return name == sinkProvider.Name })
			if err != nil || n != 1 {
				t.Fatalf("removed %d (%v), want 1", n, err)
			}
			if got := providerNames(t, back); len(got) != len(tc.want)-1 {
				t.Errorf("after removal %v\n%s", got, back)
			}
		})
	}
	if _, err := withZipkinProvider("extensionProviders: {a: b}\n", sinkProvider); err == nil {
		t.Error("extensionProviders as a mapping: no error")
	}
	if _, err := withZipkinProvider("- a\n", sinkProvider); err == nil {
		t.Error("a list as the mesh config: no error")
	}
	if out, n, err := withoutProviders(renderedMesh, func(string) bool { return true }); err != nil || n != 0 || out != renderedMesh {
		t.Errorf("nothing to remove: %d %v, text changed %v", n, err, out != renderedMesh)
	}
}

// The editor adds the provider and the cleanup label, and its removal writes the original text back byte for byte;
// when somebody changed the ConfigMap meanwhile only the provider goes. The cleanup finds a ConfigMap a killed run
// left edited by its label and takes every meshbench provider out.
func TestMeshConfigEditor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-canary", Namespace: "istio-system"}, Data: map[string]string{"mesh": userMesh}}
	cs := fake.NewClientset(cm)
	clients := &kube.Clients{Kube: cs}
	read := func() *corev1.ConfigMap {
		got, err := cs.CoreV1().ConfigMaps("istio-system").Get(ctx, "istio-canary", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	e := &MeshConfigEditor{Clients: clients, Namespace: "istio-system", Revision: "canary", RunID: "run1"}
	p := ZipkinProvider{Name: TracingProviderName("run1"), Service: sinkProvider.Service, Port: 9411}
	if err := e.AddZipkin(ctx, p); err != nil {
		t.Fatal(err)
	}
	got := read()
	if got.Labels[MeshConfigEditedLabel] != "run1" || !strings.Contains(got.Data["mesh"], sinkProvider.Service) {
		t.Fatalf("after add: labels %v\n%s", got.Labels, got.Data["mesh"])
	}
	if err := e.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	got = read()
	if got.Data["mesh"] != userMesh || got.Labels[MeshConfigEditedLabel] != "" {
		t.Errorf("after remove: labels %v, text restored %v:\n%s", got.Labels, got.Data["mesh"] == userMesh, got.Data["mesh"])
	}

	// Somebody edits the ConfigMap while the provider is in; then the run is killed: the cleanup takes it out.
	e = &MeshConfigEditor{Clients: clients, Namespace: "istio-system", Revision: "canary", RunID: "run2"}
	if err := e.AddZipkin(ctx, ZipkinProvider{Name: TracingProviderName("run2"), Service: sinkProvider.Service, Port: 9411}); err != nil {
		t.Fatal(err)
	}
	got = read()
	got.Data["mesh"] += "enableTracing: true\n"
	if _, err := cs.CoreV1().ConfigMaps("istio-system").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if changed, err := RemoveTracingProviders(ctx, clients, "other-run"); err != nil || len(changed) != 0 {
		t.Errorf("another run's cleanup changed %v (%v)", changed, err)
	}
	changed, err := RemoveTracingProviders(ctx, clients, "")
	if err != nil || len(changed) != 1 {
		t.Fatalf("cleanup changed %v (%v), want the one ConfigMap", changed, err)
	}
	got = read()
	if names := providerNames(t, got.Data["mesh"]); strings.Join(names, ",") != "otel" || !strings.Contains(got.Data["mesh"], "enableTracing: true") ||
		got.Labels[MeshConfigEditedLabel] != "" {
		t.Errorf("after cleanup: providers %v, labels %v\n%s", names, got.Labels, got.Data["mesh"])
	}
}
