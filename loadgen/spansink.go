package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/spansink"
)

// SpanSinkName names the span sink's Deployment and Service: a tracing variant's collector (meshbench-agent spans),
// in the entry namespace beside the load clients.
const SpanSinkName = "meshbench-spans"

// spanSinkComponent is the sink pods' ComponentLabel: never the app's label, so no figure counts it as the app.
const spanSinkComponent = "span-sink"

// The sink is outside the data plane in every mode: Envoy's tracer sends to it from the proxy itself, and a sidecar
// or ztunnel of its own would add its own cost and spans (the label forms: istio/istio 1.24.0
// pkg/kube/inject/inject.go injectRequired reads the label before the annotation; ambient's opt-out
// istio.io/dataplane-mode=none, pkg/config/constants).
var spanSinkOptOut = map[string]string{"sidecar.istio.io/inject": "false", "istio.io/dataplane-mode": "none"}

// spanSinkLabels are the sink's selector labels.
func (c *Cluster) spanSinkLabels() map[string]string {
	return kube.MergeLabels(kube.RunLabels(c.RunID), map[string]string{NameLabel: SpanSinkName, ComponentLabel: spanSinkComponent})
}

// SpanSinkHost is the sink Service's fully qualified name in namespace ns of a cluster with DNS domain domain: what
// istiod's tracing provider must name (it looks the host up in its registry).
func SpanSinkHost(ns, domain string) string {
	if domain == "" {
		domain = kube.DefaultClusterDomain
	}
	return SpanSinkName + "." + ns + ".svc." + domain
}

// SpanSink is the sink's Deployment and Service in namespace ns. It is pure.
func (c *Cluster) SpanSink(ns string) (*appsv1.Deployment, *corev1.Service) {
	sel := c.spanSinkLabels()
	podLabels := kube.MergeLabels(sel, spanSinkOptOut)
	one := int32(1)
	grace := int64(2)
	noToken := false
	port := int32(spansink.Port)
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: SpanSinkName, Namespace: ns, Labels: sel},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					AutomountServiceAccountToken:  &noToken,
					NodeSelector:                  c.NodeSelector,
					Tolerations:                   c.Tolerations,
					Containers: []corev1.Container{{
						Name:            "spans",
						Image:           c.Image,
						ImagePullPolicy: c.PullPolicy,
						Args:            []string{"spans", "--listen", ":" + strconv.Itoa(spansink.Port)},
						Ports:           []corev1.ContainerPort{{Name: "http-zipkin", ContainerPort: port}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: spansink.CountsPath, Port: intstr.FromInt32(port)}}, PeriodSeconds: 1},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), AllowPrivilegeEscalation: ptr(false),
							ReadOnlyRootFilesystem: ptr(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: SpanSinkName, Namespace: ns, Labels: sel},
		Spec: corev1.ServiceSpec{
			Selector: sel,
			// The port's name tells Istio the protocol (http-*): its cluster for the collector is HTTP.
			Ports: []corev1.ServicePort{{Name: "http-zipkin", Port: port, TargetPort: intstr.FromInt32(port)}},
		},
	}
	return dep, svc
}

// EnsureSpanSink creates the sink in ns (an existing one of this run is kept) and waits until its pod is Ready.
func (c *Cluster) EnsureSpanSink(ctx context.Context, ns string) error {
	dep, svc := c.SpanSink(ns)
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the span sink in %s: %w", ns, err)
	}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the span sink's Service in %s: %w", ns, err)
	}
	timeout := c.ReadyTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	sel := labels.Set(c.spanSinkLabels()).String()
	podWatch := func(ctx context.Context) (watch.Interface, error) {
		return c.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel})
	}
	var last error
	err := kube.Wait{Timeout: timeout, Watches: []kube.WatchOpener{podWatch}, Interval: time.Second, Clock: clk}.Until(ctx,
		func(ctx context.Context) (bool, error) {
			_, last = c.spanSinkPod(ctx, ns)
			return last == nil, nil
		})
	if errors.Is(err, kube.ErrWaitTimeout) {
		return fmt.Errorf("span sink in %s not ready: %w after %s: %w", ns, err, timeout, last)
	}
	return err
}

// spanSinkPod is the sink's Ready pod in ns.
func (c *Cluster) spanSinkPod(ctx context.Context, ns string) (*corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(c.spanSinkLabels()).String()})
	if err != nil {
		return nil, fmt.Errorf("list the span sink's pods: %w", err)
	}
	for i := range l.Items {
		p := &l.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("no Ready span sink pod among %d", len(l.Items))
}

// SpanCounts reads what the sink in ns received so far, through the API server's pods/proxy.
func (c *Cluster) SpanCounts(ctx context.Context, ns string) (spansink.Counts, error) {
	p, err := c.spanSinkPod(ctx, ns)
	if err != nil {
		return spansink.Counts{}, err
	}
	body, err := kube.ProxyGet(ctx, c.Kube, "pods", ns, fmt.Sprintf("%s:%d", p.Name, spansink.Port), spansink.CountsPath, nil)
	if err != nil {
		return spansink.Counts{}, fmt.Errorf("read the span sink %s/%s: %w", ns, p.Name, err)
	}
	return spansink.ParseCounts(body)
}
