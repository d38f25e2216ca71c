package mesh

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Verification is the per-pod (and per-waypoint) proof that a mode is in effect.
type Verification struct {
	Mode      scenario.Mode   `json:"mode"`
	Pods      []PodProof      `json:"pods"`
	Waypoints []WaypointProof `json:"waypoints,omitempty"`
	// Problems not tied to one pod: missing pods, namespace labels changed by someone else.
	Problems []string `json:"problems,omitempty"`
	// ProxyConfig is what a sample of the app's proxies say about the configuration istiod sent them (sidecar
	// mode, once every pod proved it): Envoy's own counters of accepted and rejected xDS updates.
	ProxyConfig []ProxyConfigProof `json:"proxyConfig,omitempty"`
	// StandIn is true when any app pod or waypoint runs a hack/ stand-in proxy (figures are not Istio's).
	StandIn bool `json:"standIn,omitempty"`
	// DataPlanes are the kinds of the data-plane components the mode runs, as the case's pods show them (the app's
	// sidecars; the ztunnels and waypoints serving them), least representative first per component.
	DataPlanes map[results.Component]results.DataPlaneKind `json:"dataPlanes,omitempty"`
	Start      time.Time                                   `json:"start"`
	End        time.Time                                   `json:"end"`
	Elapsed    time.Duration                               `json:"elapsed"`
}

// OK reports whether every pod proved the mode, is ready, every waypoint is ready and nothing else is wrong.
func (v Verification) OK() bool {
	if len(v.Problems) > 0 {
		return false
	}
	for _, p := range v.Pods {
		if !p.Proved || !p.Ready {
			return false
		}
	}
	for _, w := range v.Waypoints {
		if !w.Ready {
			return false
		}
	}
	return true
}

// VerifyError is Verify's failure: it names every pod that did not prove the mode and what to fix.
type VerifyError struct {
	Verification Verification
	Timeout      time.Duration
	// Hint is a cluster-level diagnosis (e.g. no istiod at all) shown first.
	Hint string
}

func (e *VerifyError) Error() string {
	v := e.Verification
	var b strings.Builder
	proved := 0
	for _, p := range v.Pods {
		if p.Proved && p.Ready {
			proved++
		}
	}
	fmt.Fprintf(&b, "mode %s not in effect after %s: %d of %d app pods proved it (%s)", v.Mode, e.Timeout, proved, len(v.Pods), summarize(v.Pods))
	if e.Hint != "" {
		b.WriteString("\n  " + e.Hint)
	}
	for _, p := range v.Problems {
		b.WriteString("\n  " + p)
	}
	for _, w := range v.Waypoints {
		if !w.Ready {
			fmt.Fprintf(&b, "\n  waypoint %s/%s: %s", w.Namespace, w.Name, w.Problem)
		}
	}
	shown := 0
	for _, p := range v.Pods {
		if p.Proved && p.Ready {
			continue
		}
		if shown == 20 {
			b.WriteString("\n  ... (more pods; see the verification record)")
			break
		}
		shown++
		node := ""
		if p.Node != "" {
			node = " (node " + p.Node + ")"
		}
		prob := p.Problem
		if prob == "" && !p.Ready {
			prob = "mode proved but the pod is not ready"
		}
		fmt.Fprintf(&b, "\n  pod %s/%s%s: %s", p.Namespace, p.Name, node, prob)
	}
	return b.String()
}

// Verify watches the target's pods and waypoints, on a target.Cache of its own (see VerifyIn), until every app pod
// proves the mode and is ready, no old replicas are left, every waypoint is ready and the labels are still the
// mode's, or timeout. The Verification holds the last proofs; a failure is a *VerifyError naming pods and fix.
func (s *Switcher) Verify(ctx context.Context, t target.Target, mode scenario.Mode, wp scenario.Waypoint, timeout time.Duration) (Verification, error) {
	if s.Clients == nil {
		return Verification{Mode: mode}, errors.New("verify mode: no Kubernetes clients")
	}
	c := target.NewCache(s.Clients.Kube, t)
	c.Start(ctx)
	defer c.Stop()
	return s.VerifyIn(ctx, c, t, mode, wp, timeout)
}

// podSource is what a verification reads: the app's pods per namespace and the namespaces, from a cache that says
// when they changed. A *target.Cache is one; a case hands the verification the cache its readiness wait read.
type podSource interface {
	// Synced waits for the cache's first lists.
	Synced(ctx context.Context) error
	// Changed receives after the cached objects changed.
	Changed() <-chan struct{}
	// AppPods are the app's pods of a namespace sorted by name (read only).
	AppPods(ns string) []*corev1.Pod
	// Namespace is a cached namespace (read only).
	Namespace(name string) (*corev1.Namespace, error)
}

