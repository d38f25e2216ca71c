package mesh

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// variantObjectName is the name of each object a variant creates in an app namespace (one per kind).
const variantObjectName = "meshbench-variant"

// VariantProbePath is the one path the allowing rule of an L7 authorization variant leaves out (notPaths): no load
// requests it, and a request for it is refused while the policy is in force (docs/variants.md).
const VariantProbePath = "/meshbench-variant-probe"

var (
	peerAuthenticationGVR = schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "peerauthentications"}
	telemetryGVR          = schema.GroupVersionResource{Group: "telemetry.istio.io", Version: "v1", Resource: "telemetries"}
	// variantGVRs are the kinds a variant creates, in the order they are created (and deleted in reverse).
	variantGVRs = []schema.GroupVersionResource{peerAuthenticationGVR, authorizationPolicyGVR, telemetryGVR}
)

// variantObject is one object a variant creates, with its resource.
type variantObject struct {
	gvr schema.GroupVersionResource
	u   *unstructured.Unstructured
}

// variantObjects are the objects that put variant v on namespace ns in mode (docs/variants.md): PeerAuthentication,
// ALLOW AuthorizationPolicy, Telemetry with the envoy access log provider (istio/istio 1.24.0 pkg/config/mesh/mesh.go)
// and the run's tracing provider (TracingProviderName, at the variant's randomSamplingPercentage); the policy and the
// Telemetry attach to the waypoint (targetRefs) in mode waypoint. It is pure.
func variantObjects(runID, ns string, namespaces []string, mode scenario.Mode, v scenario.Variant, wp scenario.Waypoint) ([]variantObject, error) {
	var targetRefs []any
	if mode == scenario.ModeWaypoint && v.EnvoyPolicies() {
		if wp.Scope != scenario.WaypointPerNamespace {
			return nil, fmt.Errorf("variant %s: a policy attached to a %s waypoint is not supported: use waypoint.scope %s", v.Name, wp.Scope, scenario.WaypointPerNamespace)
		}
		targetRefs = []any{map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": wp.Name}}
	}
	var out []variantObject
	add := func(gvr schema.GroupVersionResource, kind string, spec map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.Group + "/" + gvr.Version, "kind": kind,
			"metadata": map[string]any{"name": variantObjectName, "namespace": ns},
			"spec":     spec,
		}}
		u.SetLabels(kube.RunLabels(runID))
		out = append(out, variantObject{gvr, u})
	}
	if v.MTLS != "" {
		add(peerAuthenticationGVR, "PeerAuthentication", map[string]any{"mtls": map[string]any{"mode": string(v.MTLS)}})
	}
	if a := v.Authorization; a != nil {
		if a.Layer == scenario.AuthzL7 && mode == scenario.ModeAmbient {
			return nil, fmt.Errorf("variant %s: L7 rules need a waypoint (ztunnel enforces L4 rules only)", v.Name)
		}
		spec := map[string]any{"action": "ALLOW", "rules": authorizationRules(*a, namespaces)}
		if targetRefs != nil {
			spec["targetRefs"] = targetRefs
		}
		add(authorizationPolicyGVR, "AuthorizationPolicy", spec)
	}
	if v.AccessLog || v.Tracing != nil {
		spec := map[string]any{}
		if v.AccessLog {
			spec["accessLogging"] = []any{map[string]any{"providers": []any{map[string]any{"name": "envoy"}}}}
		}
		if tr := v.Tracing; tr != nil {
			spec["tracing"] = []any{map[string]any{
				"providers":                []any{map[string]any{"name": TracingProviderName(runID)}},
				"randomSamplingPercentage": tr.Sampling(),
			}}
		}
		if targetRefs != nil {
			spec["targetRefs"] = targetRefs
		}
		add(telemetryGVR, "Telemetry", spec)
	}
	return out, nil
}

