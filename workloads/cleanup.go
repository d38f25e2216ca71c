package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/meshbench/meshbench/internal/kube"
)

// Cleaner deletes what meshbench created, found by its labels.
type Cleaner struct {
	Clients *kube.Clients
	Log     *slog.Logger
}

// CleanOptions selects what Clean deletes.
type CleanOptions struct {
	// RunID selects one run; "" selects every run (cleanup --all).
	RunID string
	// Namespaces restricts the sweep to these namespaces (Teardown); empty sweeps the whole cluster.
	Namespaces []string
	// Wait is how long to wait for deleted namespaces to disappear; 0 does not wait.
	Wait time.Duration
}

// CleanReport lists what Clean deleted ("Namespace mb-single", "Deployment team-a/frontend"), in order.
type CleanReport struct {
	Deleted []string `json:"deleted"`
	// Waited is how long the namespace deletions took to finish.
	Waited time.Duration `json:"waited"`
}

// istioManagedLabel marks objects istiod's gateway controller applies (istio/istio deploymentcontroller.go apply()).
const istioManagedLabel = "gateway.istio.io/managed"

// namespacedKinds are swept inside namespaces meshbench did not create (and cluster-wide by cleanup). Resources the
// cluster does not serve (no Gateway API CRDs) are skipped.
var namespacedKinds = []schema.GroupVersionResource{
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"},
	{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}, // a time-to-enforce case's deny policy, a variant's rules
	{Group: "security.istio.io", Version: "v1", Resource: "peerauthentications"},   // a variant's mTLS mode
	{Group: "telemetry.istio.io", Version: "v1", Resource: "telemetries"},          // a variant's access log
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
}

// clusterKinds are cluster-scoped kinds meshbench may create (load clients that read node metrics).
var clusterKinds = []schema.GroupVersionResource{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
}

// SweptResources are the resources a teardown and `meshbench cleanup` list and delete by label (namespaced, then
// cluster-scoped): the run's permissions must grant both on each.
func SweptResources() []schema.GroupVersionResource {
	return append(append([]schema.GroupVersionResource(nil), namespacedKinds...), clusterKinds...)
}

// Clean deletes every namespace labelled for the run (or every run), every labelled object in other namespaces and
// every labelled cluster-scoped object, then waits for the namespaces to be gone. Namespaces without meshbench's
// labels are never deleted.
func (c Cleaner) Clean(ctx context.Context, o CleanOptions) (CleanReport, error) {
	var rep CleanReport
	if c.Clients == nil {
		return rep, errors.New("cleanup: no Kubernetes clients")
	}
	sel := kube.RunSelector(o.RunID)
	nsList, err := c.Clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return rep, fmt.Errorf("cleanup: list namespaces (%s): %w", sel, err)
	}
	only := map[string]bool{}
	for _, n := range o.Namespaces {
		only[n] = true
	}
	ours := map[string]bool{}
	var toDelete []string
	for _, ns := range nsList.Items {
		if len(only) > 0 && !only[ns.Name] {
			continue
		}
		ours[ns.Name] = true
		toDelete = append(toDelete, ns.Name)
	}
	sort.Strings(toDelete)
	var errs []error
	// Objects inside namespaces we did not create (and, cluster-wide, everywhere else) go one by one.
	var sweep []string
	if len(only) > 0 {
		for _, n := range o.Namespaces {
			if !ours[n] {
				sweep = append(sweep, n)
			}
		}
	} else {
		sweep = []string{metav1.NamespaceAll}
	}
	for _, ns := range sweep {
		for _, gvr := range namespacedKinds {
			deleted, err := c.deleteLabelled(ctx, gvr, ns, sel, ours)
			rep.Deleted = append(rep.Deleted, deleted...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(only) == 0 {
		for _, gvr := range clusterKinds {
			deleted, err := c.deleteLabelled(ctx, gvr, "", sel, nil)
			rep.Deleted = append(rep.Deleted, deleted...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	bg := metav1.DeletePropagationBackground
	for _, ns := range toDelete {
		err := c.Clients.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns, err))
			continue
		}
		rep.Deleted = append(rep.Deleted, "Namespace "+ns)
		c.log().Info("deleting namespace", "namespace", ns)
	}
	if o.Wait > 0 && len(toDelete) > 0 {
		start := time.Now()
		if err := c.waitGone(ctx, toDelete, o.Wait); err != nil {
			errs = append(errs, err)
		}
		rep.Waited = time.Since(start)
	}
	return rep, errors.Join(errs...)
}

func (c Cleaner) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// deleteLabelled deletes the objects of one resource matching sel in ns ("" = all namespaces, or cluster scope),
// skipping objects in namespaces that are deleted whole.
func (c Cleaner) deleteLabelled(ctx context.Context, gvr schema.GroupVersionResource, ns, sel string, skipNS map[string]bool) ([]string, error) {
	ri := c.Clients.Dynamic.Resource(gvr)
	list, err := ri.Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil // the cluster does not serve this resource
	}
	if apierrors.IsForbidden(err) {
		// meshbench never created what it may not even list (the run's RBAC has no such permission).
		c.log().Warn("cleanup: not allowed to list, skipped", "resource", gvr.Resource, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cleanup: list %s: %w", gvr.Resource, err)
	}
	var out []string
	var errs []error
	bg := metav1.DeletePropagationBackground
	for _, it := range list.Items {
		if skipNS[it.GetNamespace()] || it.GetDeletionTimestamp() != nil {
			continue
		}
		// An object with an owner goes with it (garbage collection; deleting what istiod made for a waypoint before its
		// Gateway only makes istiod recreate it); what istiod manages without an owner is never meshbench's.
		if len(it.GetOwnerReferences()) > 0 || it.GetLabels()[istioManagedLabel] != "" {
			continue
		}
		err := ri.Namespace(it.GetNamespace()).Delete(ctx, it.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", it.GetKind(), it.GetNamespace(), it.GetName(), err))
			continue
		}
		name := it.GetName()
		if it.GetNamespace() != "" {
			name = it.GetNamespace() + "/" + name
		}
		out = append(out, kindOf(gvr, it.GetKind())+" "+name)
	}
	return out, errors.Join(errs...)
}

func kindOf(gvr schema.GroupVersionResource, kind string) string {
	if kind != "" {
		return kind
	}
	return gvr.Resource
}

// waitGone waits, watching namespaces, until none of names exists.
func (c Cleaner) waitGone(ctx context.Context, names []string, timeout time.Duration) error {
	kc := c.Clients.Kube
	var remaining []string
	err := kube.WaitFor(ctx, timeout, []kube.WatchOpener{func(ctx context.Context) (watch.Interface, error) {
		return kc.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{})
	}}, func(ctx context.Context) (bool, error) {
		remaining = remaining[:0]
		for _, n := range names {
			_, err := kc.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("get namespace %s: %w", n, err)
			}
			remaining = append(remaining, n)
		}
		return len(remaining) == 0, nil
	})
	if errors.Is(err, kube.ErrWaitTimeout) {
		return fmt.Errorf("namespaces still terminating after %s: %s (check `kubectl get ns %s -o yaml` for stuck finalizers)",
			timeout, strings.Join(remaining, ", "), remaining[0])
	}
	return err
}
