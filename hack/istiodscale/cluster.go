package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/hack/kwokfleet"
	"github.com/meshbench/meshbench/internal/kube"
)

// Cluster is what the tool does to the cluster.
type Cluster struct {
	Kube    kubernetes.Interface
	Applier kube.Applier
	RunID   string
	Image   string
	// InjectKey/InjectValue label the namespaces for injection.
	InjectKey, InjectValue string
	Log                    *slog.Logger
}

func (c *Cluster) fleet() kwokfleet.Fleet { return Fleet(c.Kube, c.RunID, c.Log) }

// CreateNodes creates n fake nodes and sets their capacity (before kwok starts, so kwok's node-initialize keeps it).
func (c *Cluster) CreateNodes(ctx context.Context, n, maxPods int) error {
	return c.fleet().CreateNodes(ctx, n, maxPods)
}

// WaitNodesReady waits until the n fake nodes are Ready (kwok's node-initialize stage) and kwok still runs.
func (c *Cluster) WaitNodesReady(ctx context.Context, n int, timeout time.Duration, k *kwokfleet.Kwok) error {
	return c.fleet().WaitNodesReady(ctx, n, timeout, k)
}

// Reconcile makes the cluster hold exactly the objects of size: applies its namespaces, Deployments and Services,
// and deletes the tool's workloads and namespaces that are not in it.
func (c *Cluster) Reconcile(ctx context.Context, size Size) error {
	for _, ns := range size.NamespaceNames {
		if _, err := c.Applier.Apply(ctx, Namespace(c.RunID, ns, c.InjectKey, c.InjectValue)); err != nil {
			return err
		}
	}
	want := map[string]bool{}
	for _, w := range size.Workloads {
		want[w.Namespace+"/"+w.Name] = true
		if _, err := c.Applier.Apply(ctx, Service(c.RunID, w)); err != nil {
			return err
		}
		if _, err := c.Applier.Apply(ctx, Deployment(c.RunID, w, c.Image)); err != nil {
			return err
		}
	}
	sel := metav1.ListOptions{LabelSelector: ScaleLabel + "=" + c.RunID}
	deps, err := c.Kube.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list deployments: %w", err)
	}
	for _, d := range deps.Items {
		if want[d.Namespace+"/"+d.Name] {
			continue
		}
		if err := c.Kube.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		if err := c.Kube.CoreV1().Services(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete service %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	nss, err := c.Kube.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		if !slices.Contains(size.NamespaceNames, ns.Name) {
			if err := c.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
			}
		}
	}
	return nil
}

// State is what the cluster shows for a size.
type State struct {
	Pods, Running, Injected int
	InjectedSample          string
	Endpoints               int
	OtherOnFakeNodes        int
	// Deleting counts the tool's pods still terminating (from a smaller earlier layout).
	Deleting int
	Problems []string
}

// Settled says whether the state is the size in full.
func (s State) Settled(size Size) bool {
	return s.Pods == size.Pods && s.Running == size.Pods && s.Injected == size.Pods && s.Endpoints == size.Pods && s.Deleting == 0
}

func (s State) String() string {
	return fmt.Sprintf("%d pods, %d running+ready, %d injected, %d ready endpoints, %d terminating", s.Pods, s.Running, s.Injected, s.Endpoints, s.Deleting)
}

// Observe counts the tool's pods, how many run, carry istio-proxy, and the ready endpoints of its Services.
func (c *Cluster) Observe(ctx context.Context) (State, error) {
	var st State
	pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: ScaleLabel + "=" + c.RunID})
	if err != nil {
		return st, fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			st.Deleting++
			continue
		}
		st.Pods++
		if p.Status.Phase == corev1.PodRunning && podReady(p) {
			st.Running++
		} else if len(st.Problems) < 3 && p.Status.Phase != corev1.PodPending {
			st.Problems = append(st.Problems, fmt.Sprintf("%s/%s is %s", p.Namespace, p.Name, p.Status.Phase))
		}
		if HasIstioProxy(p) {
			st.Injected++
			if st.InjectedSample == "" {
				st.InjectedSample = p.Namespace + "/" + p.Name
			}
		}
	}
	// By namespace, not by label: whether the EndpointSlice controller copies a Service's labels to its slices is
	// its business; the namespaces are the tool's alone.
	eps, err := c.Kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, fmt.Errorf("list endpointslices: %w", err)
	}
	var ours []discoveryv1.EndpointSlice
	for _, e := range eps.Items {
		if strings.HasPrefix(e.Namespace, NamespacePrefix+"-") {
			ours = append(ours, e)
		}
	}
	st.Endpoints = ReadyEndpoints(ours)
	return st, nil
}

