package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// In-cluster load clients.
const (
	// DeploymentName is the load client Deployment in the entry namespace.
	DeploymentName = "meshbench-loadgen"
	// ContainerName is the client container (the mesh may add istio-proxy next to it).
	ContainerName = "loadgen"
	// AgentPath is meshbench-agent inside the agent image.
	AgentPath = "/usr/local/bin/meshbench-agent"
	// NameLabel and ComponentLabel mark the client pods; they never carry the app's label, so the collector keeps
	// client CPU apart from the app's.
	NameLabel      = "app.kubernetes.io/name"
	ComponentLabel = "app.kubernetes.io/component"
	ComponentValue = "loadgen"
	// ModeAnnotation on the pod template records the data-plane mode the clients were created for: changing it rolls
	// the clients, so sidecar injection (decided at pod creation) follows the namespace.
	ModeAnnotation = "meshbench.dev/mode"
	// PreparedAnnotation on the pod template is set by every Prepare: the clients are always fresh pods, so no load
	// left running by an interrupted or killed meshbench (an exec'd process outlives its stream) adds to a new run.
	PreparedAnnotation = "meshbench.dev/prepared-at"
	// Istio's per-pod markers (see the Istio modes reference).
	sidecarStatusAnnotation = "sidecar.istio.io/status"
	redirectionAnnotation   = "ambient.istio.io/redirection"
)

// Cluster runs load from meshbench-agent client pods placed in the app's entry namespace, so they are in the same
// data-plane mode as the app (an un-meshed client would skip the waypoint and the client-side proxy). The spec's QPS
// is split evenly over the pods; each is driven by exec of `meshbench-agent load ... --json`.
type Cluster struct {
	Kube  kubernetes.Interface
	Exec  kube.Execer
	RunID string
	// Image is spec.images.agent; PullPolicy spec.images.pullPolicy.
	Image        string
	PullPolicy   corev1.PullPolicy
	NodeSelector map[string]string
	// Tolerations are spec.workload.tolerations: the clients go where the app may (a tainted node pool).
	Tolerations []corev1.Toleration
	// Clients is the number of client pods (load.clients).
	Clients int
	// ReadyTimeout bounds Prepare (default 5 minutes).
	ReadyTimeout time.Duration
	Log          *slog.Logger
	// Clock stamps the preparations and paces Prepare's re-checks (nil = the wall clock).
	Clock clock.Clock

	prepared string // PreparedAnnotation value of the last Prepare
}

// Labels are the client pods' labels.
func (c *Cluster) Labels() map[string]string {
	return kube.MergeLabels(kube.RunLabels(c.RunID), map[string]string{NameLabel: DeploymentName, ComponentLabel: ComponentValue})
}

// Selector selects the client pods of this run.
func (c *Cluster) Selector() string { return labels.Set(c.Labels()).String() }

// Deployment is the client Deployment for namespace ns in mode. It is pure.
func (c *Cluster) Deployment(ns string, mode scenario.Mode) *appsv1.Deployment {
	replicas := int32(max(c.Clients, 1))
	lbl := c.Labels()
	grace := int64(2)
	noToken := false
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: DeploymentName, Namespace: ns, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl, Annotations: map[string]string{ModeAnnotation: string(mode)}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					AutomountServiceAccountToken:  &noToken,
					NodeSelector:                  c.NodeSelector,
					Tolerations:                   c.Tolerations,
					// Spread the clients over nodes so one node's CPU does not cap the load.
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector: &metav1.LabelSelector{MatchLabels: lbl},
					}},
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           c.Image,
						ImagePullPolicy: c.PullPolicy,
						Args:            []string{"load", "--hold"},
						// Requests only: a CPU limit would throttle the client and cap the load it can measure.
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
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
}

func ptr[T any](v T) *T { return &v }

