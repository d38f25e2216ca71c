package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
)

// nodeGrace is how long a node may be not Ready before WaitReady stops waiting for the pods on it. A kubelet that
// restarts posts Ready again within seconds; one that is gone leaves the node Unknown until it comes back.
const nodeGrace = 30 * time.Second

// NodeReady reports whether node n's Ready condition is True (a node that never posted it has not joined).
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeProblem says why node n cannot run pods, when its Ready condition has not been True for longer than grace
// at now ("" otherwise): "Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)".
func NodeProblem(n *corev1.Node, now time.Time, grace time.Duration) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		since := now.Sub(c.LastTransitionTime.Time)
		if since < grace {
			return ""
		}
		return strings.TrimSpace(fmt.Sprintf("Ready=%s for %s (%s: %s)", c.Status, since.Round(time.Second), c.Reason, c.Message))
	}
	return ""
}

// nodeProblems reads the given nodes (one GET each: nodes whose pods the node controller marked, rare and few)
// and says why those not Ready past nodeGrace are not (name to NodeProblem); nil when none is.
func nodeProblems(ctx context.Context, kc kubernetes.Interface, clk clock.PassiveClock, names []string) map[string]string {
	var out map[string]string
	for _, name := range names {
		n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue // no permission to read nodes, or gone: the pods' own reasons stand
		}
		if why := NodeProblem(n, clk.Now(), nodeGrace); why != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = why
		}
	}
	return out
}

// NodeGate decides whether a case may run while nodes an earlier case failed on may still be unusable: a GET per
// node and, while it is still Ready, a kubelet probe; only for a node still unusable does it ask whether the case
// needs it, so its requests never grow with pods (docs/reliability.md).
type NodeGate struct {
	Kube kubernetes.Interface
	// Selector is spec.workload.nodeSelector: every app and load-client pod must land on a matching node. Nil for
	// app existing, whose pods meshbench does not place.
	Selector map[string]string
	// Clients selects the run's load-client pods (loadgen.Cluster.Selector) in the target's entry namespace; "":
	// not looked for.
	Clients string
	// Clock stamps the conditions' age (nil = the wall clock).
	Clock clock.PassiveClock
	// Probe asks node name's kubelet whether it answers (KubeletProbe); nil: not probed, the condition alone decides.
	Probe func(ctx context.Context, name string) error
}

// kubeletProbeTimeout bounds the probe of one kubelet: a kubelet that answers does so in milliseconds; a node whose
// machine is gone leaves the API server's dial hanging.
const kubeletProbeTimeout = 5 * time.Second

// KubeletProbe GETs node name's kubelet /healthz through the API server (nodes/proxy get, schedule's permission
// table), bounded by kubeletProbeTimeout.
func KubeletProbe(ctx context.Context, kc kubernetes.Interface, name string) error {
	pctx, cancel := context.WithTimeout(ctx, kubeletProbeTimeout)
	defer cancel()
	_, err := kube.ProxyGet(pctx, kc, "nodes", "", name, "/healthz", nil)
	return err
}

// NodeCheck is what a NodeGate found.
type NodeCheck struct {
	// Recovered are the nodes that are usable again (Ready, and their kubelet answers) or gone: not checked again.
	Recovered []string
	// Skip, when set, is why the case is skipped: Node, still not usable and needed by the case (the app's or the
	// load clients' pods), named with what is wrong with it. Empty: the case runs.
	Skip, Node string
}

// Check reads nodes again. t is the deployed target the case runs on, nil when the case deploys another topology
// (its pods are placed anew).
func (g NodeGate) Check(ctx context.Context, t *Target, nodes []string) NodeCheck {
	var chk NodeCheck
	for _, name := range nodes {
		n, err := g.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			chk.Recovered = append(chk.Recovered, name) // gone: no pod can be placed there any more
			continue
		case err != nil:
			continue // unreadable now: the case runs, and its wait says what it meets
		}
		var what string
		if why := NodeProblem(n, g.clock().Now(), nodeGrace); why != "" {
			what = fmt.Sprintf("node %s not Ready (%s)", name, why)
		} else if why := g.kubeletSilent(ctx, name); why != "" {
			what = fmt.Sprintf("node %s: %s", name, why)
		} else {
			chk.Recovered = append(chk.Recovered, name)
			continue
		}
		if chk.Skip != "" {
			continue
		}
		if need := g.need(ctx, t, n); need != "" {
			chk.Skip, chk.Node = what+"; "+need, name
		}
	}
	return chk
}

