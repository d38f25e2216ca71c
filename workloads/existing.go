package workloads

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// ExistingAppSelector selects the pods of app "existing" in its namespaces: every pod except meshbench's own (load
// clients) and waypoints, since the app's pods carry none of meshbench's labels.
var ExistingAppSelector = kube.ManagedByLabel + "!=" + kube.ManagedByValue + ",!gateway.networking.k8s.io/gateway-name"

// Discover reads the Target of app "existing" from the cluster (Deployments, StatefulSets and Services of its
// namespaces, narrowed to its workloads) and changes nothing. A missing namespace or a ref that matches nothing is an
// error: a typo must not silently benchmark a smaller app.
func Discover(ctx context.Context, kc kubernetes.Interface, s *scenario.Scenario) (target.Target, error) {
	if s == nil || s.Spec.Workload.Existing == nil {
		return target.Target{}, fmt.Errorf("discover existing app: spec.workload.existing is not set")
	}
	ex := s.Spec.Workload.Existing
	if len(ex.Namespaces) == 0 {
		return target.Target{}, fmt.Errorf("discover existing app: existing.namespaces is empty")
	}
	t := target.Target{App: scenario.AppExisting, Namespaces: append([]string(nil), ex.Namespaces...),
		AppSelector: ExistingAppSelector, ClusterDomain: domainOf(s.Spec.Workload)}
	if len(s.Spec.Workload.Topologies) > 0 {
		t.Topology = s.Spec.Workload.Topologies[0].Name
	}
	var all []workloadRef
	svcs := map[string]map[string]bool{} // namespace -> service names
	for _, ns := range ex.Namespaces {
		if _, err := kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return target.Target{}, fmt.Errorf("discover existing app: namespace %q (existing.namespaces) does not exist", ns)
			}
			return target.Target{}, fmt.Errorf("discover existing app: get namespace %q: %w", ns, err)
		}
		deps, err := kc.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return target.Target{}, fmt.Errorf("discover existing app: list deployments in %q: %w", ns, err)
		}
		for i := range deps.Items {
			d := &deps.Items[i]
			all = append(all, existingRef(target.KindDeployment, ns, d.Name, d.Spec.Replicas, d.Spec.Selector))
		}
		sts, err := kc.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return target.Target{}, fmt.Errorf("discover existing app: list statefulsets in %q: %w", ns, err)
		}
		for i := range sts.Items {
			st := &sts.Items[i]
			all = append(all, existingRef(target.KindStatefulSet, ns, st.Name, st.Spec.Replicas, st.Spec.Selector))
		}
		sl, err := kc.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return target.Target{}, fmt.Errorf("discover existing app: list services in %q: %w", ns, err)
		}
		svcs[ns] = map[string]bool{}
		names := make([]string, 0, len(sl.Items))
		for _, svc := range sl.Items {
			svcs[ns][svc.Name] = true
			names = append(names, svc.Name)
		}
		sort.Strings(names)
		t.Services = append(t.Services, names...)
	}
	ws, err := filterWorkloads(all, ex.Workloads)
	if err != nil {
		return target.Target{}, fmt.Errorf("discover existing app: %w", err)
	}
	t.Workloads = ws
	if err := existingEntry(&t, s, svcs); err != nil {
		return target.Target{}, fmt.Errorf("discover existing app: %w", err)
	}
	return t, nil
}

func existingRef(kind, ns, name string, replicas *int32, sel *metav1.LabelSelector) workloadRef {
	r := int32(1)
	if replicas != nil {
		r = *replicas
	}
	return workloadRef{Kind: kind, Namespace: ns, Name: name, Replicas: r, Selector: metav1.FormatLabelSelector(sel)}
}

// filterWorkloads keeps the workloads refs names, in cluster order; no refs keeps every workload. A ref that matches
// nothing is an error naming it.
func filterWorkloads(all []workloadRef, refs []string) ([]workloadRef, error) {
	if len(refs) == 0 {
		return all, nil
	}
	keep := make([]bool, len(all))
	for _, ref := range refs {
		ns, kindName := "", ref
		if strings.Count(ref, "/") == 2 {
			var err error
			if ns, kindName, err = scenario.SplitNamespacedRef(ref); err != nil {
				return nil, fmt.Errorf("existing.workloads: %w", err)
			}
		}
		kind, name, err := scenario.ParseWorkloadRef(kindName, false)
		if err != nil {
			return nil, fmt.Errorf("existing.workloads: %w", err)
		}
		matched := false
		for i, w := range all {
			if w.Name == name && (kind == "" || w.Kind == kind) && (ns == "" || w.Namespace == ns) {
				keep[i], matched = true, true
			}
		}
		if !matched {
			return nil, fmt.Errorf("existing.workloads %q matches no Deployment or StatefulSet in existing.namespaces", ref)
		}
	}
	var out []workloadRef
	for i, w := range all {
		if keep[i] {
			out = append(out, w)
		}
	}
	return out, nil
}

// existingEntry sets the load targets from spec.load.targets, every one of them: a Service in its Namespace, else
// in the first of existing.namespaces that has it; or a URL. The first is the entry.
func existingEntry(t *target.Target, s *scenario.Scenario, svcs map[string]map[string]bool) error {
	ts := s.Spec.Load.Targets
	if len(ts) == 0 {
		return fmt.Errorf("spec.load.targets is required for app existing")
	}
	var es []target.LoadTarget
	firstNS := ""
	for i, lt := range ts {
		ns := ""
		if lt.Service != "" {
			ns = lt.Namespace
			if ns == "" {
				for _, n := range t.Namespaces {
					if svcs[n][lt.Service] {
						ns = n
						break
					}
				}
			}
			if ns == "" || !svcs[ns][lt.Service] {
				return fmt.Errorf("spec.load.targets[%d]: service %q is in none of existing.namespaces %v", i, lt.Service, t.Namespaces)
			}
		}
		if i == 0 {
			firstNS = ns
		}
		es = append(es, loadTargetOf(lt, ns, t.ClusterDomain, s.Spec.Load.Path))
	}
	setLoadTargets(t, es, ts[0], firstNS)
	return nil
}

// existing is app existing offline: meshbench applies none of its objects (its images are already on the user's
// nodes), so it has none; the target holds the namespaces the scenario names. Discover gives the workloads and
// Services from the cluster.
func (b *builder) existing() error {
	ex := b.s.Spec.Workload.Existing
	if ex == nil || len(ex.Namespaces) == 0 {
		return fmt.Errorf("app existing: spec.workload.existing.namespaces is not set")
	}
	b.target.Namespaces = append([]string(nil), ex.Namespaces...)
	return nil
}
