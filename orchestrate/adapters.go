package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// The runner takes the wait-ready, reconcile, path proof and load-clients steps only from adapters that implement
// them: these must.
var (
	_ runner.ReadyWaiter     = (*workloadsAdapter)(nil)
	_ runner.Reconciler      = (*meshAdapter)(nil)
	_ runner.AppRestarter    = (*meshAdapter)(nil)
	_ runner.PolicyEnforcer  = (*meshAdapter)(nil)
	_ runner.StartupReporter = (*workloadsAdapter)(nil)
	_ runner.PathProver      = (*meshAdapter)(nil)
	_ runner.LoadClients     = (*loadAdapter)(nil)
)

// workloadsAdapter is workloads.Deployer as the runner's Workloads.
type workloadsAdapter struct {
	d       *workloads.Deployer
	s       *scenario.Scenario
	timeout time.Duration
	// cache, when set, keeps the readiness wait's informer cache for the verification that follows (meshAdapter).
	cache *appCache
	// started is how the pods of the last successful readiness wait started (runner.StartupReporter).
	started []results.PodStartup
}

// appCache hands the informer cache of a case's readiness wait to the mode verification that follows, so it starts
// synced instead of listing and watching again (target.Cache). The wait opens it; the verification, a failed wait,
// the next wait or teardown stop it: informers never run through a measured window.
type appCache struct {
	kc kubernetes.Interface
	mu sync.Mutex
	c  *target.Cache
}

// open stops the cache held (if any) and starts a new one for t, running until ctx ends or it is stopped.
func (a *appCache) open(ctx context.Context, t target.Target) *target.Cache {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c != nil {
		a.c.Stop()
	}
	a.c = target.NewCache(a.kc, t)
	a.c.Start(ctx)
	return a.c
}

// take hands over the cache held when it is t's (the caller stops it), else nil; the cache is no longer held.
func (a *appCache) take(t target.Target) *target.Cache {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.c
	a.c = nil
	if c != nil && !sameApp(c.Target(), t) {
		c.Stop()
		return nil
	}
	return c
}

// close stops the cache held, if any.
func (a *appCache) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c != nil {
		a.c.Stop()
		a.c = nil
	}
}

// sameApp reports whether a and b are one deployed app as a cache sees it: the same namespaces, pod selector and
// workloads.
func sameApp(a, b target.Target) bool {
	return a.Topology == b.Topology && a.AppSelector == b.AppSelector && slices.Equal(a.Namespaces, b.Namespaces) &&
		slices.Equal(a.Workloads, b.Workloads)
}

func (a *workloadsAdapter) Ensure(ctx context.Context, topo scenario.Topology) (target.Target, error) {
	t, err := a.d.Ensure(ctx, a.s, topo)
	if err != nil {
		return target.Target{}, err
	}
	t.Facts = targetFacts(a.s.Spec.Workload, topo, t)
	return t, nil
}

// targetFacts are the case facts of a deployed app (capacity reads app-pods and chain-depth).
func targetFacts(w scenario.Workload, topo scenario.Topology, t target.Target) map[results.FactKey]string {
	facts := map[results.FactKey]string{
		results.FactApp: string(t.App), results.FactNamespaces: strings.Join(t.Namespaces, ","), results.FactServices: strconv.Itoa(len(t.Services)),
		results.FactReplicas: strconv.Itoa(topo.Replicas), results.FactAppPods: strconv.Itoa(t.ExpectedPods()), results.FactEntryURL: t.EntryURL,
	}
	if ch := w.ChainFor(topo); ch != nil && w.App == scenario.AppFortioChain {
		// The hops below the entry, which capacity.BuildHops fits latency against.
		facts[results.FactChainDepth] = strconv.Itoa(ch.Depth)
	}
	return facts
}