func (g NodeGate) clock() clock.PassiveClock {
	if g.Clock == nil {
		return clock.RealClock{}
	}
	return g.Clock
}

// kubeletSilent says why node name's kubelet does not answer the API server ("" when it answers, or when the
// probe's answer is no evidence either way): "kubelet does not answer (GET nodes/node2/proxy/healthz: error trying
// to reach service: dial tcp 172.18.0.3:10250: connect: connection refused)".
func (g NodeGate) kubeletSilent(ctx context.Context, name string) string {
	if g.Probe == nil {
		return ""
	}
	err := g.Probe(ctx, name)
	if ctx.Err() != nil || !kubeletUnreachable(err) {
		return ""
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return "kubelet does not answer (" + msg + ")"
}

// kubeletUnreachable reports whether err, a probe's error, shows the kubelet does not answer (refused, reset, a
// timeout, a 5xx of the proxy). A 4xx says nothing about the kubelet: the condition alone decides. Pure.
func kubeletUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code == 0 || code >= 500 || code == http.StatusRequestTimeout
	}
	return true
}

// need says why the case needs node n, which is not usable ("" when it does not): the app's pods are pinned there,
// or (t deployed) some of them, or of the run's load clients, still sit there. The clients are not moved (why:
// docs/reliability.md, the kubelet-stopped row).
func (g NodeGate) need(ctx context.Context, t *Target, n *corev1.Node) string {
	if len(g.Selector) > 0 && labels.SelectorFromSet(g.Selector).Matches(labels.Set(n.Labels)) {
		sel := labels.SelectorFromSet(g.Selector).String()
		list, err := g.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil && !otherReadyNode(list.Items, n.Name) {
			return "the app's pods cannot run there: pinned by nodeSelector " + sel + " (no other Ready node matches it)"
		}
	}
	if t == nil {
		return "" // a new topology: its pods are placed anew, away from the node's taint
	}
	onNode := fields.OneTermEqualSelector("spec.nodeName", n.Name).String()
	var there []string
	for _, ns := range t.Namespaces {
		pods, err := g.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: t.AppSelector, FieldSelector: onNode})
		if err != nil {
			continue
		}
		there = append(there, podsStillOn(pods.Items, n.Name)...)
	}
	if len(there) > 0 {
		return "the app's pods cannot run there: " + podsThere(there, "app pods")
	}
	if g.Clients == "" || t.EntryNamespace == "" {
		return ""
	}
	pods, err := g.Kube.CoreV1().Pods(t.EntryNamespace).List(ctx, metav1.ListOptions{LabelSelector: g.Clients, FieldSelector: onNode})
	if err != nil {
		return ""
	}
	var clients []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == n.Name { // terminating ones too: loadgen does not run while one is
			clients = append(clients, p.Namespace+"/"+p.Name)
		}
	}
	if len(clients) == 0 {
		return ""
	}
	sort.Strings(clients)
	return "the load clients cannot run there: " + podsThere(clients, "load client pods")
}

// podsThere is "2 app pods still sit there (ns/a, ns/b)", at most three named. Pure.
func podsThere(pods []string, what string) string {
	shown := pods[:min(len(pods), 3)]
	more := ""
	if len(pods) > len(shown) {
		more = fmt.Sprintf(", %d more", len(pods)-len(shown))
	}
	return fmt.Sprintf("%d %s still sit there (%s%s)", len(pods), what, strings.Join(shown, ", "), more)
}

// otherReadyNode reports whether a node besides name among candidates can take pods: schedulable and Ready (a
// node that never posted Ready has not joined yet; one that just lost it is no place to move to). Pure.
func otherReadyNode(candidates []corev1.Node, name string) bool {
	for i := range candidates {
		n := &candidates[i]
		if n.Name != name && !n.Spec.Unschedulable && NodeReady(n) {
			return true
		}
	}
	return false
}

// podsStillOn names (ns/name, sorted) the pods on node that still count there: a terminating one was replaced by
// its workload (WaitReady no longer waits for it). The node is checked again here because a field selector
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
