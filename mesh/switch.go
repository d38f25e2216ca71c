package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Switcher puts an app's namespaces into a data-plane mode.
type Switcher struct {
	Clients *kube.Clients
	RunID   string
	Log     *slog.Logger
	// Record receives the original labels of namespaces meshbench did not create before they change. Without one,
	// Apply refuses to touch such namespaces.
	Record *LabelRecord
	// Revision, when set to a non-default Istio revision, makes sidecar mode label istio.io/rev=<Revision> instead
	// of istio-injection=enabled.
	Revision string
	// Timeout bounds each wait of Apply (waypoints ready, waypoint removal); default 10 minutes.
	Timeout time.Duration

	// Clock stamps the transition's steps and the restart annotation (nil = the wall clock); tests pass a fake.
	Clock clock.PassiveClock
	// Protected are the install's own namespaces (IstioInfo.OwnNamespaces: a custom root namespace): Apply never
	// labels or restarts them, nor any scenario.ProtectedNamespace, whatever the target says.
	Protected []string
	// ProxySample bounds how many proxies a verification reads Envoy's xDS counters of (ProxyConfig): 0 means
	// DefaultProxySample, a negative value none.
	ProxySample int
}

// DefaultProxySample is how many proxies a verification reads by default: one per workload first, so a rejection
// that an EnvoyFilter on one workload causes is seen, at a bounded cost on large apps.
const DefaultProxySample = 10

func (s *Switcher) proxySample() int {
	if s.ProxySample == 0 {
		return DefaultProxySample
	}
	return max(s.ProxySample, 0)
}

// Transition is what Apply did, in order, with times: the runner stores it with the case.
type Transition struct {
	// From is the mode the namespaces were in (inferred from their labels; "mixed" when they differ).
	From scenario.Mode `json:"from"`
	To   scenario.Mode `json:"to"`
	// Namespaces switched, in order.
	Namespaces []string `json:"namespaces"`
	// Steps in the order they ran.
	Steps []Step `json:"steps"`
	// Restarted workloads ("Deployment ns/name"), because their pods' sidecar did not match the mode. Apply does not
	// wait for their rollout: the caller does (the runner's wait-ready step, target.WaitReady).
	Restarted []string  `json:"restarted,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	// Warnings are what worked but leaves a caveat the case records (e.g. WarningInfrastructurePruned).
	Warnings []SwitchWarning `json:"warnings,omitempty"`
}

// SwitchWarningKind names a caveat of a mode switch.
type SwitchWarningKind string

// WarningInfrastructurePruned: a waypoint Gateway came back from the API server without spec.infrastructure.labels
// (Gateway API CRDs of the standard channel before v1.2.0 do not know the field and prune it), so istiod copies all
// the Gateway's labels, the run labels among them, onto the objects it creates for the waypoint
// (WaypointRunLabel). The case records it as results.FactWaypointLabelsCopied.
const WarningInfrastructurePruned SwitchWarningKind = "waypoint-infrastructure-pruned"

// SwitchWarning is one caveat of a mode switch: its kind, the object, and what it means.
type SwitchWarning struct {
	Kind   SwitchWarningKind `json:"kind"`
	Object string            `json:"object"` // e.g. "Gateway mb-app/waypoint"
	Detail string            `json:"detail"`
}

// infrastructureKept reports whether a waypoint Gateway as the API server stored it kept the run label meshbench
// sets in spec.infrastructure.labels.
func infrastructureKept(gw *gwv1.Gateway) bool {
	return gw != nil && gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.Labels[WaypointRunLabel] != ""
}

// Step is one operation of a transition.
type Step struct {
	// Name is one of: waypoint-create, waypoint-ready, label, unlabel, restart, waypoint-delete.
	Name   string    `json:"name"`
	Detail string    `json:"detail,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
}

// Elapsed is the step's duration.
func (s Step) Elapsed() time.Duration { return s.End.Sub(s.Start) }

// MarshalJSON adds the elapsed time as a duration string.
func (s Step) MarshalJSON() ([]byte, error) {
	type plain Step
	return json.Marshal(struct {
		plain
		Elapsed string `json:"elapsed"`
	}{plain(s), s.Elapsed().String()})
}