func (a *workloadsAdapter) WaitReady(ctx context.Context, t target.Target) error {
	a.started = nil
	if a.cache == nil {
		return a.d.WaitReady(ctx, t, a.timeout)
	}
	c := a.cache.open(ctx, t)
	if err := a.d.WaitReadyIn(ctx, c, a.timeout); err != nil {
		a.cache.close() // no verification follows a failed wait
		return err
	}
	for _, ns := range t.Namespaces {
		for _, p := range c.AppPods(ns) {
			if p.DeletionTimestamp == nil { // a replaced pod still terminating did not start in this mode
				a.started = append(a.started, mesh.PodStartup(p))
			}
		}
	}
	return nil
}

// PodStartups is how the pods of the last successful WaitReady started (runner.StartupReporter).
func (a *workloadsAdapter) PodStartups() []results.PodStartup { return a.started }

func (a *workloadsAdapter) Teardown(ctx context.Context, t target.Target) error {
	if a.cache != nil {
		a.cache.close()
	}
	return a.d.Teardown(ctx, t)
}

// meshAdapter is mesh.Switcher as the runner's Mesh.
type meshAdapter struct {
	sw *mesh.Switcher
	// cache, when set, is where the readiness wait left its informer cache (workloadsAdapter): Verify reads it.
	cache   *appCache
	wp      scenario.Waypoint
	timeout time.Duration
	// spec is the scenario's: ApplyVariant finds a case's variant in it by name.
	spec scenario.Spec
	last mesh.Transition
	// lastTimed is set once a verification recorded last's timings.
	lastTimed bool
	// seen is the least representative data-plane kind each component showed in the cases verified so far.
	seen   map[string]results.DataPlaneKind
	rootNS string // mesh config rootNamespace (mesh-wide PeerAuthentication)
	// revision and istioVersion are the chosen istiod's (IstioInfo.Revision, .Version): whose PeerAuthentications
	// count for the mTLS fact.
	revision, istioVersion string
	// variantProxies are the proxies the last variant reached (its proof): its removal waits for them.
	variantProxies []mesh.ProxyConfigProof
	// probe sends one request from a load client (an L7 variant's deny probe, a tracing variant's forced trace); nil:
	// no probe.
	probe probeFunc
	// sink and meshConfig serve tracing variants (the span sink, istiod's provider for it); tracing is the variant's
	// tracing while one is in force.
	sink       spanSink
	meshConfig meshConfigEditor
	tracing    *scenario.Tracing
	// clk times the tracing proofs (nil = the wall clock); proofWait bounds the wait for a forced trace (0 =
	// tracingProofWait).
	clk       clock.Clock
	proofWait time.Duration
}

func (a *meshAdapter) clock() clock.Clock {
	if a.clk == nil {
		return clock.RealClock{}
	}
	return a.clk
}

func (a *meshAdapter) Apply(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, error) {
	tr, err := a.sw.Apply(ctx, t, mode, a.wp)
	a.last, a.lastTimed = tr, false
	facts := map[results.FactKey]string{results.FactModeFrom: string(tr.From)}
	if len(tr.Restarted) > 0 {
		facts[results.FactRestarted] = strings.Join(tr.Restarted, ",")
	}
	var pruned []string
	for _, w := range tr.Warnings {
		if w.Kind == mesh.WarningInfrastructurePruned {
			pruned = append(pruned, w.Object)
		}
	}
	if len(pruned) > 0 {
		facts[results.FactWaypointLabelsCopied] = strings.Join(pruned, ", ")
	}
	return facts, err
}

// RestartApp restarts every app workload the last Apply did not (runner.AppRestarter).
func (a *meshAdapter) RestartApp(ctx context.Context, t target.Target) (map[results.FactKey]string, error) {
	restarted, err := a.sw.RestartApp(ctx, t, a.last.Restarted)
	if len(restarted) == 0 {
		return nil, err
	}
	names := make([]string, len(restarted))
	for i, w := range restarted {
		names[i] = w.String()
	}
	return map[results.FactKey]string{results.FactRestartedApp: strings.Join(names, ",")}, err
}

