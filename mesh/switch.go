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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// defaultProxySample, a negative value none.
	ProxySample int
}

// defaultProxySample is how many proxies a verification reads by default: one per workload first, so a rejection
// that an EnvoyFilter on one workload causes is seen, at a bounded cost on large apps.
const defaultProxySample = 10

func (s *Switcher) proxySample() int {
	if s.ProxySample == 0 {
		return defaultProxySample
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
	// wait for their rollout: the caller does (the runner's wait-ready step, target.waitReady).
	Restarted []string  `json:"restarted,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	// Warnings are what worked but leaves a caveat the case records (e.g. WarningInfrastructurePruned).
	Warnings []SwitchWarning `json:"warnings,omitempty"`
}

// switchWarningKind names a caveat of a mode switch.
type switchWarningKind string

// WarningInfrastructurePruned: a waypoint Gateway came back without spec.infrastructure.labels (CRDs before Gateway
// API v1.2.0 prune it), so istiod copies all its labels, run labels included, onto the waypoint's objects. The case
// records it as results.FactWaypointLabelsCopied.
const WarningInfrastructurePruned switchWarningKind = "waypoint-infrastructure-pruned"

// SwitchWarning is one caveat of a mode switch: its kind, the object, and what it means.
type SwitchWarning struct {
	Kind   switchWarningKind `json:"kind"`
	Object string            `json:"object"` // e.g. "Gateway mb-app/waypoint"
	Detail string            `json:"detail"`
}

// infrastructureKept reports whether a waypoint Gateway as the API server stored it kept the run label meshbench
// sets in spec.infrastructure.labels.
func infrastructureKept(gw *gwv1.Gateway) bool {
	return gw != nil && gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.Labels[waypointRunLabel] != ""
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

// Apply switches the target's namespaces to mode in the safe order (waypoints ready, new labels on, old off, restart
// what changes sidecar involvement, delete unused waypoints: docs/modes.md), creating missing namespaces. It waits
// neither for rollouts (Transition.Restarted; the caller waits, then Verify) nor for ambient capture.
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

	wanted, err := s.applyWaypoints(ctx, &tr, t, mode, wp)
	if err != nil {
		return tr, err
	}
	if err := s.applyLabels(ctx, &tr, t, mode, wp, nss); err != nil {
		return tr, err
	}
	restarted, err := s.applyRestarts(ctx, &tr, t, mode)
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

// applyWaypoints is Apply's step 1: in waypoint mode, the waypoints t needs, created and ready. It returns them (none
// in another mode), so the last step deletes only the others.
func (s *Switcher) applyWaypoints(ctx context.Context, tr *Transition, t target.Target, mode scenario.Mode, wp scenario.Waypoint) (map[WaypointRef]bool, error) {
	wanted := map[WaypointRef]bool{}
	if mode != scenario.ModeWaypoint {
		return wanted, nil
	}
	refs := Waypoints(t, wp)
	for _, r := range refs {
		wanted[r] = true
	}
	if err := s.step(tr, "waypoint-create", refsString(refs), func() error {
		warns, err := s.ensureWaypoints(ctx, t, wp)
		tr.Warnings = append(tr.Warnings, warns...)
		return err
	}); err != nil {
		return wanted, err
	}
	return wanted, s.step(tr, "waypoint-ready", refsString(refs), func() error { return s.waitWaypoints(ctx, refs) })
}

// applyLabels is Apply's steps 2 and 3: the new mode's labels set first, then the other modes' removed, each a step
// only when it changes something.
func (s *Switcher) applyLabels(ctx context.Context, tr *Transition, t target.Target, mode scenario.Mode, wp scenario.Waypoint, nss map[string]*corev1.Namespace) error {
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
		if err := s.step(tr, "label", patchesString(t.Namespaces, sets), func() error { return s.patchLabels(ctx, t.Namespaces, nss, sets) }); err != nil {
			return err
		}
	}
	if len(removes) > 0 {
		return s.step(tr, "unlabel", patchesString(t.Namespaces, removes), func() error { return s.patchLabels(ctx, t.Namespaces, nss, removes) })
	}
	return nil
}

// applyRestarts is Apply's step 4: it restarts the workloads whose pods' sidecar does not match mode and names them
// in tr.Restarted; the step is recorded only when something restarted or it failed.
func (s *Switcher) applyRestarts(ctx context.Context, tr *Transition, t target.Target, mode scenario.Mode) ([]target.WorkloadRef, error) {
	var restarted []target.WorkloadRef
	err := s.step(tr, "restart", "workloads whose pods' sidecar does not match the mode", func() error {
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
	return restarted, err
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
	o := prove(scenario.ModeSidecar, p).Observed
	return o == observedSidecar || o == observedSidecarNotReady
}

// Restore restores what the record holds (LabelRecord.RestoreAll: labels, then annotations) and returns the
// namespaces restored; the runner's finalizer calls it, also after a failure or Ctrl-C.
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
		m := modeOfLabels(nss[n].Labels)
		if from == "" {
			from = m
		} else if from != m {
			return scenario.ModeMixed
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
			if err := s.Record.remember(n, nss[n].Labels, sortedKeys(p)); err != nil {
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