// Timings renders the transition for results.CaseResult.Timings: each step's duration (steps of one name summed),
// "mode-switch" for the whole Apply and, given the Verification that followed, "label-to-verified".
func (t Transition) Timings(v *Verification) map[string]string {
	sum := map[string]time.Duration{}
	for _, s := range t.Steps {
		sum[s.Name] += s.Elapsed()
	}
	out := map[string]string{"mode-switch": t.End.Sub(t.Start).Round(time.Millisecond).String()}
	for k, d := range sum {
		out[k] = d.Round(time.Millisecond).String()
	}
	if v != nil && !v.End.IsZero() {
		for _, s := range t.Steps {
			if s.Name == "label" || s.Name == "unlabel" {
				out["label-to-verified"] = v.End.Sub(s.Start).Round(time.Millisecond).String()
				break
			}
		}
	}
	return out
}

// ModeMixed is Transition.From when the namespaces were in different modes.
const ModeMixed scenario.Mode = "mixed"

func (s *Switcher) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (s *Switcher) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

func (s *Switcher) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 10 * time.Minute
}

// step runs fn as a named step of tr.
func (s *Switcher) step(tr *Transition, name, detail string, fn func() error) error {
	st := Step{Name: name, Detail: detail, Start: s.now()}
	err := fn()
	st.End = s.now()
	tr.Steps = append(tr.Steps, st)
	s.log().Debug("mode switch step", "to", tr.To, "step", name, "detail", detail, "elapsed", st.Elapsed().Round(time.Millisecond), "err", err)
	return err
}

// Apply switches the target's namespaces to mode in the safe order:
//
//  1. waypoint mode: create the waypoint Gateway(s) and wait until each is Programmed=True AND its Deployment is
//     available, before anything is labelled to use them;
//  2. label: set the new mode's namespace labels (the new data plane is enabled before the old one is removed);
//  3. unlabel: remove the other modes' labels;
//  4. restart the Deployments and StatefulSets whose pods' sidecar does not match the mode (sidecar <-> anything:
//     injection happens only at pod creation);
//  5. leaving waypoint mode: delete this run's waypoints, now that no namespace label points at them, and wait
//     until their pods are gone.
//
// Apply does not wait for the restarted workloads to roll out (Transition.Restarted names them): waiting for the
// app is the caller's one step (the runner's wait-ready, target.WaitReady), and Verify checks every pod afterwards.
// Nor does it wait for ambient capture, which istio-cni does asynchronously: Verify does.
//
// Namespaces that do not exist yet are created (labelled with the run), so Apply may run before the app is deployed:
// pods are then created in the right mode and nothing restarts.
func (s *Switcher) Apply(ctx context.Context, t target.Target, mode scenario.Mode, wp scenario.Waypoint) (tr Transition, err error) {
	tr = Transition{To: mode, Namespaces: append([]string(nil), t.Namespaces...), Start: s.now()}
	defer func() { tr.End = s.now() }() // named result: the caller sees End
	if s.Clients == nil {
		return tr, errors.New("switch mode: no Kubernetes clients")
	}
	if !validMode(mode) {
		return tr, fmt.Errorf("switch mode: unknown mode %q: use one of %v", mode, scenario.AllModes)
	}
	// The deployer refuses these already; this is the last guard before a label changes (defence in depth).
	if err := scenario.RefuseProtected(t.Namespaces, s.Protected...); err != nil {
		return tr, fmt.Errorf("switch mode: %w", err)
	}
	nss, err := s.namespaces(ctx, t.Namespaces)
	if err != nil {
		return tr, err
	}
	tr.From = fromMode(nss)
	if err := s.checkForeign(nss); err != nil {
		return tr, err
	}

	wanted := map[WaypointRef]bool{}
	if mode == scenario.ModeWaypoint {
		refs := Waypoints(t, wp)
		for _, r := range refs {
			wanted[r] = true
		}
		if err := s.step(&tr, "waypoint-create", refsString(refs), func() error {
			warns, err := s.ensureWaypoints(ctx, t, wp)
			tr.Warnings = append(tr.Warnings, warns...)
			return err
		}); err != nil {
			return tr, err
		}
		if err := s.step(&tr, "waypoint-ready", refsString(refs), func() error { return s.waitWaypoints(ctx, refs) }); err != nil {
			return tr, err
		}
	}

	sets, removes := map[string]map[string]*string{}, map[string]map[string]*string{}
	for _, ns := range t.Namespaces {
		for k, v := range LabelChanges(mode, t, ns, wp, s.Revision, nss[ns].Labels) {
			if v != nil {
				addTo(sets, ns, k, v)
			} else {
				addTo(removes, ns, k, nil)
			}
		}
	}
	if len(sets) > 0 {
		if err := s.step(&tr, "label", patchesString(t.Namespaces, sets), func() error { return s.patchLabels(ctx, t.Namespaces, nss, sets) }); err != nil {
			return tr, err
		}
	}
	if len(removes) > 0 {
		if err := s.step(&tr, "unlabel", patchesString(t.Namespaces, removes), func() error { return s.patchLabels(ctx, t.Namespaces, nss, removes) }); err != nil {
			return tr, err
		}
	}

	var restarted []target.WorkloadRef
	err = s.step(&tr, "restart", "workloads whose pods' sidecar does not match the mode", func() error {
		var err error
		restarted, err = s.restartMismatched(ctx, t, mode)
		return err
	})
	for _, w := range restarted {
		tr.Restarted = append(tr.Restarted, w.String())
	}
	if n := len(tr.Steps); n > 0 && tr.Steps[n-1].Name == "restart" {
		tr.Steps[n-1].Detail = strings.Join(tr.Restarted, ", ")
		if len(restarted) == 0 && err == nil {
			tr.Steps = tr.Steps[:n-1] // nothing restarted: not a step
		}
	}
	if err != nil {
		return tr, err
	}

	stale, err := s.staleWaypoints(ctx, t, wanted)
	if err != nil {
		return tr, err
	}
	if len(stale) > 0 {
		if err := s.step(&tr, "waypoint-delete", refsString(stale), func() error { return s.deleteWaypoints(ctx, stale) }); err != nil {
			return tr, err
		}
	}
	s.log().Info("mode applied", "from", tr.From, "to", mode, "namespaces", t.Namespaces, "restarted", len(restarted),
		"elapsed", s.now().Sub(tr.Start).Round(time.Millisecond))
	return tr, nil
}