// ApplyDeny applies the deny policy of an enforce case for mode (runner.PolicyEnforcer).
func (a *meshAdapter) ApplyDeny(ctx context.Context, t target.Target, mode scenario.Mode) error {
	return a.sw.ApplyDeny(ctx, t, mode, a.wp)
}

// RemoveDeny removes it.
func (a *meshAdapter) RemoveDeny(ctx context.Context, t target.Target) error {
	return a.sw.RemoveDeny(ctx, t)
}

// Reconcile restarts the workloads whose ready pods are still not in mode (runner.Reconciler).
// Only a switch that changed injection can leave such a pod: otherwise no pods are listed again.
func (a *meshAdapter) Reconcile(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, bool, error) {
	if a.last.From != scenario.ModeMixed && mesh.UsesSidecar(a.last.From) == mesh.UsesSidecar(mode) {
		return nil, false, nil
	}
	restarted, err := a.sw.Reconcile(ctx, t, mode)
	if len(restarted) == 0 {
		return nil, false, err
	}
	names := make([]string, len(restarted))
	for i, w := range restarted {
		names[i] = w.String()
	}
	return map[results.FactKey]string{results.FactRestartedAfterReady: strings.Join(names, ",")}, true, err
}

func (a *meshAdapter) Verify(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, error) {
	var (
		v   mesh.Verification
		err error
	)
	if c := a.takeCache(t); c != nil {
		v, err = a.sw.VerifyIn(ctx, c, t, mode, a.wp, a.timeout)
		c.Stop()
	} else {
		v, err = a.sw.Verify(ctx, t, mode, a.wp, a.timeout)
	}
	facts := map[results.FactKey]string{}
	if !a.lastTimed { // a verification without a switch before it (a variant's) has no switch timings
		for k, d := range a.last.Timings(&v) {
			facts[results.FactSwitchPrefix+results.FactKey(k)] = d
		}
		a.lastTimed = true
	}
	facts[results.FactVerifiedPods] = strconv.Itoa(len(v.Pods))
	if len(v.Waypoints) > 0 {
		facts[results.FactWaypoints] = strconv.Itoa(len(v.Waypoints))
	}
	if len(v.DataPlanes) > 0 {
		var all []results.ComponentDataPlane
		if a.seen == nil {
			a.seen = map[string]results.DataPlaneKind{}
		}
		for comp, k := range v.DataPlanes {
			facts[results.FactDataPlaneOf(comp)] = string(k)
			all = append(all, results.ComponentDataPlane{Component: comp, Kind: k})
			prev, ok := a.seen[string(comp)]
			if !ok || results.LeastRepresentative([]results.ComponentDataPlane{{Kind: prev}, {Kind: k}}) == k {
				a.seen[string(comp)] = k
			}
		}
		facts[results.FactDataPlane] = string(results.LeastRepresentative(all))
	}
	if r := a.sw.Revision; r != "" && mesh.NeedsIstio(mode) {
		facts[results.FactIstioRevision] = r
	}
	if len(v.ProxyConfig) > 0 {
		facts[results.FactProxyConfig] = mesh.SummarizeProxyConfig(v.ProxyConfig)
	}
	facts[results.FactMTLS] = a.mtls(ctx, t.Namespaces, mode)
	if err == nil && !v.OK() {
		err = fmt.Errorf("%d pods, problems: %s", len(v.Pods), strings.Join(v.Problems, "; "))
	}
	return facts, err
}

// loadMark is what BeforeLoad read: the waypoints' request counters (a waypoint case), the span sink's counts (a
// tracing variant's case).
type loadMark struct {
	waypoints *mesh.WaypointCount
	tracing   *tracingMark
}

