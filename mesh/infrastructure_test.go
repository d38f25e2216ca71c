package mesh

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/scenario"
)

// gatewayCRD reads the standard-channel Gateway CRD of the sigs.k8s.io/gateway-api module meshbench builds with
// (config/crd/standard/gateway.networking.k8s.io_gateways.yaml at v1.6.3, from the module cache).
func gatewayCRD(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Skipf("locate the gateway-api module: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "gateway.networking.k8s.io_gateways.yaml"))
	if err != nil {
		t.Skipf("the gateway-api module has no standard CRDs: %v", err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// Issue 29 section 1 item 3: Gateway API's standard channel has spec.infrastructure only from v1.2.0
// (kubernetes-sigs/gateway-api config/crd/standard/gateway.networking.k8s.io_gateways.yaml: absent at v1.0.0, v1.1.0
// and v1.1.1, present from v1.2.0). Detection reads the schema: the real v1.6.3 CRD keeps the labels; the same CRD
// without spec.infrastructure (what v1.1.x serves) is judged pruned.
func TestHasInfrastructureLabels(t *testing.T) {
	t.Parallel()
	crd := gatewayCRD(t)
	if has, ok := hasInfrastructureLabels(crd); !has || !ok {
		t.Fatalf("gateway-api v1.6.3 standard Gateway CRD: has %v ok %v, want spec.infrastructure.labels", has, ok)
	}
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	for _, v := range versions {
		unstructured.RemoveNestedField(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "infrastructure")
	}
	if err := unstructured.SetNestedSlice(crd, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if has, ok := hasInfrastructureLabels(crd); has || !ok {
		t.Errorf("Gateway CRD without spec.infrastructure: has %v ok %v, want pruned", has, ok)
	}
	if _, ok := hasInfrastructureLabels(map[string]any{"spec": map[string]any{}}); ok {
		t.Error("a CRD without versions must not be judged")
	}
}

// After creating a waypoint Gateway, Apply looks at what the API server stored: CRDs older than v1.2.0 (standard)
// prune spec.infrastructure, and then istiod copies the Gateway's labels, the run label among them, onto the
// waypoint's objects. The transition records it as a typed warning; with the field kept there is none.
func TestApplyWarnsWhenInfrastructureIsPruned(t *testing.T) {
	t.Parallel()
	for _, prune := range []bool{true, false} {
		clients, _ := newCluster(t, scenario.ModeAmbient, false)
		gc := clients.Gateway.(interface {
			PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
		})
		if prune {
			// The API server of a v1.1.x standard CRD: the unknown field is dropped before the object is stored.
			gc.PrependReactor("create", "gateways", func(a k8stesting.Action) (bool, runtime.Object, error) {
				a.(k8stesting.CreateAction).GetObject().(*gwv1.Gateway).Spec.Infrastructure = nil
				return false, nil, nil
			})
		}
		sw := &Switcher{Clients: clients, RunID: testRun, Timeout: 5 * time.Second}
		tr, err := sw.Apply(context.Background(), testTarget, scenario.ModeWaypoint, testWaypoint)
		if err != nil {
			t.Fatal(err)
		}
		var pruned []string
		for _, w := range tr.Warnings {
			if w.Kind == WarningInfrastructurePruned {
				pruned = append(pruned, w.Object)
			}
		}
		want := 0
		if prune {
			want = len(Waypoints(testTarget, testWaypoint))
		}
		if len(pruned) != want {
			t.Errorf("prune %v: warnings %+v, want %d of kind %s", prune, tr.Warnings, want, WarningInfrastructurePruned)
		}
		gw, err := clients.Gateway.GatewayV1().Gateways(testTarget.Namespaces[0]).Get(context.Background(), waypointName(testWaypoint), metav1.GetOptions{})
		if err != nil || infrastructureKept(gw) == prune {
			t.Errorf("prune %v: stored Gateway %+v (%v)", prune, gw, err)
		}
	}
}