// LabelChanges is what Apply changes on namespace ns of t, whose labels are cur, to put it in mode: each label to
// set (its value) or remove (nil); empty when the namespace already is in mode. Pure: preflight shows it for app
// existing before anything changes.
func LabelChanges(mode scenario.Mode, t target.Target, ns string, wp scenario.Waypoint, revision string, cur map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range NamespaceLabels(mode, ns, wp, waypointNamespaceFor(t, wp, ns), revision) {
		switch {
		case v != nil && cur[k] != *v:
			out[k] = v
		case v == nil && hasKey(cur, k):
			out[k] = nil
		}
	}
	return out
}

// PodHasSidecar reports whether pod p runs (or is starting) an injected sidecar: what restartMismatched compares
// with UsesSidecar of the mode to decide a restart.
func PodHasSidecar(p corev1.Pod) bool {
	o := Prove(scenario.ModeSidecar, p).Observed
	return o == ObservedSidecar || o == ObservedSidecarNotReady
}

// Restore puts back the labels recorded for namespaces meshbench did not create, then the restart annotations
// recorded for workloads it did not create (LabelRecord.RestoreAll: labels first, so the rollout the annotation
// triggers brings the pods back in their original mode). It returns the namespaces restored. The runner calls it
// at the end of a run, after a failure and after Ctrl-C (its finalizer); `meshbench cleanup` restores from the file.
func (s *Switcher) Restore(ctx context.Context) ([]string, error) {
	if s.Record == nil {
		return nil, nil
	}
	res, err := s.Record.RestoreAll(ctx, s.Clients.Kube)
	if len(res.Namespaces) > 0 || len(res.Workloads) > 0 {
		s.log().Info("restored what meshbench changed", "namespaces", res.Namespaces, "workloads", res.Workloads)
	}
	for _, n := range res.Notes {
		s.log().Warn("restore", "note", n)
	}
	return res.Namespaces, err
}

