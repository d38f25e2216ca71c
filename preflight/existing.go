package preflight

import (
	"context"
	"fmt"
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// existingNamespace is a namespace of app existing as it is now.
type existingNamespace struct {
	Name   string
	Labels map[string]string
}

// existingWorkload is a Deployment or StatefulSet of app existing and its live pods now.
type existingWorkload struct {
	Ref target.WorkloadRef
	// Sidecar and Plain count its live pods with and without an injected sidecar (mesh.PodHasSidecar).
	Sidecar, Plain int
}

// existingChanges lists what a run of app existing will change, following the plan's switches from the cluster's
// state now: per mode, each namespace's label patch and the workloads Apply would restart, then totals and what the
// end restores. It returns the lines and the workloads restarted at least once. Pure.
func existingChanges(switches []scenario.Mode, t target.Target, wp scenario.Waypoint, revision string, nss []existingNamespace, ws []existingWorkload) ([]string, []string) {
	labels := map[string]map[string]string{}
	for _, ns := range nss {
		labels[ns.Name] = maps.Clone(ns.Labels)
		if labels[ns.Name] == nil {
			labels[ns.Name] = map[string]string{}
		}
	}
	pods := append([]existingWorkload(nil), ws...)
	var lines, everRestarted []string
	restartedOnce := map[string]bool{}
	seen := map[scenario.Mode]bool{}
	rounds, restarts := 0, 0
	for _, m := range switches {
		var patches []string
		for _, ns := range nss {
			ch := mesh.LabelChanges(m, t, ns.Name, wp, revision, labels[ns.Name])
			for k, v := range ch {
				if v == nil {
					delete(labels[ns.Name], k)
				} else {
					labels[ns.Name][k] = *v
				}
			}
			patches = append(patches, ns.Name+": "+mesh.FormatLabelPlan(ch))
		}
		want := mesh.UsesSidecar(m)
		var restarted []string
		for i := range pods {
			w := &pods[i]
			if want && w.Plain > 0 || !want && w.Sidecar > 0 {
				restarted = append(restarted, w.Ref.String())
				if !restartedOnce[w.Ref.String()] {
					restartedOnce[w.Ref.String()] = true
					everRestarted = append(everRestarted, w.Ref.String())
				}
				n := w.Sidecar + w.Plain
				if want {
					w.Sidecar, w.Plain = n, 0
				} else {
					w.Sidecar, w.Plain = 0, n
				}
			}
		}
		if len(restarted) > 0 {
			rounds++
			restarts += len(restarted)
		}
		if seen[m] {
			continue
		}
		seen[m] = true
		r := "none (every pod already matches the mode)"
		if len(restarted) > 0 {
			r = strings.Join(restarted, ", ")
		}
		lines = append(lines, fmt.Sprintf("mode %s: labels %s; restarts %s", m, strings.Join(patches, "; "), r))
	}
	lines = append(lines, fmt.Sprintf("plan: %d mode switches, %d of them restart workloads (%d restarts in all: their pods are recreated)",
		len(switches), rounds, restarts))
	end := "at the end (and by meshbench cleanup): the namespace labels are restored from namespace-labels.json"
	if len(everRestarted) > 0 {
		end += fmt.Sprintf(", then the restart annotation of %d workloads (%s): they roll out once more, into the original mode",
			len(everRestarted), strings.Join(everRestarted, ", "))
	}
	lines = append(lines, end)
	return lines, everRestarted
}

// planSwitches is the mode of every case of s's plan that switches mode, in plan order.
func planSwitches(s *scenario.Scenario) []scenario.Mode {
	var out []scenario.Mode
	for _, c := range scenario.NewPlan(s).Cases {
		if c.Switch {
			out = append(out, c.Mode)
		}
	}
	return out
}

// existingCheck shows, for app existing, what the run will change (existingChanges): WARN when the user's workloads
// will be restarted, OK when only labels change, FAIL when discovery fails (the run would stop there). Read-only.
func existingCheck(ctx context.Context, c *kube.Clients, s *scenario.Scenario, revision string, protected ...string) Check {
	const name = "existing app changes"
	t, err := workloads.Discover(ctx, c.Kube, s)
	if err != nil {
		return Check{Name: name, Status: StatusFail, Detail: err.Error(), Fix: "check spec.workload.existing (namespaces, workloads) and spec.load.targets"}
	}
	if err := scenario.RefuseProtected(t.Namespaces, protected...); err != nil {
		return Check{Name: name, Status: StatusFail, Detail: err.Error(), Fix: "name the app's own namespaces in spec.workload.existing.namespaces"}
	}
	var nss []existingNamespace
	for _, n := range t.Namespaces {
		ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return Check{Name: name, Status: StatusFail, Detail: fmt.Sprintf("get namespace %s: %v", n, err)}
		}
		nss = append(nss, existingNamespace{Name: n, Labels: ns.Labels})
	}
	var ws []existingWorkload
	for _, w := range t.Workloads {
		sel, err := t.PodSelector(w)
		if err != nil {
			return Check{Name: name, Status: StatusFail, Detail: fmt.Sprintf("select the pods of %s: %v", w, err)}
		}
		pods, err := c.Kube.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return Check{Name: name, Status: StatusFail, Detail: fmt.Sprintf("list pods of %s: %v", w, err), Fix: "grant list on pods"}
		}
		ew := existingWorkload{Ref: w}
		for _, p := range pods.Items {
			switch {
			case p.DeletionTimestamp != nil:
			case mesh.PodHasSidecar(p):
				ew.Sidecar++
			default:
				ew.Plain++
			}
		}
		ws = append(ws, ew)
	}
	lines, restarted := existingChanges(planSwitches(s), t, s.Spec.Waypoint, revision, nss, ws)
	ch := Check{Name: name, Status: StatusOK, Detail: strings.Join(lines, "\n")}
	if len(restarted) > 0 {
		ch.Status = StatusWarn
		ch.Fix = "the listed workloads of your app are rollout-restarted (pods recreated) to change mode; their original " +
			"pod-template annotation is recorded in namespace-labels.json before the first restart and restored at the end"
	}
	return ch
}
