package cni

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
)

// apiTimeout bounds every single Kubernetes API call.
const apiTimeout = 30 * time.Second

// pollInterval is how often pod, namespace and endpoint state and the servers' ports are polled.
const pollInterval = 500 * time.Millisecond

// poll is the cni form of the one wait helper: check every pollInterval on clk until timeout (0: until ctx ends).
func poll(clk clock.Clock, timeout time.Duration) kube.Wait {
	return kube.Wait{Timeout: timeout, Interval: pollInterval, Clock: clk}
}

func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, apiTimeout)
}

// createNamespace creates the run namespace and waits for its default ServiceAccount (pods are refused before).
// created reports whether the Create call succeeded, also when the wait then fails: the caller must delete a
// namespace it created, and must never delete one that already existed.
func createNamespace(ctx context.Context, clk clock.Clock, kc kubernetes.Interface, ns *corev1.Namespace) (created bool, err error) {
	cctx, cancel := callCtx(ctx)
	_, err = kc.CoreV1().Namespaces().Create(cctx, ns, metav1.CreateOptions{FieldManager: "meshbench"})
	cancel()
	if err != nil {
		return false, fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	err = poll(clk, time.Minute).Until(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := callCtx(ctx)
		defer cancel()
		_, err := kc.CoreV1().ServiceAccounts(ns.Name).Get(cctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return true, fmt.Errorf("namespace %s: default ServiceAccount did not appear: %w", ns.Name, err)
	}
	return true, nil
}

// deleteNamespace deletes the run namespace and waits (on the wall clock, until ctx ends) until it is gone. ctx
// should be fresh (the finalizer calls it after the run's context may have been cancelled).
func deleteNamespace(ctx context.Context, kc kubernetes.Interface, name string) error {
	policy := metav1.DeletePropagationForeground
	cctx, cancel := callCtx(ctx)
	err := kc.CoreV1().Namespaces().Delete(cctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	cancel()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	err = poll(nil, 0).Until(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := callCtx(ctx)
		defer cancel()
		_, err := kc.CoreV1().Namespaces().Get(cctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s still exists: %w", name, err)
	}
	return nil
}

func createPod(ctx context.Context, kc kubernetes.Interface, p *corev1.Pod) error {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	if _, err := kc.CoreV1().Pods(p.Namespace).Create(cctx, p, metav1.CreateOptions{FieldManager: "meshbench"}); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// waitPods waits until every named pod is Ready. It fails a pod early when it cannot start (image pull, config,
// crash, terminated) and returns, per pod that is not Ready, the reason with its recent events.
func waitPods(ctx context.Context, clk clock.Clock, kc kubernetes.Interface, ns string, names []string, timeout time.Duration) (map[string]*corev1.Pod, map[string]error) {
	ready := map[string]*corev1.Pod{}
	failed := map[string]error{}
	last := map[string]*corev1.Pod{}
	_ = poll(clk, timeout).Until(ctx, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			if ready[n] != nil || failed[n] != nil {
				continue
			}
			cctx, cancel := callCtx(ctx)
			p, err := kc.CoreV1().Pods(ns).Get(cctx, n, metav1.GetOptions{})
			cancel()
			if err != nil {
				continue
			}
			last[n] = p
			if podReady(p) {
				ready[n] = p
			} else if why := podBroken(p); why != "" {
				failed[n] = errors.New(why)
			}
		}
		return len(ready)+len(failed) == len(names), nil
	})
	for _, n := range names {
		if ready[n] != nil || failed[n] != nil {
			continue
		}
		state := "never seen"
		if p := last[n]; p != nil {
			state = describePod(p)
		}
		failed[n] = fmt.Errorf("not Ready after %s: %s", timeout, state)
		if ctx.Err() != nil {
			failed[n] = fmt.Errorf("interrupted while waiting: %w", ctx.Err())
		}
	}
	for n, err := range failed {
		if ctx.Err() == nil {
			if ev := podEvents(ctx, kc, ns, n); ev != "" {
				failed[n] = fmt.Errorf("%w; events: %s", err, ev)
			}
		}
	}
	return ready, failed
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podBroken says why a pod will never become Ready, or "".
func podBroken(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("pod %s: %s", p.Status.Phase, describePod(p))
	}
	for _, cs := range p.Status.InitContainerStatuses {
		// the agent copy for the cgroups wrapper: an agent image without `cgroups install` fails it
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("init container %s exited (%s, code %d): %s", cs.Name, t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff", "RunContainerError":
				return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
			}
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("container %s exited (%s, code %d): %s", cs.Name, t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
		}
	}
	return ""
}

func describePod(p *corev1.Pod) string {
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Spec.NodeName != "" {
		parts = append(parts, "node "+p.Spec.NodeName)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated %s", cs.Name, cs.State.Terminated.Reason))
		case !cs.Ready:
			parts = append(parts, cs.Name+" not ready")
		}
	}
	return strings.Join(parts, ", ")
}

func podEvents(ctx context.Context, kc kubernetes.Interface, ns, pod string) string {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	l, err := kc.CoreV1().Events(ns).List(cctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "involvedObject.kind": "Pod"}.String(),
	})
	if err != nil || len(l.Items) == 0 {
		return ""
	}
	evs := l.Items
	slices.SortFunc(evs, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	if len(evs) > 5 {
		evs = evs[len(evs)-5:]
	}
	var parts []string
	for _, e := range evs {
		parts = append(parts, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message)))
	}
	return strings.Join(parts, " | ")
}