func validMode(m scenario.Mode) bool {
	for _, v := range scenario.AllModes {
		if v == m {
			return true
		}
	}
	return false
}

// namespaces reads the target's namespaces, creating missing ones with the run's labels.
func (s *Switcher) namespaces(ctx context.Context, names []string) (map[string]*corev1.Namespace, error) {
	out := map[string]*corev1.Namespace{}
	for _, n := range names {
		ns, err := s.Clients.Kube.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			ns, err = s.Clients.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: n, Labels: kube.RunLabels(s.RunID)},
			}, metav1.CreateOptions{FieldManager: FieldManager})
		}
		if err != nil {
			return nil, fmt.Errorf("switch mode: namespace %s: %w", n, err)
		}
		if ns.DeletionTimestamp != nil {
			return nil, fmt.Errorf("switch mode: namespace %s is being deleted", n)
		}
		out[n] = ns
	}
	return out, nil
}

func (s *Switcher) checkForeign(nss map[string]*corev1.Namespace) error {
	if s.Record != nil {
		return nil
	}
	var foreign []string
	for n, ns := range nss {
		if !target.IsManaged(ns) {
			foreign = append(foreign, n)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	sort.Strings(foreign)
	return fmt.Errorf("switch mode: namespaces %v were not created by meshbench and no label record is configured to restore their labels", foreign)
}

func fromMode(nss map[string]*corev1.Namespace) scenario.Mode {
	var from scenario.Mode
	for _, n := range sortedKeys(nss) {
		m := ModeOfLabels(nss[n].Labels)
		if from == "" {
			from = m
		} else if from != m {
			return ModeMixed
		}
	}
	return from
}

// patchLabels applies label patches namespace by namespace, in target order, recording foreign namespaces first.
func (s *Switcher) patchLabels(ctx context.Context, order []string, nss map[string]*corev1.Namespace, patches map[string]map[string]*string) error {
	for _, n := range order {
		p, ok := patches[n]
		if !ok {
			continue
		}
		if !target.IsManaged(nss[n]) {
			if err := s.Record.Remember(n, nss[n].Labels, sortedKeys(p)); err != nil {
				return fmt.Errorf("record labels of namespace %s before changing them: %w", n, err)
			}
		}
		body, err := labelPatch(p)
		if err != nil {
			return err
		}
		ns, err := s.Clients.Kube.CoreV1().Namespaces().Patch(ctx, n, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("label namespace %s: %w", n, err)
		}
		nss[n] = ns
	}
	return nil
}

// Reconcile restarts, once the target's workloads are ready after Apply, every workload that still has a pod whose
// sidecar presence differs from what mode needs: a pod created in the moment Apply relabelled its namespace was
// admitted by the API server's cached view of the old labels (a fresh app's first sidecar case met one without its
// sidecar on the local cluster). The caller waits for the restarted workloads to roll out.
func (s *Switcher) Reconcile(ctx context.Context, t target.Target, mode scenario.Mode) ([]target.WorkloadRef, error) {
	restarted, err := s.restartMismatched(ctx, t, mode)
	if len(restarted) > 0 {
		s.log().Info("mode reconciled", "mode", mode, "restarted", len(restarted), "workloads", restarted)
	}
	return restarted, err
}

// restartMismatched rollout-restarts every workload with a pod whose sidecar presence differs from what mode needs.
// The pods are listed once per namespace (all of them: a workload of app existing selects by its own selector, not
// the app's) and matched to each workload's selector here, so the requests grow with namespaces, not workloads.
func (s *Switcher) restartMismatched(ctx context.Context, t target.Target, mode scenario.Mode) ([]target.WorkloadRef, error) {
	wantSidecar := UsesSidecar(mode)
	var out []target.WorkloadRef
	stamp := s.now().UTC().Format(time.RFC3339Nano)
	podsIn := map[string][]corev1.Pod{}
	for _, w := range t.Workloads {
		sel, err := t.PodSelector(w)
		if err != nil {
			return out, fmt.Errorf("select the pods of %s (app selector %q): %w", w, t.AppSelector, err)
		}
		pods, listed := podsIn[w.Namespace]
		if !listed {
			l, err := s.Clients.Kube.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return out, fmt.Errorf("list pods of %s: %w", w, err)
			}
			pods = l.Items
			podsIn[w.Namespace] = pods
		}
		mismatch := false
		for _, p := range pods {
			if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if PodHasSidecar(p) != wantSidecar {
				mismatch = true
				break
			}
		}
		if !mismatch {
			continue
		}
		if err := s.rememberWorkload(ctx, w); err != nil {
			return out, err
		}
		body := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, restartAnnotation, stamp)
		opts := metav1.PatchOptions{FieldManager: FieldManager}
		switch w.Kind {
		case target.KindDeployment:
			_, err = s.Clients.Kube.AppsV1().Deployments(w.Namespace).Patch(ctx, w.Name, types.StrategicMergePatchType, body, opts)
		case target.KindStatefulSet:
			_, err = s.Clients.Kube.AppsV1().StatefulSets(w.Namespace).Patch(ctx, w.Name, types.StrategicMergePatchType, body, opts)
		default:
			err = fmt.Errorf("unknown workload kind %q", w.Kind)
		}
		if err != nil {
			return out, fmt.Errorf("restart %s: %w", w, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// rememberWorkload records, before the restart patch, the original restart annotation of a workload meshbench did
// not create (app existing: the user's Deployments and StatefulSets lack kube.ManagedByLabel), so that the record
// can put it back: the record keeps the first value, so the value before meshbench's first restart survives later
// restarts. The catalog apps' workloads carry meshbench's labels and go away with the run: nothing is recorded.
func (s *Switcher) rememberWorkload(ctx context.Context, w target.WorkloadRef) error {
	var (
		labels, annotations map[string]string
		err                 error
	)
	switch w.Kind {
	case target.KindDeployment:
		var d *appsv1.Deployment
		if d, err = s.Clients.Kube.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			labels, annotations = d.Labels, d.Spec.Template.Annotations
		}
	case target.KindStatefulSet:
		var st *appsv1.StatefulSet
		if st, err = s.Clients.Kube.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			labels, annotations = st.Labels, st.Spec.Template.Annotations
		}
	default:
		return fmt.Errorf("restart %s: unknown workload kind %q", w, w.Kind)
	}
	if err != nil {
		return fmt.Errorf("restart %s: read its pod template: %w", w, err)
	}
	if labels[kube.ManagedByLabel] == kube.ManagedByValue {
		return nil
	}
	if s.Record == nil {
		return fmt.Errorf("restart %s: it was not created by meshbench and no record is configured to restore its pod template", w)
	}
	if err := s.Record.RememberWorkload(w.Kind, w.Namespace, w.Name, annotations, []string{restartAnnotation}); err != nil {
		return fmt.Errorf("record the pod template of %s before restarting it: %w", w, err)
	}
	return nil
}

// ensureWaypoints creates (or updates) the waypoint Gateways of the target. The API server answers a create or a
// patch with the object as it stored it, after pruning the fields its CRD does not know: a Gateway that came back
// without meshbench's spec.infrastructure.labels is returned as a WarningInfrastructurePruned.
func (s *Switcher) ensureWaypoints(ctx context.Context, t target.Target, wp scenario.Waypoint) ([]SwitchWarning, error) {
	gc := s.Clients.Gateway
	if gc == nil {
		return nil, errors.New("create waypoint: no Gateway API client")
	}
	if err := s.checkGatewayAPI(); err != nil {
		return nil, fmt.Errorf("create waypoint: %w", err)
	}
	var warns []SwitchWarning
	for _, gw := range WaypointGateways(t, wp, s.RunID, s.Revision) {
		cur, err := gc.GatewayV1().Gateways(gw.Namespace).Get(ctx, gw.Name, metav1.GetOptions{})
		var stored *gwv1.Gateway
		switch {
		case apierrors.IsNotFound(err):
			stored, err = gc.GatewayV1().Gateways(gw.Namespace).Create(ctx, gw, metav1.CreateOptions{FieldManager: FieldManager})
		case err == nil:
			if cur.Labels[kube.RunLabel] == "" && cur.Labels[kube.ManagedByLabel] != kube.ManagedByValue {
				return warns, fmt.Errorf("create waypoint %s/%s: a Gateway of that name exists and was not created by meshbench; set spec.waypoint.name to another name", gw.Namespace, gw.Name)
			}
			// Merge patch (RBAC: patch, as for every other object meshbench changes): our labels and the whole spec.
			var body []byte
			body, err = json.Marshal(map[string]any{"metadata": map[string]any{"labels": gw.Labels}, "spec": gw.Spec})
			if err == nil {
				stored, err = gc.GatewayV1().Gateways(gw.Namespace).Patch(ctx, gw.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
			}
		}
		if err != nil {
			return warns, fmt.Errorf("create waypoint %s/%s: %w", gw.Namespace, gw.Name, err)
		}
		if !infrastructureKept(stored) {
			w := SwitchWarning{Kind: WarningInfrastructurePruned, Object: "Gateway " + gw.Namespace + "/" + gw.Name,
				Detail: "the API server dropped spec.infrastructure (Gateway API CRDs of the standard channel before v1.2.0): istiod copies all the " +
					"Gateway's labels, the run labels among them, onto the waypoint's Deployment, pods, Service and ServiceAccount; install the " +
					"standard-channel CRDs v1.2.0 or later"}
			s.log().Warn("waypoint Gateway stored without spec.infrastructure", "gateway", gw.Namespace+"/"+gw.Name, "detail", w.Detail)
			warns = append(warns, w)
		}
	}
	return warns, nil
}

// ErrNoGatewayAPI means the cluster does not serve gateway.networking.k8s.io/v1 Gateways (no Gateway API CRDs):
// waypoint mode cannot run.
var ErrNoGatewayAPI = errors.New("the cluster does not serve gateway.networking.k8s.io/v1 Gateways: install the Gateway API CRDs (standard channel)")

// checkGatewayAPI asks API discovery, through the clients' REST mapper, whether the cluster serves
// gateway.networking.k8s.io/v1 Gateways. It is a typed answer (meta.IsNoMatchError) where a Gateway call would only
// fail with a 404 that reads like a missing object. The error wraps ErrNoGatewayAPI and the mapper's
// *meta.NoKindMatchError when the kind is not served. Without a mapper (clients built by hand) it returns nil and the
// Gateway calls themselves fail.
func (s *Switcher) checkGatewayAPI() error {
	if s.Clients.Mapper == nil {
		return nil
	}
	_, err := s.Clients.Mapper.RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: "Gateway"}, gwv1.GroupVersion.Version)
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err):
		return fmt.Errorf("%w (%w)", ErrNoGatewayAPI, err)
	default:
		return fmt.Errorf("discover the Gateway API: %w", err)
	}
}