// BeforeLoad reads the waypoints' request counters before a waypoint case's load, and the span sink before a tracing
// variant's (runner.PathProver).
func (a *meshAdapter) BeforeLoad(ctx context.Context, t target.Target, mode scenario.Mode) (runner.PathMark, error) {
	var m loadMark
	if mode == scenario.ModeWaypoint {
		wc := a.sw.WaypointRequests(ctx, mesh.Waypoints(t, a.wp))
		m.waypoints = &wc
	}
	var err error
	m.tracing, err = a.beforeTracedLoad(ctx, t)
	return m, err
}

// AfterLoad proves the waypoints served the load: a waypoint case whose waypoints did not measured ambient. A
// counter that cannot be read (Istio's telemetry off, a stand-in) proves nothing either way: it is recorded, not
// failed. A tracing variant's spans are checked against its sampling rate (afterTracedLoad).
func (a *meshAdapter) AfterLoad(ctx context.Context, t target.Target, mode scenario.Mode, before runner.PathMark, requests int64) (map[results.FactKey]string, error) {
	m, _ := before.(loadMark)
	facts, err := a.waypointsServed(ctx, t, mode, m.waypoints, requests)
	tf, terr := a.afterTracedLoad(ctx, t, m.tracing, requests)
	for k, v := range tf {
		if facts == nil {
			facts = map[results.FactKey]string{}
		}
		facts[k] = v
	}
	return facts, errors.Join(err, terr)
}

// waypointsServed compares the waypoints' counters after the load with b (nil: not a waypoint case).
func (a *meshAdapter) waypointsServed(ctx context.Context, t target.Target, mode scenario.Mode, b *mesh.WaypointCount, requests int64) (map[results.FactKey]string, error) {
	if mode != scenario.ModeWaypoint || b == nil {
		return nil, nil
	}
	after := a.sw.WaypointRequests(ctx, mesh.Waypoints(t, a.wp))
	served, err := mesh.WaypointServed(*b, after, requests)
	if errors.Is(err, mesh.ErrWaypointUncounted) {
		var why []string
		for _, gw := range slices.Sorted(maps.Keys(after.Unread)) {
			why = append(why, gw+": "+after.Unread[gw])
		}
		return map[results.FactKey]string{results.FactWaypointRequests: "unknown (" + strings.Join(why, "; ") + ")"}, nil
	}
	return map[results.FactKey]string{results.FactWaypointRequests: fmt.Sprintf("%.0f served during the load, lead-in and cool-down included; its measured window alone completed %d (%s)", served, requests, after.Counter)}, err
}

// takeCache is the readiness wait's cache of t, nil when there is none (Verify then builds its own).
func (a *meshAdapter) takeCache(t target.Target) *target.Cache {
	if a.cache == nil {
		return nil
	}
	return a.cache.take(t)
}

// mtls is the effective PeerAuthentication mode of the app's namespaces in mode (what the measured traffic had to
// satisfy), as the chosen istiod reads the policies and the mode's data plane applies them (ztunnel: STRICT or not):
// "none (no mesh)" in mode none.
func (a *meshAdapter) mtls(ctx context.Context, namespaces []string, mode scenario.Mode) string {
	if !mesh.NeedsIstio(mode) {
		return "none (no mesh)"
	}
	ms, err := a.detectMTLS(ctx, namespaces, mode)
	if err != nil {
		return "unknown: " + err.Error()
	}
	return mesh.SummarizeMTLS(ms)
}

// detectMTLS reads the namespaces' effective mTLS modes as the chosen istiod and mode's data plane apply them.
func (a *meshAdapter) detectMTLS(ctx context.Context, namespaces []string, mode scenario.Mode) ([]mesh.MTLS, error) {
	return mesh.DetectMTLS(ctx, a.sw.Clients.Istio, a.rootNS, namespaces,
		mesh.MTLSView{Revision: a.revision, Version: a.istioVersion, Ambient: mesh.UsesAmbient(mode)})
}

// Restore puts the namespaces' labels back and takes the run's tracing provider out of istiod's mesh config.
func (a *meshAdapter) Restore(ctx context.Context) error {
	_, err := a.sw.Restore(ctx)
	if a.meshConfig != nil {
		err = errors.Join(err, a.meshConfig.Remove(ctx))
	}
	return err
}

