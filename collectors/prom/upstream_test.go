package prom

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/upstreamfixture"
	"github.com/meshbench/meshbench/results"
)

// TestPodSetsUpstreamMinors classifies the pods each Istio minor 1.24 ... 1.31 really renders (testdata/upstream/
// istio.yaml, read from istio/istio at each tag): the run's waypoint (labels of istio-discovery files/waypoint.yaml),
// ztunnel (ztunnel templates/daemonset.yaml), istio-cni (istio-cni templates/daemonset.yaml) and istiod of a revision
// (istio-discovery templates/deployment.yaml). Before, waypoints were selected by gateway-class-name, which exists
// only from 1.28: on 1.24-1.27 the waypoint set was empty and the waypoint cost vanished.
func TestPodSetsUpstreamMinors(t *testing.T) {
	t.Parallel()
	minors, err := upstreamfixture.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range minors {
		t.Run(m.Minor, func(t *testing.T) {
			t.Parallel()
			vars := upstreamfixture.Vars(m, "canary")
			mk := func(ns, name, node string, labels map[string]string, containers []string) *corev1.Pod {
				p := pod(ns, name, labels, containers, nil, corev1.PodRunning)
				p.Spec.NodeName = node
				return p
			}
			comp := func(c upstreamfixture.Component, rev bool) map[string]string {
				if rev {
					return upstreamfixture.PodLabels(c, vars, "canary")
				}
				return upstreamfixture.PodLabels(c, vars, "")
			}
			app := map[string]string{"meshbench.dev/app": "fortio-chain"}
			maps.Copy(app, upstreamfixture.Expand(m.Injected.AddsPodLabels, vars))
			kube := fake.NewClientset(
				mk("mb-single", "chain-0-a", "node1", app, []string{"app"}),
				mk("mb-single", "waypoint-7d9", "node2", upstreamfixture.Expand(m.Waypoint.PodLabels, vars), m.Waypoint.Containers),
				mk(m.Ztunnel.Namespace, "ztunnel-a", "node1", comp(m.Ztunnel, false), m.Ztunnel.Containers),
				mk(m.Ztunnel.Namespace, "ztunnel-b", "node2", comp(m.Ztunnel, false), m.Ztunnel.Containers),
				mk(m.Ztunnel.Namespace, "ztunnel-c", "node3", comp(m.Ztunnel, false), m.Ztunnel.Containers),
				mk(m.IstioCNI.Namespace, "istio-cni-node-a", "node1", comp(m.IstioCNI, false), m.IstioCNI.Containers),
				mk(m.Istiod.Namespace, "istiod-canary-5f", "node3", comp(m.Istiod, true), m.Istiod.Containers),
				mk(m.Istiod.Namespace, "istiod-6c", "node3", comp(m.Istiod, false), m.Istiod.Containers), // the other control plane
			)
			sets, err := PodSets(context.Background(), KubePods{Kube: kube}, Scope{
				AppNamespaces: []string{"mb-single"}, AppSelector: "meshbench.dev/app=fortio-chain",
				Mesh: MeshScope{Istiod: true, IstiodRevision: "canary", NodeAgents: true, Waypoints: []NamespacedName{{Namespace: "mb-single", Name: "waypoint"}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range sets {
				var pods []string
				for ns, ps := range s.Pods {
					pods = append(pods, ns+"/"+strings.Join(ps, ","))
				}
				got[string(s.Component)] = strings.Join(pods, " ")
			}
			want := map[string]string{
				string(results.ComponentApp):      "mb-single/chain-0-a",
				string(results.ComponentWaypoint): "mb-single/waypoint-7d9",
				string(results.ComponentZtunnel):  m.Ztunnel.Namespace + "/ztunnel-a,ztunnel-b", // not node3: no app, load client or waypoint there
				string(results.ComponentIstioCNI): m.IstioCNI.Namespace + "/istio-cni-node-a",
				string(results.ComponentIstiod):   m.Istiod.Namespace + "/istiod-canary-5f",
			}
			if !maps.Equal(got, want) {
				t.Errorf("classification:\n got  %v\n want %v", got, want)
			}
			// Sidecars of injected pods are found by the container name the injector uses.
			if m.Injected.ProxyContainer != "istio-proxy" || !hasProxy(corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: m.Injected.ProxyContainer}}}}) {
				t.Errorf("injected proxy container %q", m.Injected.ProxyContainer)
			}
		})
	}
}