// ReadyEndpoints counts the ready endpoints of EndpointSlices. It is pure.
func ReadyEndpoints(items []discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}

// HasIstioProxy reports whether the injector added istio-proxy (a native sidecar init container, or a container on
// clusters without native sidecars) and stamped sidecar.istio.io/status. It is pure.
func HasIstioProxy(p *corev1.Pod) bool {
	if _, ok := p.Annotations["sidecar.istio.io/status"]; !ok {
		return false
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Name == "istio-proxy" {
				return true
			}
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// OtherPodsOnFakeNodes counts pods bound to the fake nodes that are not the tool's (DaemonSets that tolerate every
// taint).
func (c *Cluster) OtherPodsOnFakeNodes(ctx context.Context, nodes int) (int, error) {
	n := 0
	for i := range nodes {
		pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", NodeName(i)).String()})
		if err != nil {
			return 0, fmt.Errorf("list pods on %s: %w", NodeName(i), err)
		}
		for _, p := range pods.Items {
			if !isOurs(&p) && p.Spec.NodeName == NodeName(i) {
				n++
			}
		}
	}
	return n, nil
}

// WaitSettled waits until the cluster holds size in full (watched through pods, polled every 5 s).
func (c *Cluster) WaitSettled(ctx context.Context, size Size, timeout time.Duration, k *kwokfleet.Kwok) (State, error) {
	var st State
	var lastErr error
	t0 := time.Now()
	lastLog := t0
	err := kube.Wait{Timeout: timeout, Interval: 5 * time.Second}.Until(ctx, func(ctx context.Context) (bool, error) {
		if err, exited := k.Exited(); exited {
			return false, fmt.Errorf("kwok exited (see kwok.log): %w", err)
		}
		s, err := c.Observe(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		st = s
		if time.Since(lastLog) > 30*time.Second {
			c.Log.Info("waiting for the size", "want", size.Pods, "state", st.String(), "elapsed", time.Since(t0).Round(time.Second))
			lastLog = time.Now()
		}
		return st.Settled(size), nil
	})
	if err != nil {
		msg := st.String()
		if len(st.Problems) > 0 {
			msg += "; " + strings.Join(st.Problems, "; ")
		}
		if lastErr != nil {
			msg += "; last error: " + lastErr.Error()
		}
		return st, fmt.Errorf("size %d not reached (%s): %w", size.Pods, msg, err)
	}
	return st, nil
}

// Cleanup removes everything the tool created, of this or any earlier run: the namespaces (their pods force-deleted,
// since a pod on a fake node without kwok never finishes terminating), the fake nodes, the pods still bound to them
// (DaemonSet pods) and their leases. It waits until the namespaces are gone. It tries every step and returns every
// failure.
func (c *Cluster) Cleanup(ctx context.Context, timeout time.Duration) error {
	var errs []error
	sel := metav1.ListOptions{LabelSelector: Selector()}
	nss, err := c.Kube.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		errs = append(errs, fmt.Errorf("list namespaces: %w", err))
	} else {
		for _, ns := range nss.Items {
			if ns.DeletionTimestamp == nil {
				if err := c.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns.Name, err))
				}
			}
		}
	}
	// Wait for the namespaces, force-deleting the tool's pods on each round (the namespace controller deletes them
	// gracefully; kwok's pod-delete stage finishes that while kwok runs, nothing does after a killed run).
	err = kube.Wait{Timeout: timeout, Interval: 3 * time.Second}.Until(ctx, func(ctx context.Context) (bool, error) {
		if err := kwokfleet.ForceDeletePods(ctx, c.Kube, metav1.ListOptions{LabelSelector: Selector()}, 20*time.Second, isOurs); err != nil {
			c.Log.Warn("cleanup", "err", err)
		}
		left, err := c.Kube.CoreV1().Namespaces().List(ctx, sel)
		if err != nil {
			return false, nil
		}
		return len(left.Items) == 0, nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("namespaces not gone: %w", err))
	}
	if err := c.fleet().CleanupNodes(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Leftovers lists what of the tool is still in the cluster (empty when clean).
func (c *Cluster) Leftovers(ctx context.Context) ([]string, error) {
	var out []string
	sel := metav1.ListOptions{LabelSelector: Selector()}
	nss, err := c.Kube.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, n := range nss.Items {
		out = append(out, "namespace "+n.Name)
	}
	rest, err := c.fleet().Leftovers(ctx, isOurs)
	if err != nil {
		return nil, err
	}
	out = append(out, rest...)
	return out, nil
}

func isOurs(p *corev1.Pod) bool {
	_, ok := p.Labels[ScaleLabel]
	return ok
}