// waitWaypoints waits, watching Gateways and Deployments, until every waypoint is ready.
func (s *Switcher) waitWaypoints(ctx context.Context, refs []WaypointRef) error {
	var watches []kube.WatchOpener
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.Namespace] {
			continue
		}
		seen[r.Namespace] = true
		ns := r.Namespace
		watches = append(watches,
			func(ctx context.Context) (watch.Interface, error) {
				return s.Clients.Gateway.GatewayV1().Gateways(ns).Watch(ctx, metav1.ListOptions{})
			},
			func(ctx context.Context) (watch.Interface, error) {
				return s.Clients.Kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
			})
	}
	var proofs []WaypointProof
	err := kube.WaitFor(ctx, s.timeout(), watches, func(ctx context.Context) (bool, error) {
		proofs = proofs[:0]
		ready := true
		for _, r := range refs {
			p, err := checkWaypoint(ctx, s.Clients.Kube, s.Clients.Gateway, r)
			if err != nil {
				return false, err
			}
			proofs = append(proofs, p)
			ready = ready && p.Ready
		}
		return ready, nil
	})
	if errors.Is(err, kube.ErrWaitTimeout) {
		var lines []string
		for _, p := range proofs {
			if !p.Ready {
				lines = append(lines, fmt.Sprintf("waypoint %s/%s: %s", p.Namespace, p.Name, p.Problem))
			}
		}
		return fmt.Errorf("waypoint not ready after %s (nothing was labelled to use it):\n  %s", s.timeout(), strings.Join(lines, "\n  "))
	}
	return err
}