// authorizationRules are a's rules: first those that match none of the app's traffic (L4: a source principal no
// workload has; L7: a path no load requests), then the one that allows it: every source of the app's namespaces
// (the load clients run there), at L7 to every path but VariantProbePath. An ALLOW policy refuses what no rule
// matches, so the allowing rule keeps the load unchanged and the proxy still holds every rule.
func authorizationRules(a scenario.Authorization, namespaces []string) []any {
	rules := make([]any, 0, a.Rules)
	for i := 1; i < a.Rules; i++ {
		switch a.Layer {
		case scenario.AuthzL7:
			rules = append(rules, map[string]any{"to": []any{map[string]any{"operation": map[string]any{
				"paths": []any{fmt.Sprintf("/meshbench-rule-%d", i)}}}}})
		default:
			rules = append(rules, map[string]any{"from": []any{map[string]any{"source": map[string]any{
				"principals": []any{fmt.Sprintf("cluster.local/ns/meshbench-none/sa/rule-%d", i)}}}}})
		}
	}
	nss := make([]any, len(namespaces))
	for i, ns := range namespaces {
		nss[i] = ns
	}
	allow := map[string]any{"from": []any{map[string]any{"source": map[string]any{"namespaces": nss}}}}
	if a.Layer == scenario.AuthzL7 {
		allow["to"] = []any{map[string]any{"operation": map[string]any{"notPaths": []any{VariantProbePath}}}}
	}
	return append(rules, allow)
}

// VariantProof is what the verification of a variant found.
type VariantProof struct {
	// Objects counts the objects created (one per feature and namespace).
	Objects int
	// Proxies are the Envoy proxies the variant configures (sampled sidecars, every waypoint pod): each took a
	// listener update after the objects were created and rejected none. None in the ambient modes' ztunnel paths.
	Proxies []ProxyConfigProof
	// Accepted are istiod's verdicts on the AuthorizationPolicy in the ambient modes ("<ns>: ZtunnelAccepted" or
	// WaypointAccepted), when it writes them.
	Accepted []string
	// Elapsed is from the first object created until every proxy had taken its update.
	Elapsed time.Duration
}

// ApplyVariant creates variant v's objects (variantObjects) in every namespace of t, in mode, and waits until the
// Envoy proxies it configures took a listener update after that and rejected none (a sample of the sidecars in mode
// sidecar; every waypoint pod when the policies attach to the waypoints): then istiod accepted the objects and pushed
// them. The objects carry the run's labels: RemoveVariant deletes them, and the run's cleanup finds any a crash left.
func (s *Switcher) ApplyVariant(ctx context.Context, t target.Target, mode scenario.Mode, v scenario.Variant, wp scenario.Waypoint) (VariantProof, error) {
	var proof VariantProof
	if err := scenario.RefuseProtected(t.Namespaces, s.Protected...); err != nil {
		return proof, err
	}
	if s.Clients == nil || s.Clients.Dynamic == nil {
		return proof, errors.New("apply the variant: no dynamic client")
	}
	proxies, err := s.variantProxies(ctx, t, mode, v, wp)
	if err != nil {
		return proof, err
	}
	before := s.proxyConfigProofs(ctx, proxies, len(proxies))
	start := s.now()
	for _, ns := range t.Namespaces {
		objs, err := variantObjects(s.RunID, ns, t.Namespaces, mode, v, wp)
		if err != nil {
			return proof, err
		}
		for _, o := range objs {
			u := o.u
			if _, err := s.Clients.Dynamic.Resource(o.gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
				return proof, fmt.Errorf("create %s %s/%s: %w", u.GetKind(), ns, variantObjectName, err)
			}
			proof.Objects++
		}
	}
	proof.Proxies, err = s.waitPushed(ctx, before, "the variant's configuration")
	proof.Elapsed = s.now().Sub(start)
	if err == nil && v.Authorization != nil && (mode == scenario.ModeAmbient || mode == scenario.ModeWaypoint) {
		proof.Accepted, err = s.waitPolicyStatus(ctx, t.Namespaces)
	}
	return proof, err
}

// policyStatusWait bounds the wait for istiod's status on a variant's AuthorizationPolicy in the ambient modes.
const policyStatusWait = 30 * time.Second

