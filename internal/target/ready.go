package target

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
)

// waitReady waits until every Deployment and StatefulSet of t is rolled out (the latest spec observed, every replica
// updated, no old replica left, all available) and every app pod is Ready, on a Cache of its own (see
// Cache.WaitReady); a case that verifies the mode next waits on a Cache it then hands to the verification.
func waitReady(ctx context.Context, kc kubernetes.Interface, t Target, timeout time.Duration, progress func(Readiness)) (Readiness, error) {
	c := NewCache(kc, t)
	c.Start(ctx)
	defer c.Stop()
	return c.WaitReady(ctx, timeout, progress)
}

// WaitReady waits until every workload of the cache's app is rolled out and available and every app pod is Ready,
// reading the cache (the caller starts it), so its requests never grow with pods; progress sees every snapshot. On
// timeout a *NotReadyError names each pod and why; a *NodeNotReadyError ends it early (docs/reliability.md).
func (c *Cache) WaitReady(ctx context.Context, timeout time.Duration, progress func(Readiness)) (Readiness, error) {
	t := c.t
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last Readiness
	ended := func() (Readiness, error) {
		if ctx.Err() != nil {
			return last, fmt.Errorf("wait for %s/%s to be ready: %w", t.App, t.Topology, context.Cause(ctx))
		}
		return last, &NotReadyError{Target: t, Timeout: timeout, Readiness: last}
	}
	if c.Synced(wctx) != nil {
		return ended()
	}
	// Events re-evaluate the cached state at most every pace (a rollout sends thousands, and each evaluation walks
	// every pod of the app); resync re-evaluates without one, as node conditions are not watched.
	err := kube.Wait{Trigger: c.changed, Pace: pace, Interval: resync, Clock: c.Clock}.Until(wctx, func(ctx context.Context) (bool, error) {
		last = c.evaluate(ctx)
		if progress != nil {
			progress(last)
		}
		if len(last.Nodes) > 0 {
			// A pod on a node whose kubelet is gone cannot become ready: waiting out the timeout only hides it.
			return false, &NodeNotReadyError{Target: t, Readiness: last}
		}
		return last.Ready(), nil
	})
	var nn *NodeNotReadyError
	if err == nil || errors.As(err, &nn) {
		return last, err
	}
	return ended()
}

// evaluate is the readiness of the cached state; its Nodes are those not Ready past nodeGrace that hold pods that
// count.
func (c *Cache) evaluate(ctx context.Context) Readiness {
	last, marked := c.readiness(nil)
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if down := nodeProblems(ctx, c.kc, clk, marked); len(down) > 0 {
		// Again with what the nodes said: a pod left terminating on a dead node, already replaced, no longer
		// counts, and only the nodes still holding pods that count end the wait.
		last, marked = c.readiness(down)
		for _, name := range marked {
			if why, ok := down[name]; ok {
				last.Nodes = append(last.Nodes, name+": "+why)
			}
		}
	}
	return last
}

// resync re-evaluates a wait without events: a node's condition is not watched.
const resync = 5 * time.Second

// pace is the least time between two evaluations of a wait's cache: what an event can be late by.
const pace = 200 * time.Millisecond

// readiness is the snapshot of the cached objects, with the nodes of pods the node controller marked not ready
// that still count (readinessOf); down are the nodes known to be not Ready (nodeProblems).
func (c *Cache) readiness(down map[string]string) (Readiness, []string) {
	// The cache's own pointers, never copies: at 5,000 pods an evaluation (up to 5 a second) would otherwise
	// allocate megabytes of Pod values to read a few fields.
	pods := make(map[string][]*corev1.Pod, len(c.pods))
	for ns, l := range c.pods {
		pods[ns], _ = l.List(labels.Everything()) // a lister's List never fails
	}
	get := func(w WorkloadRef) (bool, string) {
		switch w.Kind {
		case KindDeployment:
			l, ok := c.deps[w.Namespace]
			if !ok {
				return false, "not found"
			}
			d, err := l.Get(w.Name)
			if err != nil {
				return false, "not found"
			}
			ok, why := DeploymentReady(d)
			if !ok && podsRolledOut(d, pods[w.Namespace]) {
				return true, ""
			}
			return ok, why
		case KindStatefulSet:
			l, ok := c.stss[w.Namespace]
			if !ok {
				return false, "not found"
			}
			s, err := l.Get(w.Name)
			if err != nil {
				return false, "not found"
			}
			return statefulSetReady(s)
		}
		return false, fmt.Sprintf("unknown workload kind %q", w.Kind)
	}
	return readinessOf(c.t, get, pods, down)
}