// VerifyIn is Verify reading src, a started cache of t's pods and the namespaces. Every check reads that cache, so
// the API requests of a verification are the cache's own and never grow with the pods or with a rollout's events; on
// a cache the readiness wait already synced, the check costs no request at all.
func (s *Switcher) VerifyIn(ctx context.Context, src podSource, t target.Target, mode scenario.Mode, wp scenario.Waypoint, timeout time.Duration) (Verification, error) {
	start := s.now()
	if s.Clients == nil {
		return Verification{Mode: mode}, errors.New("verify mode: no Kubernetes clients")
	}
	var refs []WaypointRef
	if mode == scenario.ModeWaypoint {
		refs = Waypoints(t, wp)
	}
	v, err := s.waitProved(ctx, src, t, mode, wp, refs, timeout)
	if v.Mode == "" {
		v.Mode = mode
	}
	v.DataPlanes = s.dataPlaneKinds(ctx, mode, refs, v.Pods)
	for _, k := range v.DataPlanes {
		v.StandIn = v.StandIn || k == results.DataPlaneStandIn
	}
	if err == nil {
		err = s.checkAcceptance(ctx, src, t, mode, refs, &v)
	}
	v.Start, v.End = start, s.now()
	v.Elapsed = v.End.Sub(v.Start)
	switch {
	case err == nil:
		s.log().Info("mode verified", "mode", mode, "pods", len(v.Pods), "waypoints", len(v.Waypoints), "standIn", v.StandIn,
			"elapsed", v.Elapsed.Round(time.Millisecond))
		return v, nil
	case errors.Is(err, kube.ErrWaitTimeout):
		if UsesSidecar(mode) {
			s.explainUnreadyProxies(ctx, &v)
		}
		return v, &VerifyError{Verification: v, Timeout: timeout, Hint: s.hint(ctx, mode, v)}
	case errors.As(err, new(*proxyConfigError)):
		return v, err
	default:
		return v, fmt.Errorf("verify mode %s: %w", mode, err)
	}
}

// waitProved checks on every change of src (and of the waypoints' Gateways) until every pod is proved, or timeout:
// then kube.ErrWaitTimeout, with the last complete snapshot.
func (s *Switcher) waitProved(ctx context.Context, src podSource, t target.Target, mode scenario.Mode, wp scenario.Waypoint, refs []WaypointRef, timeout time.Duration) (Verification, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var v Verification
	err := src.Synced(wctx)
	if err == nil {
		err = kube.Wait{Watches: s.gatewayWatches(refs), Trigger: src.Changed(), Pace: 200 * time.Millisecond}.Until(wctx, func(ctx context.Context) (bool, error) {
			snap, err := s.verifyOnce(ctx, t, mode, wp, refs, src)
			if err != nil {
				// A check cut off by the deadline returns a partial snapshot: keep the last complete one, which is
				// what the failure message must show (the pods and what to fix).
				return false, err
			}
			v = snap
			return v.OK(), nil
		})
	}
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		err = kube.ErrWaitTimeout // our own deadline, not the caller's
	}
	return v, err
}

// gatewayWatches watch the Gateways of the namespaces refs are in, one watch per namespace.
func (s *Switcher) gatewayWatches(refs []WaypointRef) []kube.WatchOpener {
	var watches []kube.WatchOpener
	if len(refs) == 0 || s.Clients.Gateway == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, r := range refs {
		if !seen[r.Namespace] {
			seen[r.Namespace] = true
			ns := r.Namespace
			watches = append(watches, func(ctx context.Context) (watch.Interface, error) {
				return s.Clients.Gateway.GatewayV1().Gateways(ns).Watch(ctx, metav1.ListOptions{})
			})
		}
	}
	return watches
}

// checkAcceptance reads the proxies' xDS counters into v.ProxyConfig (a sample of the sidecars, every waypoint pod):
// a ready proxy may still have refused a later update, which is a *proxyConfigError before anything is measured.
func (s *Switcher) checkAcceptance(ctx context.Context, src podSource, t target.Target, mode scenario.Mode, refs []WaypointRef, v *Verification) error {
	if UsesSidecar(mode) {
		var pods []*corev1.Pod
		for _, ns := range t.Namespaces {
			pods = append(pods, src.AppPods(ns)...)
		}
		v.ProxyConfig = s.proxyConfigProofs(ctx, pods, s.proxySample())
		if err := checkProxyConfig(v.ProxyConfig); err != nil {
			return err
		}
	}
	if len(refs) == 0 {
		return nil
	}
	var pods []*corev1.Pod
	for _, r := range refs {
		if list, lerr := s.Clients.Kube.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel + "=" + r.Name}); lerr == nil {
			for i := range list.Items {
				pods = append(pods, &list.Items[i])
			}
		}
	}
	wps := s.proxyConfigProofs(ctx, pods, len(pods))
	v.ProxyConfig = append(v.ProxyConfig, wps...)
	return checkProxyConfig(wps)
}