// waitPolicyStatus waits until istiod wrote, on the variant's AuthorizationPolicy of every namespace, whether ztunnel
// or the waypoint took it (policyAcceptance); a policy refused fails the variant. istiod of a version or
// configuration that writes no status leaves the proof without it, after policyStatusWait.
func (s *Switcher) waitPolicyStatus(ctx context.Context, namespaces []string) ([]string, error) {
	wctx, cancel := context.WithTimeout(ctx, policyStatusWait)
	defer cancel()
	// istiod writes the status once: a watch on each namespace's policy re-checks at its update.
	var watches []kube.WatchOpener
	for _, ns := range namespaces {
		watches = append(watches, func(ctx context.Context) (watch.Interface, error) {
			return s.Clients.Dynamic.Resource(authorizationPolicyGVR).Namespace(ns).Watch(ctx,
				metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", variantObjectName).String()})
		})
	}
	var accepted []string
	err := kube.Wait{Watches: watches}.Until(wctx, func(ctx context.Context) (bool, error) {
		accepted = accepted[:0]
		for _, ns := range namespaces {
			u, err := s.Clients.Dynamic.Resource(authorizationPolicyGVR).Namespace(ns).Get(ctx, variantObjectName, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("read AuthorizationPolicy %s/%s: %w", ns, variantObjectName, err)
			}
			a, ok := policyAcceptance(u.Object)
			if !ok {
				return false, nil
			}
			if !a.accepted {
				return false, fmt.Errorf("istiod did not accept AuthorizationPolicy %s/%s: %s %s: %s", ns, variantObjectName, a.kind, a.reason, a.message)
			}
			accepted = append(accepted, ns+": "+a.kind)
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil, nil // no status written: the proof goes without it
	}
	return accepted, err
}

// acceptance is istiod's verdict on a policy it bound to ztunnel or a waypoint.
type acceptance struct {
	kind, reason, message string
	accepted              bool
}

// policyAcceptance reads the condition istiod writes on an AuthorizationPolicy in the ambient modes: ZtunnelAccepted
// or WaypointAccepted (istio/istio 1.24.0 pilot/pkg/model/service.go ConditionType). ok is false when there is none.
// It is pure.
func policyAcceptance(obj map[string]any) (acceptance, bool) {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		kind, _ := m["type"].(string)
		if kind != "ZtunnelAccepted" && kind != "WaypointAccepted" {
			continue
		}
		st, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return acceptance{kind: kind, reason: reason, message: msg, accepted: st == "True"}, true
	}
	return acceptance{}, false
}

// variantProxies are the Envoy pods variant v configures in mode: a sample of the app's sidecars, or the waypoint
// pods when its policies attach to the waypoints; none when only ztunnel enforces it.
func (s *Switcher) variantProxies(ctx context.Context, t target.Target, mode scenario.Mode, v scenario.Variant, wp scenario.Waypoint) ([]*corev1.Pod, error) {
	var selector string
	var namespaces []string
	switch {
	case mode == scenario.ModeSidecar:
		selector, namespaces = t.AppSelector, t.Namespaces
	case mode == scenario.ModeWaypoint && v.EnvoyPolicies():
		for _, r := range Waypoints(t, wp) {
			namespaces = append(namespaces, r.Namespace)
		}
		selector = GatewayNameLabel + "=" + wp.Name
	default:
		return nil, nil
	}
	var pods []*corev1.Pod
	for _, ns := range namespaces {
		list, err := s.Clients.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("list the proxies the variant configures in %s: %w", ns, err)
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				pods = append(pods, p)
			}
		}
	}
	if mode == scenario.ModeSidecar {
		pods = sampleProxies(pods, s.proxySample())
	}
	return pods, nil
}

// variantPushTimeout bounds the wait for a variant's push: istiod pushes a policy to the proxies it selects within
// seconds (the time-to-enforce figures of docs/enforce.md are about one).
const variantPushTimeout = 2 * time.Minute