// readinessOf says what of t is not ready (pods per namespace, down: not-Ready nodes and why), and the sorted nodes of
// pods the node controller marked that still count. A pod terminating on a down node is left out once every workload
// reports rolled out (Readiness.Stranded). Pure; pods are the cache's, read only.
func readinessOf(t Target, get func(WorkloadRef) (bool, string), pods map[string][]*corev1.Pod, down map[string]string) (Readiness, []string) {
	r := Readiness{ExpectedPods: t.ExpectedPods()}
	for _, w := range t.Workloads {
		if ok, why := get(w); !ok {
			r.Workloads = append(r.Workloads, w.String()+": "+why)
		}
	}
	replaced := len(t.Workloads) > 0 && len(r.Workloads) == 0
	nodes := map[string]bool{}
	for _, ns := range t.Namespaces {
		items := slices.Clone(pods[ns])
		sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
		for _, p := range items {
			if why, isDown := down[p.Spec.NodeName]; isDown && replaced && p.DeletionTimestamp != nil {
				r.Stranded = append(r.Stranded, fmt.Sprintf("%s/%s (node %s): terminating on a node that is not Ready (%s), replaced",
					p.Namespace, p.Name, p.Spec.NodeName, why))
				continue
			}
			if prob := PodProblem(*p); prob != "" {
				r.Pods = append(r.Pods, fmt.Sprintf("%s/%s%s: %s", p.Namespace, p.Name, onNode(*p), prob))
				if p.Spec.NodeName != "" && markedByNode(*p) {
					nodes[p.Spec.NodeName] = true
				}
				continue
			}
			r.ReadyPods++
		}
	}
	return r, slices.Sorted(maps.Keys(nodes))
}

// Readiness is a snapshot of how far the app is from ready.
type Readiness struct {
	ExpectedPods int
	ReadyPods    int
	// Workloads not yet rolled out, each with the reason ("Deployment ns/frontend: 1 of 2 replicas available").
	Workloads []string
	// Pods not ready, each with the reason (PodProblem).
	Pods []string
	// Nodes that hold pods of the app which are not ready, and have themselves been not Ready for longer than
	// nodeGrace: "node2: Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)".
	Nodes []string
	// Stranded are pods left terminating on a node that is not Ready after their workload replaced them: they do
	// not count (readinessOf), and are named so the wait's account stays complete.
	Stranded []string
}

// NodeNotReadyError is WaitReady ending early: pods of the app sit on nodes that are not Ready.
type NodeNotReadyError struct {
	Target    Target
	Readiness Readiness
}

// NodeNames are the names of the nodes that are not Ready (Readiness.Nodes without the reasons), in order.
func (e *NodeNotReadyError) NodeNames() []string {
	out := make([]string, 0, len(e.Readiness.Nodes))
	for _, n := range e.Readiness.Nodes {
		name, _, _ := strings.Cut(n, ": ")
		out = append(out, name)
	}
	return out
}

func (e *NodeNotReadyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s cannot become ready: node %s not Ready (%d of %d pods ready)", e.Target.App, e.Target.Topology,
		strings.Join(e.Readiness.Nodes, "; node "), e.Readiness.ReadyPods, e.Readiness.ExpectedPods)
	for _, p := range e.Readiness.Pods {
		b.WriteString("\n  pod " + p)
	}
	return b.String()
}

// Ready reports whether every workload is rolled out and every pod is ready.
func (r Readiness) Ready() bool { return len(r.Workloads) == 0 && len(r.Pods) == 0 }

// NotReadyError is WaitReady's timeout: it says what is not ready and why.
type NotReadyError struct {
	Target    Target
	Timeout   time.Duration
	Readiness Readiness
}

func (e *NotReadyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s not ready after %s: %d of %d pods ready", e.Target.App, e.Target.Topology, e.Timeout,
		e.Readiness.ReadyPods, e.Readiness.ExpectedPods)
	for _, p := range e.Readiness.Pods {
		b.WriteString("\n  pod " + p)
	}
	for _, w := range e.Readiness.Workloads {
		b.WriteString("\n  " + w)
	}
	return b.String()
}

func onNode(p corev1.Pod) string {
	if p.Spec.NodeName == "" {
		return ""
	}
	return " (node " + p.Spec.NodeName + ")"
}

// DeploymentReady reports whether a Deployment's latest spec is fully rolled out and available, and if not, why.
func DeploymentReady(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return false, "cannot create pods: " + c.Message
		}
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
			return false, "rollout stuck: " + c.Reason + ": " + c.Message
		}
	}
	switch {
	case st.ObservedGeneration < d.Generation:
		return false, "controller has not seen the latest spec yet"
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas still terminating", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas available", st.AvailableReplicas, want)
	}
	return true, ""
}