// Prepare creates or updates the client Deployment for mode (always rolling fresh client pods) and waits until
// exactly the desired number of client pods of this template are Ready and carry the mode's mesh markers (sidecar:
// istio-proxy and sidecar.istio.io/status; ambient, waypoint: ambient.istio.io/redirection=enabled; none: neither).
func (c *Cluster) Prepare(ctx context.Context, ns string, mode scenario.Mode) error {
	want := c.Deployment(ns, mode)
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	want.Spec.Template.Annotations[PreparedAnnotation] = clk.Now().UTC().Format(time.RFC3339Nano)
	deps := c.Kube.AppsV1().Deployments(ns)
	cur, err := deps.Get(ctx, DeploymentName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := deps.Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("create load clients in %s: %w", ns, err)
		}
	case err != nil:
		return fmt.Errorf("get load clients in %s: %w", ns, err)
	case !apiequality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector):
		// Another run's clients (a namespace a killed run left, taken over): the selector is immutable, so the
		// Deployment is replaced; its old pods do not match ours and are garbage collected.
		bg := metav1.DeletePropagationBackground
		if err := deps.Delete(ctx, DeploymentName, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replace load clients of another run in %s: %w", ns, err)
		}
		if _, err := deps.Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("create load clients in %s: %w", ns, err)
		}
	default:
		cur.Spec.Replicas, cur.Spec.Template = want.Spec.Replicas, want.Spec.Template
		if _, err := deps.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("update load clients in %s: %w", ns, err)
		}
	}
	timeout := c.ReadyTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	c.prepared = want.Spec.Template.Annotations[PreparedAnnotation]
	// Pod events trigger a re-check at once; the 1 s interval bounds a quiet or missed watch.
	podWatch := func(ctx context.Context) (watch.Interface, error) {
		return c.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: c.Selector()})
	}
	var last error
	err = kube.Wait{Timeout: timeout, Watches: []kube.WatchOpener{podWatch}, Interval: time.Second, Clock: clk}.Until(ctx,
		func(ctx context.Context) (bool, error) {
			_, last = c.readyPods(ctx, ns, mode)
			return last == nil, nil // not ready yet, or a transient API error: keep it for the message
		})
	if errors.Is(err, kube.ErrWaitTimeout) {
		return fmt.Errorf("load clients in %s not ready in mode %s: %w after %s: %w", ns, mode, err, timeout, last)
	}
	return err
}

// readyPods returns the client pods when exactly the desired number of current pods are Ready in mode.
func (c *Cluster) readyPods(ctx context.Context, ns string, mode scenario.Mode) ([]corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: c.Selector()})
	if err != nil {
		return nil, fmt.Errorf("list load clients: %w", err)
	}
	var pods []corev1.Pod
	var problems []error
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			problems = append(problems, fmt.Errorf("pod %s is terminating", p.Name))
			continue
		}
		if p.Annotations[ModeAnnotation] != string(mode) {
			problems = append(problems, fmt.Errorf("pod %s is from mode %q", p.Name, p.Annotations[ModeAnnotation]))
			continue
		}
		if c.prepared != "" && p.Annotations[PreparedAnnotation] != c.prepared {
			problems = append(problems, fmt.Errorf("pod %s is from an earlier preparation", p.Name))
			continue
		}
		if err := checkClientPod(p, mode); err != nil {
			problems = append(problems, err)
			continue
		}
		pods = append(pods, p)
	}
	want := max(c.Clients, 1)
	if len(pods) == want && len(problems) == 0 {
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		return pods, nil
	}
	problems = append(problems, fmt.Errorf("%d of %d client pods ready", len(pods), want))
	return nil, errors.Join(problems...)
}

// checkClientPod reports why a client pod is not usable in mode: not Ready, or missing (or wrongly carrying) the
// mesh's per-pod markers. It is pure.
func checkClientPod(p corev1.Pod, mode scenario.Mode) error {
	ready := false
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if p.Status.Phase != corev1.PodRunning || !ready {
		return fmt.Errorf("pod %s is not ready (phase %s)", p.Name, p.Status.Phase)
	}
	proxy := false
	for _, ctr := range append(slices.Clone(p.Spec.Containers), p.Spec.InitContainers...) {
		if ctr.Name == "istio-proxy" {
			proxy = true
		}
	}
	_, injected := p.Annotations[sidecarStatusAnnotation]
	redirected := p.Annotations[redirectionAnnotation] == "enabled"
	switch mode {
	case scenario.ModeSidecar:
		if !proxy || !injected {
			return fmt.Errorf("pod %s has no istio-proxy sidecar (is the namespace labelled istio-injection=enabled?)", p.Name)
		}
	case scenario.ModeAmbient, scenario.ModeWaypoint:
		if proxy || injected {
			return fmt.Errorf("pod %s has a sidecar in ambient mode", p.Name)
		}
		if !redirected {
			return fmt.Errorf("pod %s is not captured by ztunnel (%s=%q)", p.Name, redirectionAnnotation, p.Annotations[redirectionAnnotation])
		}
	default:
		if proxy || injected || redirected {
			return fmt.Errorf("pod %s is still in the mesh in mode none", p.Name)
		}
	}
	return nil
}

