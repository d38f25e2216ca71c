package mesh

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Reconcile restarts, once the target's workloads are ready after Apply, every workload that still has a pod whose
// sidecar presence differs from mode's: admission may have judged a pod created mid-relabel by the namespace's old
// labels. The caller waits for the restarted workloads.
func (s *Switcher) Reconcile(ctx context.Context, t target.Target, mode scenario.Mode) ([]target.WorkloadRef, error) {
	restarted, err := s.restartMismatched(ctx, t, mode)
	if len(restarted) > 0 {
		s.log().Info("mode reconciled", "mode", mode, "restarted", len(restarted), "workloads", restarted)
	}
	return restarted, err
}

// restartMismatched rollout-restarts every workload with a pod whose sidecar presence differs from what mode needs.
// The pods are listed once per namespace (all of them: a workload of app existing selects by its own selector, not
// the app's) and matched to each workload's selector here, so the requests grow with namespaces, not workloads.
func (s *Switcher) restartMismatched(ctx context.Context, t target.Target, mode scenario.Mode) ([]target.WorkloadRef, error) {
	wantSidecar := UsesSidecar(mode)
	var out []target.WorkloadRef
	stamp := s.now().UTC().Format(time.RFC3339Nano)
	podsIn := map[string][]corev1.Pod{}
	for _, w := range t.Workloads {
		sel, err := t.PodSelector(w)
		if err != nil {
			return out, fmt.Errorf("select the pods of %s (app selector %q): %w", w, t.AppSelector, err)
		}
		pods, listed := podsIn[w.Namespace]
		if !listed {
			l, err := s.Clients.Kube.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return out, fmt.Errorf("list pods of %s: %w", w, err)
			}
			pods = l.Items
			podsIn[w.Namespace] = pods
		}
		mismatch := false
		for _, p := range pods {
			if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if PodHasSidecar(p) != wantSidecar {
				mismatch = true
				break
			}
		}
		if !mismatch {
			continue
		}
		if err := s.restart(ctx, w, stamp); err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, nil
}

// RestartApp rollout-restarts every workload of the target but those named in skip (WorkloadRef.String: restarted
// already by this switch), so that every pod starts in the mode just applied (startup.restartApp). The caller waits.
func (s *Switcher) RestartApp(ctx context.Context, t target.Target, skip []string) ([]target.WorkloadRef, error) {
	if err := scenario.RefuseProtected(t.Namespaces, s.Protected...); err != nil {
		return nil, err
	}
	stamp := s.now().UTC().Format(time.RFC3339Nano)
	var out []target.WorkloadRef
	for _, w := range t.Workloads {
		if slices.Contains(skip, w.String()) {
			continue
		}
		if err := s.restart(ctx, w, stamp); err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, nil
}

// restart patches workload w's pod template with the restart annotation (value stamp), so its controller rolls it
// out again, after recording the annotation it had when meshbench did not create it.
func (s *Switcher) restart(ctx context.Context, w target.WorkloadRef, stamp string) error {
	if err := s.rememberWorkload(ctx, w); err != nil {
		return err
	}
	body := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, restartAnnotation, stamp)
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	var err error
	switch w.Kind {
	case target.KindDeployment:
		_, err = s.Clients.Kube.AppsV1().Deployments(w.Namespace).Patch(ctx, w.Name, types.StrategicMergePatchType, body, opts)
	case target.KindStatefulSet:
		_, err = s.Clients.Kube.AppsV1().StatefulSets(w.Namespace).Patch(ctx, w.Name, types.StrategicMergePatchType, body, opts)
	default:
		err = fmt.Errorf("unknown workload kind %q", w.Kind)
	}
	if err != nil {
		return fmt.Errorf("restart %s: %w", w, err)
	}
	return nil
}

// rememberWorkload records, before the restart patch, the original restart annotation of a workload meshbench did not
// create, so the record can put it back (the first value recorded wins). Catalog workloads go with the run: none.
func (s *Switcher) rememberWorkload(ctx context.Context, w target.WorkloadRef) error {
	var (
		labels, annotations map[string]string
		err                 error
	)
	switch w.Kind {
	case target.KindDeployment:
		var d *appsv1.Deployment
		if d, err = s.Clients.Kube.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			labels, annotations = d.Labels, d.Spec.Template.Annotations
		}
	case target.KindStatefulSet:
		var st *appsv1.StatefulSet
		if st, err = s.Clients.Kube.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			labels, annotations = st.Labels, st.Spec.Template.Annotations
		}
	default:
		return fmt.Errorf("restart %s: unknown workload kind %q", w, w.Kind)
	}
	if err != nil {
		return fmt.Errorf("restart %s: read its pod template: %w", w, err)
	}
	if labels[kube.ManagedByLabel] == kube.ManagedByValue {
		return nil
	}
	if s.Record == nil {
		return fmt.Errorf("restart %s: it was not created by meshbench and no record is configured to restore its pod template", w)
	}
	if err := s.Record.rememberWorkload(w.Kind, w.Namespace, w.Name, annotations, []string{restartAnnotation}); err != nil {
		return fmt.Errorf("record the pod template of %s before restarting it: %w", w, err)
	}
	return nil
}
