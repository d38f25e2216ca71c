//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// Istio's Bookinfo, both topologies, is accepted by the real API server (server-side dry-run: validated and
// admitted, nothing persisted). Its public images are not pullable here, so nothing is run.
func TestWorkloadsBookinfoServerDryRun(t *testing.T) {
	c := RequireCluster(t)
	s := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "e2e-bookinfo"},
		Spec: scenario.Spec{Workload: scenario.Workload{
			App: scenario.AppBookinfo, Replicas: 2, NamespacePrefix: "e2e-bi-" + randomSuffix(4) + "-",
			Topologies: []scenario.Topology{{Kind: scenario.TopologySingle}, {Kind: scenario.TopologyMulti, Namespaces: 3}},
		}}}
	setDefaults(s)
	serverDryRun(t, c, s, nil)
}

// The repository's kustomization app (frontend -> backend -> store), rendered by kustomize and placed by meshbench
// over one and three namespaces, is accepted by the real API server (server-side dry-run).
func TestWorkloadsManifestsServerDryRun(t *testing.T) {
	c := RequireCluster(t)
	s := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "e2e-own"},
		Spec: scenario.Spec{
			Workload: scenario.Workload{
				App: scenario.AppManifests, Replicas: 2, NamespacePrefix: "e2e-own-" + randomSuffix(4) + "-",
				Manifests: &scenario.Manifests{Kustomization: "../../workloads/testdata/manifests/kustomize-app",
					Scale: []string{"frontend", "backend"}, Placement: map[string]int{"backend": 1, "store": 2},
					ServiceRefs: []string{"backend", "store"}},
				Topologies: []scenario.Topology{{Kind: scenario.TopologySingle}, {Kind: scenario.TopologyMulti, Namespaces: 3}},
			},
			Load: scenario.LoadSpec{Targets: []scenario.LoadTarget{{Service: "frontend", Port: 8080, Path: "/"}}},
		}}
	setDefaults(s)
	if ps := workloads.CheckManifests(s); len(ps) > 0 {
		t.Fatal(ps)
	}
	serverDryRun(t, c, s, nil)
}

// serverDryRun applies every object of every topology of s with dryRun=All after creating its namespaces for real
// (namespaced dry-runs need them; they are removed at the end of the test), and checks that nothing else was
// persisted. prepare, when set, changes a topology's objects before they are applied (what Deployer.Ensure would do
// to them, such as bank-of-anthos' real jwt-key). It returns the clients it used, for a caller that goes on in the
// same namespaces.
func serverDryRun(t *testing.T, c *Cluster, s *scenario.Scenario, prepare func(objs []runtime.Object)) *kube.Clients {
	t.Helper()
	cl := wlClients(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	real := kube.Applier{Dynamic: cl.Dynamic, Mapper: cl.Mapper}
	dry := kube.Applier{Dynamic: cl.Dynamic, Mapper: cl.Mapper, DryRun: true}
	for _, topo := range s.Spec.Workload.Topologies {
		objs, target, err := workloads.Objects(s, topo, c.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if prepare != nil {
			prepare(objs)
		}
		for _, o := range objs {
			if ns, ok := o.(*corev1.Namespace); ok {
				if _, err := real.Apply(ctx, ns); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					_ = c.DeleteNamespace(ctx, ns.Name)
				})
			}
		}
		n := 0
		for _, o := range objs {
			if _, ok := o.(*corev1.Namespace); ok {
				continue
			}
			if _, err := dry.Apply(ctx, o); err != nil {
				t.Errorf("%s: server-side dry-run rejected: %v", topo.Name, err)
			}
			n++
		}
		if n < len(target.Workloads) || len(target.Workloads) == 0 {
			t.Errorf("%s: %d objects dry-run for %d workloads", topo.Name, n, len(target.Workloads))
		}
		t.Logf("%s %s: %d objects in %d namespaces accepted by the API server (dry-run)", s.Spec.Workload.App, topo.Name, n, len(target.Namespaces))
		for _, ns := range target.Namespaces {
			deps, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(deps.Items) != 0 {
				t.Errorf("dry-run persisted %d Deployments in %s", len(deps.Items), ns)
			}
		}
	}
	return cl
}