// waitPushed reads the proxies of before again until each took a listener update since (its LDS update_success
// grew) or variantPushTimeout: a proxy that rejected an update, or never took one, fails the change (what: the
// variant's configuration, or its removal).
func (s *Switcher) waitPushed(ctx context.Context, before []ProxyConfigProof, what string) ([]ProxyConfigProof, error) {
	for _, b := range before {
		if b.ReadError != "" {
			return before, fmt.Errorf("read the xDS counters of %s/%s before the change: %s", b.Namespace, b.Name, b.ReadError)
		}
	}
	pods := proofPods(before)
	if len(pods) == 0 {
		return nil, nil
	}
	timeout := min(s.timeout(), variantPushTimeout)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last []ProxyConfigProof
	// Envoy's counters have no watch: they are polled.
	err := kube.Wait{Interval: 500 * time.Millisecond}.Until(wctx, func(ctx context.Context) (bool, error) {
		last = s.proxyConfigProofs(ctx, pods, len(pods))
		if err := checkProxyConfig(last); err != nil {
			return false, err
		}
		return len(notPushed(before, last)) == 0, nil
	})
	if err != nil && errors.Is(err, kube.ErrWaitTimeout) || wctx.Err() != nil && ctx.Err() == nil {
		return last, fmt.Errorf("%s did not reach %s within %s (no listener update since): check istiod's log for the objects",
			what, strings.Join(notPushed(before, last), ", "), timeout)
	}
	return last, err
}

// notPushed names the proxies of now whose listener updates did not grow since before (or could not be read).
func notPushed(before, now []ProxyConfigProof) []string {
	var out []string
	for _, n := range now {
		i := slices.IndexFunc(before, func(b ProxyConfigProof) bool { return b.Namespace == n.Namespace && b.Name == n.Name })
		if n.ReadError != "" || i < 0 || n.Stats[LDSSuccess] <= before[i].Stats[LDSSuccess] {
			out = append(out, n.Namespace+"/"+n.Name)
		}
	}
	return out
}

// proofPods are the pods of proofs, as much of them as reading their counters again needs.
func proofPods(proofs []ProxyConfigProof) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(proofs))
	for i, b := range proofs {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name}, Spec: corev1.PodSpec{NodeName: b.Node}}
	}
	return pods
}

// RemoveVariant deletes every variant object from every namespace of t (one already gone is no error) and, when it
// deleted any, waits until the proxies that took the variant (proxies: ApplyVariant's proof) took a listener update
// since, so that the next case measures without it; a proxy that cannot be read any more (its pod gone) is not waited
// for.
func (s *Switcher) RemoveVariant(ctx context.Context, t target.Target, proxies []ProxyConfigProof) error {
	if s.Clients == nil || s.Clients.Dynamic == nil {
		return errors.New("remove the variant: no dynamic client")
	}
	pods := proofPods(proxies)
	before := slices.DeleteFunc(s.proxyConfigProofs(ctx, pods, len(pods)), func(p ProxyConfigProof) bool { return p.ReadError != "" })
	var errs []error
	deleted := 0
	for _, ns := range t.Namespaces {
		for _, gvr := range slices.Backward(variantGVRs) {
			err := s.Clients.Dynamic.Resource(gvr).Namespace(ns).Delete(ctx, variantObjectName, metav1.DeleteOptions{})
			switch {
			case err == nil:
				deleted++
			case !apierrors.IsNotFound(err):
				errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", gvr.Resource, ns, variantObjectName, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil || deleted == 0 {
		return err
	}
	_, err := s.waitPushed(ctx, before, "the variant's removal")
	return err
}

// CheckMTLS fails when a namespace's effective mTLS mode is not want (another namespace-wide PeerAuthentication,
// older than the variant's, decides: Istio applies the oldest).
func CheckMTLS(ms []MTLS, want scenario.MTLSMode) error {
	var bad []string
	for _, m := range ms {
		if m.Mode != string(want) {
			bad = append(bad, m.Namespace+": "+m.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the variant's PeerAuthentication %s is not in effect: %s", want, strings.Join(bad, "; "))
	}
	return nil
}
