package orchestrate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// nodeGate is the runner's NodeGate: after a case failed on nodes that were not Ready, it reads each named node
// again (one GET), and only for one still not Ready asks whether the app needs it: the candidate nodes of the
// scenario's nodeSelector (one LIST by that selector) and the app's pods still on it (one LIST per namespace, by
// node). Its requests grow with the nodes named and the app's namespaces, never with pods.
type nodeGate struct {
	kc kubernetes.Interface
	// selector is spec.workload.nodeSelector: every app and load-client pod must land on a matching node. Nil for
	// app existing, whose pods meshbench does not place.
	selector map[string]string
	now      func() time.Time
}

func newNodeGate(kc kubernetes.Interface, s *scenario.Scenario) nodeGate {
	g := nodeGate{kc: kc, now: time.Now}
	if s.Spec.Workload.App != scenario.AppExisting {
		g.selector = s.Spec.Workload.NodeSelector
	}
	return g
}

func (g nodeGate) Check(ctx context.Context, t *runner.Target, nodes []string) runner.NodeCheck {
	var chk runner.NodeCheck
	for _, name := range nodes {
		n, err := g.kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			chk.Recovered = append(chk.Recovered, name) // gone: no pod can be placed there any more
			continue
		case err != nil:
			continue // unreadable now: the case runs, and its wait says what it meets
		}
		why := target.NodeProblem(n, g.now(), target.NodeGrace)
		if why == "" {
			chk.Recovered = append(chk.Recovered, name)
			continue
		}
		if chk.Skip != "" {
			continue
		}
		if need := g.need(ctx, t, n); need != "" {
			chk.Skip, chk.Node = fmt.Sprintf("node %s not Ready (%s); the app's pods cannot run there: %s", name, why, need), name
		}
	}
	return chk
}

// need says why the app needs node n, which is not Ready ("" when it does not): its pods are pinned there, or
// (t deployed) some of them still sit there.
func (g nodeGate) need(ctx context.Context, t *runner.Target, n *corev1.Node) string {
	if len(g.selector) > 0 && labels.SelectorFromSet(g.selector).Matches(labels.Set(n.Labels)) {
		sel := labels.SelectorFromSet(g.selector).String()
		list, err := g.kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil && !otherReadyNode(list.Items, n.Name) {
			return "pinned by nodeSelector " + sel + " (no other Ready node matches it)"
		}
	}
	if t == nil {
		return "" // a new topology: its pods are placed anew, away from the node's taint
	}
	var there []string
	for _, ns := range t.Namespaces {
		pods, err := g.kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: t.AppSelector,
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
		if err != nil {
			continue
		}
		there = append(there, podsStillOn(pods.Items, n.Name)...)
	}
	if len(there) == 0 {
		return ""
	}
	shown := there[:min(len(there), 3)]
	more := ""
	if len(there) > len(shown) {
		more = fmt.Sprintf(", %d more", len(there)-len(shown))
	}
	return fmt.Sprintf("%d app pods still sit there (%s%s)", len(there), strings.Join(shown, ", "), more)
}

// otherReadyNode reports whether a node besides name among candidates can take pods: schedulable and Ready (a
// node that never posted Ready has not joined yet; one that just lost it is no place to move to). Pure.
func otherReadyNode(candidates []corev1.Node, name string) bool {
	for i := range candidates {
		n := &candidates[i]
		if n.Name != name && !n.Spec.Unschedulable && target.NodeReady(n) {
			return true
		}
	}
	return false
}

// podsStillOn names (ns/name, sorted) the pods on node that still count there: a terminating one was replaced by
// its workload (target.WaitReady no longer waits for it). The node is checked again here because a field selector
// is the server's filter, not every client's. Pure.
func podsStillOn(pods []corev1.Pod, node string) []string {
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(out)
	return out
}