// loadAdapter is loadgen.Cluster as the runner's LoadGenerator.
type loadAdapter struct {
	c    *loadgen.Cluster
	spec scenario.LoadSpec
	// scn is the scenario's spec: a case's variant may change how the load is sent (scenario.VariantLoad).
	scn *scenario.Spec
	// login is the request whose answer supplies the headers load needs (workloads.LoginFor; nil when none), which
	// Prepare sends from a load client pod, through the mode's data plane as the load goes.
	login *scenario.Login
	// headers are login's headers per topology, taken after every mode switch (pods restarted, data plane new).
	headers map[string]map[string]string
}

func (a *loadAdapter) Prepare(ctx context.Context, t target.Target, mode scenario.Mode) error {
	if err := a.c.Prepare(ctx, t.EntryNamespace, mode); err != nil {
		return err
	}
	if a.login == nil {
		return nil
	}
	wt, err := workloads.Login(ctx, func(ctx context.Context, args []string) ([]byte, error) {
		return a.c.ExecAgent(ctx, t.EntryNamespace, mode, args)
	}, t, *a.login)
	if err != nil {
		return err
	}
	if a.headers == nil {
		a.headers = map[string]map[string]string{}
	}
	a.headers[t.Topology] = wt.Headers
	return nil
}

func (a *loadAdapter) Run(ctx context.Context, t target.Target, req runner.LoadRequest) (runner.LoadResult, error) {
	vl := variantLoad(a.scn, req.Case.Variant)
	spec := loadSpec(a.spec, vl, t, a.headers[t.Topology], req)
	// The clients were placed for the mode the case starts in (a transition case moves the app under them).
	res, err := a.c.Run(ctx, t.EntryNamespace, req.Case.StartMode(), spec)
	if err != nil {
		return runner.LoadResult{}, err
	}
	facts := loadFacts(res)
	if vl != nil {
		proof, err := checkLoadShape(*vl, res)
		if err != nil {
			return runner.LoadResult{}, fmt.Errorf("variant %s did not take effect: %w", req.Case.Variant, err)
		}
		facts[results.FactLoadShapeProof] = proof
	}
	w := results.Window{Kind: results.WindowLoad, Start: res.Start, End: res.End}
	return runner.LoadResult{
		Window: w, Windows: []results.Window{w},
		Samples:  res.Samples(results.Sample{}),
		Requests: res.Requests, Errors: res.Errors, Notes: res.Notes,
		Facts: facts, Shortfall: res.Shortfall(), Seconds: res.Seconds(), Slices: loadSlices(res),
	}, nil
}

// loadSpec is the load run of one case: every load endpoint of the target with its weight and headers, the login
// headers (login) over the target's own for every request. A single endpoint stays unnamed, so its samples carry no
// target label and the agent's command line is what it was before targets. It is pure.
func loadSpec(l scenario.LoadSpec, vl *scenario.VariantLoad, t target.Target, login map[string]string, req runner.LoadRequest) loadgen.Spec {
	spec := loadgen.Spec{
		Connections: l.Connections, Duration: req.Window, WarmUp: req.LeadIn, CoolDown: req.CoolDown,
		PayloadBytes: l.PayloadBytes, Headers: kube.MergeLabels(t.Headers, login), Jitter: l.Jitter, Uniform: l.Uniform, Clients: l.Clients,
	}
	if vl != nil {
		spec.NoKeepAlive, spec.HTTP2 = vl.NoKeepAlive(), vl.HTTP == scenario.HTTP2
		if vl.PayloadBytes != nil {
			spec.PayloadBytes = *vl.PayloadBytes
		}
	}
	eps := t.LoadTargetsOrEntry()
	for _, e := range eps {
		name := e.Name
		if len(eps) == 1 {
			name = ""
		}
		spec.Targets = append(spec.Targets, loadgen.LoadTarget{Name: name, URL: e.URL, Protocol: e.Protocol, Weight: e.Weight, Headers: e.Headers})
	}
	if !req.Case.QPS.Max {
		spec.QPS = req.Case.QPS.Value
	}
	if lp := req.Case.Policy.Load; lp != nil {
		spec.PerSecond = lp.PerSecond
		if lp.DeniedSlice {
			spec.Targets = withDeniedSlice(spec.Targets)
		}
	}
	return spec
}

