package workloads

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// TestCheckNamespacesRefusesSystemNamespaces: the cluster's and Istio's namespaces, and a custom Istio root
// namespace the caller knows from the install, are refused with and without --allow-existing-namespaces, before
// any API request (issue 15 section 3); other existing namespaces keep needing the flag.
func TestCheckNamespacesRefusesSystemNamespaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		ns        []string
		allow     bool
		protected []string // the cluster's own (the Istio root namespace)
		want      string   // "" ok, "system" scenario.ErrProtectedNamespace, "foreign" the allow-existing refusal
	}{
		{"kube-system", []string{"kube-system"}, false, nil, "system"},
		{"kube-system with the flag", []string{"kube-system"}, true, nil, "system"},
		{"istio-system with the flag", []string{"istio-system"}, true, nil, "system"},
		{"any istio- with the flag", []string{"istio-gateways"}, true, nil, "system"},
		{"any kube- with the flag", []string{"kube-public"}, true, nil, "system"},
		{"default with the flag", []string{"default"}, true, nil, "system"},
		{"custom root namespace", []string{"mesh-root"}, false, []string{"mesh-root"}, "system"},
		{"custom root namespace with the flag", []string{"shop", "mesh-root"}, true, []string{"mesh-root"}, "system"},
		{"custom root namespace unknown", []string{"mesh-root"}, true, nil, ""},
		{"foreign without the flag", []string{"shop"}, false, []string{"mesh-root"}, "foreign"},
		{"foreign with the flag", []string{"shop"}, true, []string{"mesh-root"}, ""},
		{"missing", []string{"mb-new"}, false, []string{"istio-system"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var objs []*corev1.Namespace
			for _, n := range tc.ns {
				if n != "mb-new" {
					objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
				}
			}
			kc := fake.NewClientset()
			for _, o := range objs {
				_ = kc.Tracker().Add(o)
			}
			_, err := CheckNamespaces(context.Background(), kc, tc.ns, "r1", tc.allow, tc.protected...)
			switch tc.want {
			case "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case "system":
				if !errors.Is(err, scenario.ErrProtectedNamespace) {
					t.Fatalf("err = %v, want scenario.ErrProtectedNamespace", err)
				}
				if n := len(kc.Actions()); n != 0 {
					t.Errorf("%d API requests before the refusal, want none", n)
				}
			case "foreign":
				if err == nil || errors.Is(err, scenario.ErrProtectedNamespace) {
					t.Fatalf("err = %v, want the --allow-existing-namespaces refusal", err)
				}
			}
		})
	}
}

// TestDeployerRefusesRootNamespace: Ensure refuses, before any request, a catalog app whose namespace is the Istio
// root namespace of the install (Deployer.Protected) and an existing app that names it, --allow-existing-namespaces
// or not.
func TestDeployerRefusesRootNamespace(t *testing.T) {
	t.Parallel()
	chain := mustScenario(t, chainScenario)
	chain.Spec.Workload.NamespacePrefix = "mesh-"
	topo := scenario.Topology{Name: "root", Kind: scenario.TopologySingle, Replicas: 1}
	for _, tc := range []struct {
		name  string
		s     *scenario.Scenario
		allow bool
	}{
		{"catalog app", chain, false},
		{"catalog app with the flag", chain, true},
		{"existing app with the flag", existingScenario([]string{"shop", "mesh-root"}, nil, scenario.LoadTarget{Service: "web", Port: 80, Path: "/"}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kc := fake.NewClientset(existingCluster()...)
			d := &Deployer{Clients: &kube.Clients{Kube: kc}, RunID: "r1", AllowExisting: tc.allow, Protected: []string{"mesh-root"}}
			if _, err := d.Ensure(context.Background(), tc.s, topo); !errors.Is(err, scenario.ErrProtectedNamespace) {
				t.Fatalf("err = %v, want scenario.ErrProtectedNamespace", err)
			}
			if n := len(kc.Actions()); n != 0 {
				t.Errorf("%d API requests before the refusal: %v", n, kc.Actions())
			}
		})
	}
}