// verifyOnce takes one snapshot of the proofs from src (and the waypoints from the API: few, one read each).
func (s *Switcher) verifyOnce(ctx context.Context, t target.Target, mode scenario.Mode, wp scenario.Waypoint, refs []WaypointRef, src podSource) (Verification, error) {
	v := Verification{Mode: mode}
	kc := s.Clients.Kube
	live := 0
	for _, ns := range t.Namespaces {
		for _, p := range src.AppPods(ns) {
			pr := prove(mode, *p)
			v.StandIn = v.StandIn || pr.StandIn
			v.Pods = append(v.Pods, pr)
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		nsObj, err := src.Namespace(ns)
		if err != nil {
			return v, fmt.Errorf("get namespace %s: %w", ns, err)
		}
		want := NamespaceLabels(mode, ns, wp, waypointNamespaceFor(t, wp, ns), s.Revision)
		for _, k := range sortedKeys(want) {
			got, has := nsObj.Labels[k]
			switch w := want[k]; {
			case w != nil && got != *w:
				v.Problems = append(v.Problems, fmt.Sprintf("namespace %s: label %s=%q, want %q (changed by someone else? re-run the mode switch)", ns, k, got, *w))
			case w == nil && has:
				v.Problems = append(v.Problems, fmt.Sprintf("namespace %s: label %s=%q must not be set in mode %s", ns, k, got, mode))
			}
		}
	}
	if exp := t.ExpectedPods(); exp > 0 && live != exp {
		v.Problems = append(v.Problems, fmt.Sprintf("%d app pods running, %d expected (rollout in progress, or pods failing to be created: check the workloads' events)", live, exp))
	}
	for _, r := range refs {
		p, err := checkWaypoint(ctx, kc, s.Clients.Gateway, r)
		if err != nil {
			return v, err
		}
		v.Waypoints = append(v.Waypoints, p)
	}
	return v, nil
}

// dataPlaneKinds says what runs each data-plane component of mode (Istio's, upstream Envoy or a stand-in), from the
// pods; the least representative pod decides. A failed read says nothing (the pods' own proofs stand).
func (s *Switcher) dataPlaneKinds(ctx context.Context, mode scenario.Mode, refs []WaypointRef, proofs []PodProof) map[results.Component]results.DataPlaneKind {
	kinds := map[results.Component][]results.DataPlaneKind{}
	if UsesSidecar(mode) {
		for _, p := range proofs {
			if p.DataPlane != "" {
				kinds[results.ComponentSidecar] = append(kinds[results.ComponentSidecar], p.DataPlane)
			}
		}
	}
	kc := s.Clients.Kube
	if UsesAmbient(mode) {
		if pods, err := kc.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"}); err == nil {
			for i := range pods.Items {
				kinds[results.ComponentZtunnel] = append(kinds[results.ComponentZtunnel], podDataPlane(&pods.Items[i]))
			}
		}
	}
	for _, r := range refs {
		pods, err := kc.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel + "=" + r.Name})
		if err == nil {
			for i := range pods.Items {
				kinds[results.ComponentWaypoint] = append(kinds[results.ComponentWaypoint], podDataPlane(&pods.Items[i]))
			}
		}
	}
	out := map[results.Component]results.DataPlaneKind{}
	for comp, ks := range kinds {
		out[comp] = leastOf(ks)
	}
	return out
}

// unreadyProxiesRead bounds how many not-ready proxies a failed verification reads the counters of.
const unreadyProxiesRead = 3

// explainUnreadyProxies adds Envoy's xDS counters to the problem of the first few pods whose proxy never became
// ready: pilot-agent's readiness waits for a first accepted listener and cluster update, so "rejected" and "none
// received" are the two causes worth telling apart (pilot/cmd/pilot-agent/status/ready/probe.go).
func (s *Switcher) explainUnreadyProxies(ctx context.Context, v *Verification) {
	read := 0
	for i := range v.Pods {
		p := &v.Pods[i]
		if p.Observed != observedSidecarNotReady || read == unreadyProxiesRead {
			continue
		}
		read++
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}, Spec: corev1.PodSpec{NodeName: p.Node}}
		pr := s.readProxyConfig(ctx, pod)
		switch {
		case pr.ReadError != "":
		case len(pr.Rejected()) > 0:
			p.Problem += "; Envoy rejected the configuration istiod sent: " + pr.Describe()
		case pr.Stats[LDSSuccess] == 0 || pr.Stats[CDSSuccess] == 0:
			p.Problem += "; Envoy has not received a complete configuration from istiod: " + pr.Describe()
		}
	}
}

// hint diagnoses cluster-level causes of a failed verification.
func (s *Switcher) hint(ctx context.Context, mode scenario.Mode, v Verification) string {
	if !NeedsIstio(mode) {
		return ""
	}
	pods, err := s.Clients.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app=istiod"})
	if err == nil && len(pods.Items) == 0 {
		return fmt.Sprintf("no Istio control plane found (no pod labelled app=istiod in any namespace): install Istio, or remove %q from spec.modes. "+
			"meshbench does not measure an un-meshed app as %s (meshbench preflight checks this before a run)", mode, mode)
	}
	if UsesAmbient(mode) {
		pending := 0
		for _, p := range v.Pods {
			if p.Observed == ObservedAmbientPending {
				pending++
			}
		}
		if pending > 0 {
			return fmt.Sprintf("%d pods are partially captured (redirection=pending): ztunnel is not running or not connected on their nodes", pending)
		}
	}
	return ""
}