// Run drives the target from every client pod at once and merges their reports. A client whose exec failed on its
// way through its node's kubelet is a *target.KubeletError in the joined error (errors.As and target.FailedNodes
// find it).
func (c *Cluster) Run(ctx context.Context, ns string, mode scenario.Mode, s Spec) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, fmt.Errorf("run load: %w", err)
	}
	pods, err := c.readyPods(ctx, ns, mode)
	if err != nil {
		return Result{}, fmt.Errorf("load clients in %s: %w", ns, err)
	}
	s.Clients = len(pods)
	// One agent run per pod and target, all at once: each is a separate fortio run with its share of the pod's
	// connections and of the QPS, so a slow target cannot hold back the others' request pacing.
	type job struct {
		pod  string
		node string
		spec ClientSpec
	}
	var jobs []job
	for i, perTarget := range s.ClientSpecs() {
		for _, cs := range perTarget {
			jobs = append(jobs, job{pods[i].Name, pods[i].Spec.NodeName, cs})
		}
	}
	outs := make([]ClientResult, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			who := j.pod
			if j.node != "" {
				who += " (node " + j.node + ")" // an exec goes through that node's kubelet
			}
			if j.spec.Target != "" {
				who += " target " + j.spec.Target
			}
			cmd := append([]string{AgentPath, "load"}, j.spec.Args()...)
			// The exec outlives the load by at most a minute; ctx cancellation stops waiting at once.
			ectx, cancel := context.WithTimeout(ctx, j.spec.Total()+time.Minute)
			defer cancel()
			stdout, stderr, err := c.Exec.Exec(ectx, ns, j.pod, ContainerName, cmd, nil)
			if err != nil {
				errs[i] = throughKubelet(ectx, j.node, fmt.Errorf("client %s: %w", who, err))
				return
			}
			cr, err := Parse(stdout)
			if err != nil {
				errs[i] = fmt.Errorf("client %s: %w (stderr: %s)", who, err, tail(string(stderr), 300))
				return
			}
			if cr.Client == "" {
				cr.Client = j.pod
			}
			if cr.Target != j.spec.Target {
				// merge sorts reports by target; one that names another would land in the wrong target's numbers.
				errs[i] = fmt.Errorf("client %s: report is for target %q", who, cr.Target)
				return
			}
			outs[i] = cr
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	return mergeTargets(s, outs)
}

// ExecAgent runs `meshbench-agent args...` in the first ready client pod of namespace ns (prepared for mode, so the
// command's traffic goes through the data plane being measured) and returns its stdout. A non-zero exit is an error
// that carries the end of stderr.
func (c *Cluster) ExecAgent(ctx context.Context, ns string, mode scenario.Mode, args []string) ([]byte, error) {
	if len(args) == 0 {
		return nil, errors.New("exec meshbench-agent: no subcommand")
	}
	pods, err := c.readyPods(ctx, ns, mode)
	if err != nil {
		return nil, fmt.Errorf("load clients in %s: %w", ns, err)
	}
	p := pods[0].Name
	stdout, stderr, err := c.Exec.Exec(ctx, ns, p, ContainerName, append([]string{AgentPath}, args...), nil)
	if err != nil {
		// Only the subcommand: the arguments may carry credentials or cookies.
		return stdout, throughKubelet(ctx, pods[0].Spec.NodeName,
			fmt.Errorf("client %s: meshbench-agent %s: %w (stderr: %s)", p, args[0], err, tail(strings.TrimSpace(string(stderr)), 300)))
	}
	return stdout, nil
}

// throughKubelet is err, a client pod's failed exec, as a *target.KubeletError naming node when the exec's way
// through the kubelet failed while ctx still ran, so the runner checks the node before the next case; any other
// failure is returned as it is. The text is err's.
func throughKubelet(ctx context.Context, node string, err error) error {
	if node == "" || ctx.Err() != nil || !kube.ExecPathFailed(err) {
		return err
	}
	return &target.KubeletError{Node: node, Err: err}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// Teardown deletes the client Deployment (its pods go with it). A missing Deployment is not an error.
func (c *Cluster) Teardown(ctx context.Context, ns string) error {
	fg := metav1.DeletePropagationForeground
	err := c.Kube.AppsV1().Deployments(ns).Delete(ctx, DeploymentName, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete load clients in %s: %w", ns, err)
	}
	return nil
}
