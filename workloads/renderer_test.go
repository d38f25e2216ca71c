package workloads

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// countingRender is readManifests counting its calls.
func countingRender(n *atomic.Int32) func(*scenario.Manifests) ([]manifestObject, scenario.Problems) {
	return func(m *scenario.Manifests) ([]manifestObject, scenario.Problems) {
		n.Add(1)
		return readManifests(m)
	}
}

// TestDeployerRendersManifestsOnce: a Deployer builds the objects twice per Ensure (namespaces first, then with the
// key) and once more per case; the kustomization is built once for all of them, and every Ensure applies the
// same objects as the pure Objects does.
func TestDeployerRendersManifestsOnce(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, kustomizeManifests, kustomizeTopologies)
	kc := fake.NewClientset()
	kc.Fake.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Namespaced: false},
			{Name: "services", Kind: "Service", Namespaced: true},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}}},
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kc.Discovery()))
	dyn := dynfake.NewSimpleDynamicClient(runtime.NewScheme())
	var applied atomic.Int32
	dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(a.(clienttesting.PatchAction).GetPatch()); err != nil {
			return true, nil, err
		}
		applied.Add(1)
		return true, u, nil
	})
	var renders atomic.Int32
	d := &Deployer{Clients: &kube.Clients{Kube: kc, Dynamic: dyn, Mapper: mapper}, RunID: "r1"}
	d.renderer.render = countingRender(&renders)
	want := 0
	for range 2 { // two cases per topology
		for _, topo := range s.Spec.Workload.Topologies {
			if _, err := d.Ensure(context.Background(), s, topo); err != nil {
				t.Fatal(err)
			}
			objs, _, err := Objects(s, topo, "r1")
			if err != nil {
				t.Fatal(err)
			}
			want += len(objs)
		}
	}
	if n := renders.Load(); n != 1 {
		t.Errorf("kustomization rendered %d times over 4 Ensures, want 1", n)
	}
	if n := applied.Load(); int(n) != want {
		t.Errorf("applied %d objects, want %d", n, want)
	}
}

// TestRendererKeys: another kustomization, other paths or the same paths in another order are read anew; the
// same resolved ones are not, and problems of one reading are never extended by a caller's.
func TestRendererKeys(t *testing.T) {
	t.Parallel()
	var renders atomic.Int32
	r := &Renderer{render: countingRender(&renders)}
	check := func(manifests string, wantRenders int32) int {
		t.Helper()
		s := manifestsScenario(t, manifests, "  load:\n    targets: [{service: web}]\n")
		ps := r.CheckManifests(s)
		if n := renders.Load(); n != wantRenders {
			t.Errorf("%q: %d renders, want %d", manifests, n, wantRenders)
		}
		return len(ps)
	}
	check("      kustomization: kustomize-app\n", 1)
	check("      kustomization: kustomize-app\n      scale: [nope]\n", 1)
	check("      paths: [paths-app, cluster-scoped]\n", 2)
	if first, again := check("      paths: [paths-app, cluster-scoped]\n      scale: [nope]\n", 2), check("      paths: [paths-app, cluster-scoped]\n", 2); first != again+1 {
		t.Errorf("problems: %d with a bad scale entry, %d without: the cached problems grew", first, again)
	}
	check("      paths: [cluster-scoped, paths-app]\n", 3)
	check("      kustomization: bad-kustomization\n", 4)
}

func TestManifestRefs(t *testing.T) {
	t.Parallel()
	refs := parseRefs(&scenario.Manifests{
		Scale:     []string{"web", "StatefulSet/db", "Bad/kind", "not a name"},
		Placement: map[string]int{"store": 1, "Service/store": 2, "Deployment/api": 3, "bad name": 4},
	})
	for _, tc := range []struct {
		kind, name string
		scaled     bool
		ns         int
	}{
		{"Deployment", "web", true, 0},
		{"StatefulSet", "web", true, 0},
		{"StatefulSet", "db", true, 0},
		{"Deployment", "db", false, 0},
		{"Service", "store", false, 2}, // Kind/name before the bare name, whatever the key order
		{"Deployment", "store", false, 1},
		{"Deployment", "api", false, 3},
		{"Service", "api", false, 0},
		{"Deployment", "kind", false, 0}, // "Bad/kind" did not parse: Validate reports it, nothing matches it
	} {
		if got := refs.scaled(tc.kind, tc.name); got != tc.scaled {
			t.Errorf("scaled(%s/%s) = %v, want %v", tc.kind, tc.name, got, tc.scaled)
		}
		if got := refs.namespaceIndex(tc.kind, tc.name); got != tc.ns {
			t.Errorf("namespaceIndex(%s/%s) = %d, want %d", tc.kind, tc.name, got, tc.ns)
		}
	}
	if got := refs.maxNamespace(); got != 3 {
		t.Errorf("maxNamespace = %d, want 3 (the unparsed key's 4 is left out)", got)
	}
}

// TestRendererProblemsNotShared: the problems of one reading (here with room to grow in their backing array) are
// each caller's own: what one check adds never shows in another's.
func TestRendererProblemsNotShared(t *testing.T) {
	t.Parallel()
	r := &Renderer{render: func(m *scenario.Manifests) ([]manifestObject, scenario.Problems) {
		objs, _ := readManifests(m)
		ps := make(scenario.Problems, 1, 8)
		ps[0] = scenario.Problem{Path: "spec.workload.manifests", Message: "read"}
		return objs, ps
	}}
	scaled := func(name string) *scenario.Scenario {
		return manifestsScenario(t, "      kustomization: kustomize-app\n      scale: ["+name+"]\n", "  load:\n    targets: [{service: web}]\n")
	}
	first := r.CheckManifests(scaled("one"))
	second := r.CheckManifests(scaled("two"))
	if len(first) != 2 || len(second) != 2 || !strings.Contains(first[1].Message, `"one"`) || !strings.Contains(second[1].Message, `"two"`) {
		t.Errorf("problems share a backing array:\nfirst %v\nsecond %v", first, second)
	}
}

// TestManifestsYAMLRoundTrip: the rendered stream read back as manifests.paths (what a scheduled pod does) builds
// the same objects and target as the kustomization it came from.
func TestManifestsYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, kustomizeManifests, kustomizeTopologies)
	b, err := new(Renderer).ManifestsYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "manifests.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	back := manifestsScenario(t, strings.Replace(kustomizeManifests, "kustomization: kustomize-app", "paths: [manifests.yaml]", 1), kustomizeTopologies)
	back.Spec.Workload.Manifests.BaseDir = dir
	for _, topo := range s.Spec.Workload.Topologies {
		want, wt, err := Objects(s, topo, "r1")
		if err != nil {
			t.Fatal(err)
		}
		got, gt, err := Objects(back, topo, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var wb, gb bytes.Buffer
		if err := kube.RenderYAML(&wb, want); err != nil {
			t.Fatal(err)
		}
		if err := kube.RenderYAML(&gb, got); err != nil {
			t.Fatal(err)
		}
		if wb.String() != gb.String() || !reflect.DeepEqual(wt, gt) {
			t.Errorf("%s: read back differs:\n got %s\nwant %s", topo.Name, gb.String(), wb.String())
		}
	}
	if b, err := new(Renderer).ManifestsYAML(manifestsScenario(t, "      paths: [untracked-kinds]\n", "  load:\n    targets: [{service: web}]\n")); err == nil || b != nil {
		t.Errorf("refused manifests rendered: %v", err)
	}
}
