package workloads

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
)

func unstr(apiVersion, kind, ns, name string, labels map[string]string, owner *metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	if owner != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	return u
}

// In a namespace meshbench did not create, cleanup deletes its waypoint Gateway and leaves what istiod created for it
// alone: istiod copies the Gateway's labels onto the Deployment, Service and ServiceAccount it applies, sets an
// ownerReference to the Gateway WITHOUT controller=true, and labels them gateway.istio.io/managed (istio/istio
// pilot/pkg/config/kube/gateway/deploymentcontroller.go and manifests/charts/istio-control/istio-discovery/files/
// waypoint.yaml @1.24.0..1.31.0-rc.0). Deleting them directly would only make istiod recreate them while the Gateway
// exists; garbage collection removes them once the Gateway is gone. Before the fix only pods with owners were skipped.
func TestCleanLeavesIstiodOwnedObjects(t *testing.T) {
	t.Parallel()
	run := kube.RunLabels("r1")
	owner := &metav1.OwnerReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "waypoint", UID: "u1"}
	managed := kube.MergeLabels(run, map[string]string{istioManagedLabel: "istio.io-mesh-controller", "gateway.networking.k8s.io/gateway-name": "waypoint"})
	gw := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	objs := []struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}{
		{gw, unstr("gateway.networking.k8s.io/v1", "Gateway", "team-a", "waypoint", run, nil)},
		{deploy, unstr("apps/v1", "Deployment", "team-a", "waypoint", managed, owner)},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, unstr("v1", "Service", "team-a", "waypoint", managed, owner)},
		// Kubernetes < 1.28: istiod sets no ownerReference on the ServiceAccount (waypoint.yaml `if ge .KubeVersion 128`)
		{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, unstr("v1", "ServiceAccount", "team-a", "waypoint", managed, nil)},
		{deploy, unstr("apps/v1", "Deployment", "team-a", "frontend", run, nil)},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, unstr("v1", "ConfigMap", "team-a", "unrelated", nil, nil)},
	}
	kinds := map[schema.GroupVersionResource]string{}
	for _, gvr := range append(slices.Clone(namespacedKinds), clusterKinds...) {
		kinds[gvr] = "List"
	}
	// Objects go in through Create: the fake's constructor would guess the resource of kind Gateway as "gatewaies".
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds)
	for _, o := range objs {
		if _, err := dyn.Resource(o.gvr).Namespace("team-a").Create(context.Background(), o.obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kc := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	rep, err := Cleaner{Clients: &kube.Clients{Kube: kc, Dynamic: dyn}}.Clean(context.Background(), CleanOptions{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Gateway team-a/waypoint", "Deployment team-a/frontend"}
	if !slices.Equal(rep.Deleted, want) {
		t.Errorf("deleted %v, want %v", rep.Deleted, want)
	}
	for _, gvr := range []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}, {Version: "v1", Resource: "services"}, {Version: "v1", Resource: "serviceaccounts"}} {
		if _, err := dyn.Resource(gvr).Namespace("team-a").Get(context.Background(), "waypoint", metav1.GetOptions{}); err != nil {
			t.Errorf("istiod's %s team-a/waypoint was deleted: %v", gvr.Resource, err)
		}
	}
}