// withDeniedSlice is ts and, as heavy as all of them, a copy of the first with the deny policy's header (target
// results.SliceDenied): half the load is the slice the policy refuses. A single unnamed target is named
// results.SliceAllowed, so that each slice has its own record. It is pure.
func withDeniedSlice(ts []loadgen.LoadTarget) []loadgen.LoadTarget {
	if len(ts) == 0 {
		return ts
	}
	out := slices.Clone(ts)
	if len(out) == 1 && out[0].Name == "" {
		out[0].Name = string(results.SliceAllowed)
	}
	denied := out[0]
	denied.Name, denied.Weight = string(results.SliceDenied), 0
	for _, t := range out {
		denied.Weight += max(t.Weight, 1)
	}
	denied.Headers = kube.MergeLabels(denied.Headers, map[string]string{mesh.DenyHeader: "yes"})
	return append(out, denied)
}

// loadSlices are the per-second records of a load with a denied slice: that target's and every other target's
// merged; nil for any other load.
func loadSlices(res loadgen.Result) map[results.LoadSlice][]results.LoadSecond {
	var denied []results.LoadSecond
	var allowed [][]results.LoadSecond
	found := false
	for _, t := range res.Targets {
		if t.Name == string(results.SliceDenied) {
			denied, found = t.Seconds(), true
		} else {
			allowed = append(allowed, t.Seconds())
		}
	}
	if !found {
		return nil
	}
	return map[results.LoadSlice][]results.LoadSecond{results.SliceDenied: denied, results.SliceAllowed: results.MergeSeconds(allowed...)}
}

// loadFacts are the case facts of a load result: achieved QPS, error rate, every client run and, with several
// targets, every target's share.
func loadFacts(res loadgen.Result) map[results.FactKey]string {
	var clients []string
	for _, c := range res.Clients {
		who := c.Client
		if c.Target != "" {
			who += " " + c.Target
		}
		clients = append(clients, fmt.Sprintf("%s %s..%s %.1f qps", who, c.Start.Format(time.RFC3339Nano), c.End.Format(time.RFC3339Nano), c.ActualQPS))
	}
	facts := map[results.FactKey]string{
		results.FactAchievedQPS: strconv.FormatFloat(res.ActualQPS, 'f', 1, 64), results.FactErrorRate: strconv.FormatFloat(res.ErrorRate(), 'f', 3, 64) + "%",
		results.FactLoadClients: strings.Join(clients, "; "),
	}
	if len(res.Targets) > 0 {
		var ts []string
		for _, tr := range res.Targets {
			ts = append(ts, fmt.Sprintf("%s %s weight %d %.1f qps %.3f%% errors", tr.Name, tr.Protocol, tr.Weight, tr.ActualQPS, tr.ErrorRate()))
		}
		facts[results.FactLoadTargets] = strings.Join(ts, "; ")
	}
	return facts
}

func (a *loadAdapter) Teardown(ctx context.Context, t target.Target) error {
	return a.c.Teardown(ctx, t.EntryNamespace)
}

// istioFacts describes the installed Istio for run.json (nil when none is installed). Istio has no IstioOperator in
// the cluster since 1.24, so the profile is inferred: "ambient" when istiod runs with PILOT_ENABLE_AMBIENT.
func istioFacts(info mesh.IstioInfo) *results.IstioFacts {
	profile := "default"
	if info.PilotEnableAmbient {
		profile = "ambient"
	}
	return info.Facts(profile)
}