// staleWaypoints lists this run's waypoint Gateways in the target's namespaces that the mode does not want.
func (s *Switcher) staleWaypoints(ctx context.Context, t target.Target, wanted map[WaypointRef]bool) ([]WaypointRef, error) {
	if s.Clients.Gateway == nil {
		return nil, nil
	}
	if err := s.checkGatewayAPI(); errors.Is(err, ErrNoGatewayAPI) {
		return nil, nil // no Gateway API in the cluster: nothing to delete
	} else if err != nil {
		return nil, fmt.Errorf("list waypoints: %w", err)
	}
	var out []WaypointRef
	sel := kube.RunSelector(s.RunID)
	for _, ns := range t.Namespaces {
		list, err := s.Clients.Gateway.GatewayV1().Gateways(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if apierrors.IsNotFound(err) {
			return nil, nil // a list is never "not found" unless the resource is not served: no Gateway API, nothing to delete
		}
		if err != nil {
			return nil, fmt.Errorf("list waypoints in %s: %w", ns, err)
		}
		for _, gw := range list.Items {
			r := WaypointRef{Namespace: gw.Namespace, Name: gw.Name}
			if string(gw.Spec.GatewayClassName) == WaypointClass && !wanted[r] && gw.DeletionTimestamp == nil {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// deleteWaypoints deletes waypoint Gateways and waits until istiod's Deployments for them are gone, so their pods
// do not run into the next measurement.
func (s *Switcher) deleteWaypoints(ctx context.Context, refs []WaypointRef) error {
	fg := metav1.DeletePropagationForeground
	for _, r := range refs {
		err := s.Clients.Gateway.GatewayV1().Gateways(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete waypoint %s: %w", r, err)
		}
	}
	kc := s.Clients.Kube
	var watches []kube.WatchOpener
	for _, r := range refs {
		ns := r.Namespace
		watches = append(watches, func(ctx context.Context) (watch.Interface, error) {
			return kc.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel})
		})
	}
	var left []string
	err := kube.WaitFor(ctx, s.timeout(), watches, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, r := range refs {
			if _, err := s.Clients.Gateway.GatewayV1().Gateways(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil {
				left = append(left, "Gateway "+r.String())
			}
			pods, err := kc.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel + "=" + r.Name})
			if err != nil {
				return false, fmt.Errorf("list waypoint pods of %s: %w", r, err)
			}
			for _, p := range pods.Items {
				left = append(left, "pod "+p.Namespace+"/"+p.Name)
			}
		}
		return len(left) == 0, nil
	})
	if errors.Is(err, kube.ErrWaitTimeout) {
		return fmt.Errorf("waypoint removal not finished after %s: %s still present", s.timeout(), strings.Join(left, ", "))
	}
	return err
}

func refsString(refs []WaypointRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// patchesString renders label patches deterministically: "ns-a: istio-injection=enabled, istio.io/rev-".
func patchesString(order []string, patches map[string]map[string]*string) string {
	var parts []string
	for _, ns := range order {
		p, ok := patches[ns]
		if !ok {
			continue
		}
		var kv []string
		for _, k := range sortedKeys(p) {
			if p[k] == nil {
				kv = append(kv, k+"-")
			} else {
				kv = append(kv, k+"="+*p[k])
			}
		}
		parts = append(parts, ns+": "+strings.Join(kv, " "))
	}
	return strings.Join(parts, "; ")
}

func addTo(m map[string]map[string]*string, ns, k string, v *string) {
	if m[ns] == nil {
		m[ns] = map[string]*string{}
	}
	m[ns][k] = v
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