// podsRolledOut reports whether Deployment d's pods (the namespace's, read only) show its latest spec rolled out
// before its status does, which can lag the pods by many seconds at scale: spec.replicas pods, none terminating, each
// Ready and from the current template (labels, restartedAt, images; docs/reliability.md).
func podsRolledOut(d *appsv1.Deployment, pods []*corev1.Pod) bool {
	if d.Status.ObservedGeneration < d.Generation || d.Spec.Selector == nil || d.Spec.Paused || d.Spec.MinReadySeconds > 0 {
		return false
	}
	for _, c := range d.Status.Conditions {
		if (c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue) ||
			(c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse) {
			return false
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	tmpl := d.Spec.Template
	var n int32
	for _, p := range pods {
		if p.Namespace != d.Namespace || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if p.DeletionTimestamp != nil || !podReady(*p) || !fromTemplate(tmpl, p) {
			return false
		}
		n++
	}
	return n == want
}

// fromTemplate reports whether pod p carries template tmpl's labels, restart annotation and container images.
func fromTemplate(tmpl corev1.PodTemplateSpec, p *corev1.Pod) bool {
	for k, v := range tmpl.Labels {
		if got, ok := p.Labels[k]; !ok || got != v {
			return false
		}
	}
	if p.Annotations[RestartedAtAnnotation] != tmpl.Annotations[RestartedAtAnnotation] {
		return false
	}
	images := make(map[string]string, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		images[c.Name] = c.Image
	}
	for _, c := range tmpl.Spec.Containers {
		if images[c.Name] != c.Image {
			return false
		}
	}
	return true
}

// RestartedAtAnnotation is the pod template annotation `kubectl rollout restart` sets to roll a workload without
// changing its spec otherwise (k8s.io/kubectl v0.37.2 pkg/polymorphichelpers/objectrestarter.go); meshbench's mode
// switch rolls workloads the same way.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// statefulSetReady reports whether a StatefulSet's latest revision is rolled out and ready, and if not, why.
func statefulSetReady(s *appsv1.StatefulSet) (bool, string) {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	st := s.Status
	switch {
	case st.ObservedGeneration < s.Generation:
		return false, "controller has not seen the latest spec yet"
	case st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision:
		return false, fmt.Sprintf("rolling out revision %s (%d of %d updated)", st.UpdateRevision, st.UpdatedReplicas, want)
	case st.ReadyReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas ready", st.ReadyReplicas, want)
	}
	return true, ""
}

// PodProblem says why a pod is not ready, in the words an operator needs ("" when it is ready): image pull
// failures, crash loops with the last termination reason, unschedulable pods with the scheduler's message.
func PodProblem(p corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return strings.TrimSpace(fmt.Sprintf("phase %s: %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace("Pending, not scheduled: " + c.Reason + ": " + c.Message)
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if prob := containerProblem(cs); prob != "" {
			return "container " + cs.Name + ": " + prob
		}
	}
	if podReady(p) {
		return ""
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready {
			return "container " + cs.Name + ": running but not ready (readiness probe failing)"
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return strings.TrimSpace("not ready: " + c.Reason + " " + c.Message)
		}
	}
	if p.Status.Phase == corev1.PodPending {
		return "Pending"
	}
	return "not ready"
}

func containerProblem(cs corev1.ContainerStatus) string {
	w := cs.State.Waiting
	if w == nil {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("terminated: %s (exit code %d) %s", t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
		}
		return ""
	}
	switch w.Reason {
	case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
		return strings.TrimSpace(fmt.Sprintf("%s for image %s: %s", w.Reason, cs.Image, w.Message))
	case "CrashLoopBackOff":
		s := fmt.Sprintf("CrashLoopBackOff (%d restarts)", cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			s += fmt.Sprintf(", last exit: %s (exit code %d)", t.Reason, t.ExitCode)
			if m := strings.TrimSpace(t.Message); m != "" {
				s += ": " + m
			}
		}
		return s
	case "ContainerCreating", "PodInitializing", "":
		return ""
	default:
		return strings.TrimSpace(w.Reason + ": " + w.Message)
	}
}

// markedByNode reports a pod whose containers all run and are ready while the pod is not: what the node lifecycle
// controller leaves (kubernetes v1.37.2 pkg/controller/util/node/controller_utils.go MarkPodsNotReady).
func markedByNode(p corev1.Pod) bool {
	if podReady(p) || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || !cs.Ready {
			return false
		}
	}
	return true
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
