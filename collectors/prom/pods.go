package prom

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/results"
)

// Scope says where the measured workload lives.
type Scope struct {
	// AppNamespaces hold the app (and the load clients).
	AppNamespaces []string
	// AppSelector selects the app's pods in AppNamespaces (label selector).
	AppSelector string
	// LoadgenSelector selects the load client pods in AppNamespaces; "" = none.
	LoadgenSelector string
	// Node adds the whole-node component (cAdvisor root cgroup; with the kubelet fallback, node_* metrics).
	Node bool
}

// Mesh components are found by label across all namespaces (Istio may live outside istio-system; waypoints live in
// app namespaces or a shared one).
var meshComponents = []struct {
	component, selector string
}{
	{results.ComponentZtunnel, "app=ztunnel"},
	{results.ComponentWaypoint, "gateway.networking.k8s.io/gateway-class-name=istio-waypoint"},
	{results.ComponentIstiod, "app=istiod"},
	{results.ComponentIstioCNI, "k8s-app=istio-cni-node"},
}

// PodLister is the part of the Kubernetes API PodSets needs.
type PodLister interface {
	List(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
}

// KubePods lists pods with a clientset.
type KubePods struct{ Kube kubernetes.Interface }

// List lists the pods matching selector in namespace ("" = all namespaces).
func (k KubePods) List(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
	l, err := k.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods %q in namespace %q: %w", selector, namespace, err)
	}
	return l.Items, nil
}

// PodSets finds every component's pods: app containers and sidecars in the app's pods, load clients (their
// istio-proxy counts as sidecar: the client is in the mesh like the app), ztunnel, waypoints, istiod, istio-cni.
// Components without pods are left out. Pods that ended (Succeeded, Failed) are ignored; pods being deleted are
// kept, as they ran during the window.
func PodSets(ctx context.Context, l PodLister, sc Scope) ([]PodSet, error) {
	app := PodSet{Component: results.ComponentApp, Pods: map[string][]string{}, Container: matchNotProxy}
	sidecar := PodSet{Component: results.ComponentSidecar, Pods: map[string][]string{}, Container: matchProxy}
	loadgen := PodSet{Component: results.ComponentLoadgen, Pods: map[string][]string{}, Container: matchNotProxy}
	for _, ns := range sc.AppNamespaces {
		appPods, err := l.List(ctx, ns, sc.AppSelector)
		if err != nil {
			return nil, err
		}
		var lgPods []corev1.Pod
		if sc.LoadgenSelector != "" {
			if lgPods, err = l.List(ctx, ns, sc.LoadgenSelector); err != nil {
				return nil, err
			}
		}
		lgNames := map[string]bool{}
		for _, p := range lgPods {
			if live(p) {
				lgNames[p.Name] = true
				loadgen.Pods[ns] = append(loadgen.Pods[ns], p.Name)
				if HasProxy(p) {
					sidecar.Pods[ns] = append(sidecar.Pods[ns], p.Name)
				}
			}
		}
		for _, p := range appPods {
			if !live(p) || lgNames[p.Name] {
				continue
			}
			app.Pods[ns] = append(app.Pods[ns], p.Name)
			if HasProxy(p) {
				sidecar.Pods[ns] = append(sidecar.Pods[ns], p.Name)
			}
		}
	}
	sets := []PodSet{app, sidecar}
	for _, mc := range meshComponents {
		pods, err := l.List(ctx, "", mc.selector)
		if err != nil {
			return nil, err
		}
		s := PodSet{Component: mc.component, Pods: map[string][]string{}}
		for _, p := range pods {
			if live(p) {
				s.Pods[p.Namespace] = append(s.Pods[p.Namespace], p.Name)
			}
		}
		sets = append(sets, s)
	}
	sets = append(sets, loadgen)
	if sc.Node {
		sets = append(sets, NodeSet())
	}
	out := sets[:0]
	for _, s := range sets {
		if !s.Empty() {
			for ns := range s.Pods {
				slices.Sort(s.Pods[ns])
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func live(p corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// HasProxy reports whether the pod has an istio-proxy container, as a regular container or as a native sidecar
// (an init container with restartPolicy Always).
func HasProxy(p corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == "istio-proxy" {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == "istio-proxy" {
			return true
		}
	}
	return false
}
