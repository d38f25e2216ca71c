//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Labels returns the labels every test object carries (managed-by + run id) merged with extra.
func (c *Cluster) Labels(extra map[string]string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedByValue, LabelRun: c.RunID}
	maps.Copy(l, extra)
	return l
}

// CreateNamespace creates "<prefix>-<random>" with the managed-by/run labels and deletes it (waiting until it is
// gone, at most 2 minutes) when the test ends. On failure it first logs the namespace's pods and events.
func (c *Cluster) CreateNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   prefix + "-" + randomSuffix(5),
		Labels: c.Labels(nil),
	}}
	created, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	name := created.Name
	// The namespace's default ServiceAccount is created asynchronously; pods are rejected until it exists.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s: default ServiceAccount never appeared: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.DumpNamespace(t, name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.DeleteNamespace(ctx, name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return name
}

// CreateNamespaces creates each namespace with its labels (as given: no run labels) and deletes it when the test
// ends, without waiting for it to go; on failure it first logs the namespace's pods and events.
func (c *Cluster) CreateNamespaces(ctx context.Context, t testing.TB, labels map[string]map[string]string) {
	t.Helper()
	for name, labels := range labels {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				c.DumpNamespace(t, name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_ = c.DeleteNamespace(ctx, name)
		})
	}
}

// DeleteNamespace deletes a namespace (foreground) and waits until it is gone.
func (c *Cluster) DeleteNamespace(ctx context.Context, name string) error {
	policy := metav1.DeletePropagationForeground
	grace := int64(0)
	err := c.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy, GracePeriodSeconds: &grace})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s still terminating: %w", name, err)
	}
	return nil
}

// deleteRunNamespaces is TestMain's safety net: every namespace labelled with this process's run id goes.
func (c *Cluster) deleteRunNamespaces() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + c.RunID})
	if err != nil {
		return
	}
	for _, ns := range list.Items {
		_ = c.DeleteNamespace(ctx, ns.Name)
	}
}

// WaitPodsReady watches pods matching selector in ns until at least n of them are Ready and returns them (sorted
// by name). It fails fast when a matching pod reaches Failed/Succeeded. The deadline comes from ctx.
func (c *Cluster) WaitPodsReady(ctx context.Context, ns, selector string, n int) ([]corev1.Pod, error) {
	pods := c.Client.CoreV1().Pods(ns)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("list pods %q in %s: %w", selector, ns, err)
		}
		state := map[string]corev1.Pod{}
		for _, p := range list.Items {
			state[p.Name] = p
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
		if err != nil {
			return nil, fmt.Errorf("watch pods %q in %s: %w", selector, ns, err)
		}
		ready, done, err := waitPodsWatch(ctx, w, state, n)
		w.Stop()
		if err != nil || done {
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("pods %q in %s: %w; state: %s", selector, ns, err, describePods(state))
			}
			return ready, err
		}
		// The watch closed (apiserver timeout): list again and continue.
	}
}

func waitPodsWatch(ctx context.Context, w watch.Interface, state map[string]corev1.Pod, n int) ([]corev1.Pod, bool, error) {
	for {
		if ready := readyPods(state); len(ready) >= n {
			return ready, true, nil
		}
		for _, p := range state {
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return nil, true, fmt.Errorf("pod %s/%s ended in phase %s (%s)", p.Namespace, p.Name, p.Status.Phase, p.Status.Message)
			}
		}
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				if ev.Type == watch.Error {
					return nil, false, nil // e.g. "too old resource version": relist
				}
				continue
			}
			if ev.Type == watch.Deleted {
				delete(state, p.Name)
			} else {
				state[p.Name] = *p
			}
		}
	}
}

func readyPods(state map[string]corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range state {
		if p.DeletionTimestamp == nil && PodReady(&p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func describePods(state map[string]corev1.Pod) string {
	if len(state) == 0 {
		return "no matching pods"
	}
	var parts []string
	for _, p := range state {
		s := fmt.Sprintf("%s phase=%s ready=%t node=%s", p.Name, p.Status.Phase, PodReady(&p), p.Spec.NodeName)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				s += fmt.Sprintf(" %s waiting=%s(%s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Exec runs cmd in a container (container "" = the pod's only/first container) through the apiserver, like
// `kubectl exec`: WebSocket first, SPDY as fallback. A non-zero exit status is returned as an error that
// includes stderr.
func (c *Cluster) Exec(ctx context.Context, ns, pod, container string, cmd ...string) (string, string, error) {
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   cmd,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		return "", "", fmt.Errorf("websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		return "", "", fmt.Errorf("spdy executor: %w", err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return "", "", fmt.Errorf("fallback executor: %w", err)
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("exec %q in %s/%s: %w (stderr: %s)", strings.Join(cmd, " "), ns, pod, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), nil
}

// PromSample is one series of an instant-vector Prometheus result.
type PromSample struct {
	Metric map[string]string
	Time   time.Time
	Value  float64
}

// PromQuery runs an instant query against the cluster's Prometheus.
func (c *Cluster) PromQuery(ctx context.Context, query string) ([]PromSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	u := strings.TrimRight(c.PrometheusURL, "/") + "/api/v1/query?" + url.Values{"query": {query}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus query %q: %w", query, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("prometheus query %q: read body: %w", query, err)
	}
	var r struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("prometheus query %q: HTTP %d, decode: %w", query, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus query %q: %s: %s", query, r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("prometheus query %q: result type %q, want vector", query, r.Data.ResultType)
	}
	out := make([]PromSample, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		ts, _ := s.Value[0].(float64)
		vs, _ := s.Value[1].(string)
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, fmt.Errorf("prometheus query %q: value %q: %w", query, vs, err)
		}
		out = append(out, PromSample{Metric: s.Metric, Time: time.Unix(0, int64(ts*1e9)), Value: v})
	}
	return out, nil
}

// WaitPromSeries polls PromQuery (every 2s; the harness scrapes every 5s) until the query returns at least min
// series; the deadline comes from ctx.
func (c *Cluster) WaitPromSeries(ctx context.Context, query string, min int) ([]PromSample, error) {
	var last []PromSample
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		last, lastErr = c.PromQuery(ctx, query)
		return lastErr == nil && len(last) >= min, nil
	})
	if err != nil {
		return last, fmt.Errorf("wait for %d series of %q: %w (last: %d series, err %v)", min, query, err, len(last), lastErr)
	}
	return last, nil
}

// DumpNamespace logs pods (with container states) and events of a namespace: called automatically for failed
// tests by CreateNamespace's cleanup.
func (c *Cluster) DumpNamespace(t testing.TB, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		state := map[string]corev1.Pod{}
		for _, p := range pods.Items {
			state[p.Name] = p
		}
		t.Logf("namespace %s pods: %s", ns, describePods(state))
	}
	if evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			t.Logf("event %s %s/%s: %s %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// PodsOnNode filters pods by node name.
func PodsOnNode(pods []corev1.Pod, node string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

// NameSelector is a field selector for one object name, for use with List/Watch.
func NameSelector(name string) string {
	return fields.OneTermEqualSelector("metadata.name", name).String()
}
