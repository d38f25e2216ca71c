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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/kube"
)

// WaitReady waits until every Deployment and StatefulSet of t is rolled out (the latest spec observed, every replica
// updated, no old replica left, all available) and every app pod is Ready. It is driven by watches on the app's pods
// and workloads; progress, when set, sees every snapshot. It returns the last snapshot; on timeout the error is a
// *NotReadyError naming every pod that is not ready and why.
func WaitReady(ctx context.Context, kc kubernetes.Interface, t Target, timeout time.Duration, progress func(Readiness)) (Readiness, error) {
	var last Readiness
	err := kube.WaitFor(ctx, timeout, Watches(kc, t), func(ctx context.Context) (bool, error) {
		r, err := CheckReadiness(ctx, kc, t)
		if err != nil {
			return false, err
		}
		last = r
		if progress != nil {
			progress(r)
		}
		if len(r.Nodes) > 0 {
			// A pod on a node whose kubelet is gone cannot become ready: waiting out the timeout only hides it.
			return false, &NodeNotReadyError{Target: t, Readiness: r}
		}
		return r.Ready(), nil
	})
	switch {
	case err == nil:
		return last, nil
	case errors.Is(err, kube.ErrWaitTimeout):
		return last, &NotReadyError{Target: t, Timeout: timeout, Readiness: last}
	case errors.As(err, new(*NodeNotReadyError)):
		return last, err
	default:
		return last, fmt.Errorf("wait for %s/%s to be ready: %w", t.App, t.Topology, err)
	}
}

// Watches watch the app's pods, Deployments and StatefulSets in every namespace of t.
func Watches(kc kubernetes.Interface, t Target) []kube.WatchOpener {
	var out []kube.WatchOpener
	opts := metav1.ListOptions{LabelSelector: t.AppSelector}
	for _, ns := range t.Namespaces {
		out = append(out,
			func(ctx context.Context) (watch.Interface, error) { return kc.CoreV1().Pods(ns).Watch(ctx, opts) },
			func(ctx context.Context) (watch.Interface, error) {
				return kc.AppsV1().Deployments(ns).Watch(ctx, opts)
			},
			func(ctx context.Context) (watch.Interface, error) {
				return kc.AppsV1().StatefulSets(ns).Watch(ctx, opts)
			},
		)
	}
	return out
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
	// NodeGrace: "node2: Ready=Unknown for 1m10s (NodeStatusUnknown: Kubelet stopped posting node status.)".
	Nodes []string
}

// NodeGrace is how long a node may be not Ready before WaitReady stops waiting for the pods on it. A kubelet that
// restarts posts Ready again within seconds; one that is gone leaves the node Unknown until it comes back.
const NodeGrace = 30 * time.Second

// NodeNotReadyError is WaitReady ending early: pods of the app sit on nodes that are not Ready.
type NodeNotReadyError struct {
	Target    Target
	Readiness Readiness
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

// CheckReadiness lists the target's workloads and pods and says what is not ready.
func CheckReadiness(ctx context.Context, kc kubernetes.Interface, t Target) (Readiness, error) {
	r := Readiness{ExpectedPods: t.ExpectedPods()}
	for _, w := range t.Workloads {
		var ok bool
		var why string
		switch w.Kind {
		case KindDeployment:
			dep, err := kc.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				ok, why = false, "not found"
			} else if err != nil {
				return r, fmt.Errorf("get %s: %w", w, err)
			} else {
				ok, why = DeploymentReady(dep)
			}
		case KindStatefulSet:
			sts, err := kc.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				ok, why = false, "not found"
			} else if err != nil {
				return r, fmt.Errorf("get %s: %w", w, err)
			} else {
				ok, why = StatefulSetReady(sts)
			}
		default:
			ok, why = false, fmt.Sprintf("unknown workload kind %q", w.Kind)
		}
		if !ok {
			r.Workloads = append(r.Workloads, w.String()+": "+why)
		}
	}
	nodes := map[string]bool{} // nodes of pods that are not ready
	for _, ns := range t.Namespaces {
		items, err := AppPods(ctx, kc, t, ns)
		if err != nil {
			return r, err
		}
		for _, p := range items {
			if prob := PodProblem(p); prob != "" {
				r.Pods = append(r.Pods, fmt.Sprintf("%s/%s%s: %s", p.Namespace, p.Name, onNode(p), prob))
				if p.Spec.NodeName != "" && markedByNode(p) {
					nodes[p.Spec.NodeName] = true
				}
				continue
			}
			r.ReadyPods++
		}
	}
	// One GET per node whose pods the node controller marked (rare, a handful), never per pod.
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue // no permission to read nodes, or gone: the pods' own reasons stand
		}
		if why := NodeProblem(n, time.Now(), NodeGrace); why != "" {
			r.Nodes = append(r.Nodes, name+": "+why)
		}
	}
	return r, nil
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

// StatefulSetReady reports whether a StatefulSet's latest revision is rolled out and ready, and if not, why.
func StatefulSetReady(s *appsv1.StatefulSet) (bool, string) {
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

// markedByNode reports a pod whose containers all run and are ready while the pod is not Ready: what the node
// lifecycle controller leaves when a node stops posting status (kubernetes v1.37.2
// pkg/controller/util/node/controller_utils.go MarkPodsNotReady sets only the pod's Ready condition to False).
// Only such pods make CheckReadiness read their node.
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

// AppPods lists t's app pods in ns sorted by name, so that problem lists and proofs come in a stable order.
func AppPods(ctx context.Context, kc kubernetes.Interface, t Target, ns string) ([]corev1.Pod, error) {
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: t.AppSelector})
	if err != nil {
		return nil, fmt.Errorf("list app pods in %s: %w", ns, err)
	}
	items := pods.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return items, nil
}
