package runner

import (
	"context"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// The runner's view of the world: narrow interfaces it defines itself (import rule: runner imports scenario,
// results and leaf packages under internal/, never an adapter). The wiring (cmd/meshbench/app, orchestrate) plugs
// the real adapters (workloads, mesh, loadgen, collectors/prom) in.

// Workloads deploys and removes what the cases measure: the app (mesh cases) or the pod network test pods.
type Workloads interface {
	// Ensure deploys the topology (idempotent) and returns its target. On an error it may return the target of
	// what it created before failing (Namespaces set): the runner's finalizer tears that down, also after Ctrl-C.
	Ensure(ctx context.Context, topo scenario.Topology) (target.Target, error)
	// Teardown removes what Ensure created.
	Teardown(ctx context.Context, t target.Target) error
}

// ReadyWaiter is Workloads whose Ensure returns before the pods are ready and whose pods a mode switch restarts
// (the app): the runner waits with it after Mesh.Apply, in the step wait-ready. Workloads that Ensure ready
// (cni's test pods) are not one, and their cases have no such step.
type ReadyWaiter interface {
	// WaitReady waits until every workload is rolled out and every pod is Ready.
	WaitReady(ctx context.Context, t target.Target) error
}

// AppRestarter is a Mesh that rolls every app workload out again after a switch (scenario.CasePolicy.RestartApp),
// but those the switch restarted already, so that every pod starts in the new mode; the runner waits next.
type AppRestarter interface {
	RestartApp(ctx context.Context, t target.Target) (map[results.FactKey]string, error)
}

// PolicyEnforcer is a Mesh that applies and removes the deny policy of an enforce case (scenario.CaseEnforce): it
// denies the requests of the load's denied slice in mode's proxies.
type PolicyEnforcer interface {
	ApplyDeny(ctx context.Context, t target.Target, mode scenario.Mode) error
	RemoveDeny(ctx context.Context, t target.Target) error
}

// VariantApplier is a Mesh that puts a variant (scenario spec.variants: mesh features on top of a mode) on a
// target switched and verified in mode, and verifies it took effect (an error means it did not: the case is not
// measured); RemoveVariant deletes what any ApplyVariant created on the target (none is no error).
type VariantApplier interface {
	ApplyVariant(ctx context.Context, t target.Target, mode scenario.Mode, variant string) (map[results.FactKey]string, error)
	RemoveVariant(ctx context.Context, t target.Target) error
}

// StartupReporter is a ReadyWaiter that tells, after a successful WaitReady, how each of the target's pods started
// (results.PodStartup); the runner records, with the case whose switch it was, the pods it had not seen before.
type StartupReporter interface {
	PodStartups() []results.PodStartup
}

// meshSwitcher switches and verifies the data-plane mode. A runner without one (meshbench cni) never switches modes.
type meshSwitcher interface {
	// Apply puts the target's namespaces into mode, in the safe order (restarting workloads when sidecar
	// injection changes, without waiting for their rollout: the runner asks Workloads.WaitReady next). The facts are
	// recorded with the case.
	Apply(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, error)
	// Verify checks every pod of the target. An error means the mode did not take effect; the case is then not
	// measured and is recorded failed with the error as its reason.
	Verify(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, error)
	// Restore undoes what Apply changed on namespaces and workloads meshbench did not create (finalizer): the labels,
	// then the restart annotations of app existing.
	Restore(ctx context.Context) error
}

// PathProver is a Mesh that proves, around a case's load, that the mode's proxies carried it: BeforeLoad takes its
// counters just before the load, AfterLoad compares them with the requests the measured phase completed. An AfterLoad
// error fails the case (its text the reason); the measurements are kept.
type PathProver interface {
	BeforeLoad(ctx context.Context, t target.Target, mode scenario.Mode) (PathMark, error)
	AfterLoad(ctx context.Context, t target.Target, mode scenario.Mode, before PathMark, requests int64) (map[results.FactKey]string, error)
}

// PathMark is what a PathProver read before the load; only it reads it back.
type PathMark any

// Reconciler is a Mesh that puts right, once the workloads are ready, pods a mode switch could not reach (admitted
// by the namespace's old labels); restarted says whether it restarted anything, and the runner then waits again.
type Reconciler interface {
	Reconcile(ctx context.Context, t target.Target, mode scenario.Mode) (facts map[results.FactKey]string, restarted bool, err error)
}

// LoadRequest is one load run.
type LoadRequest struct {
	Case scenario.Case
	// LeadIn is load before the measured window (warm-up, trim, and at least the collector's rate range). A
	// back-to-back load (scenario.LoadPolicy.BackToBack) runs none: it trims the lead-in from its own resource
	// window.
	LeadIn time.Duration
	// Window is the measured window.
	Window time.Duration
	// CoolDown is load after the window (trim end and the rest of load.duration), at least the collector's guard.
	CoolDown time.Duration
}

// LoadResult is what a load run measured.
type LoadResult struct {
	// Window is the measured window (the part every client was in) whose resource use is collected; zero when
	// there is nothing to collect (a back-to-back load none of whose runs succeeded).
	Window results.Window
	// Windows are recorded with the case: the measured window, or each run's own when the load is runs back to
	// back. They are recorded also when Run fails.
	Windows []results.Window
	// Samples are latency, throughput and error samples; the runner fills the case fields.
	Samples []results.Sample
	// Requests and Errors count the load's requests (a back-to-back load: its runs). A load where none completed
	// or every one failed fails the case.
	Requests, Errors int64
	// Partial, when set, is why some of the requests failed while the case still counts (results.CaseResult.Partial).
	Partial string
	// Facts and Notes are recorded with the case (Facts also when Run fails); Warnings are its samples'
	// (results.CaseResult.SampleWarnings).
	Facts    map[results.FactKey]string
	Notes    []string
	Warnings []string
	// Shortfall, when set, is a load that achieved less than it asked for (results.CaseResult.LoadShortfall).
	Shortfall *results.LoadShortfall
	// Seconds is the per-second record of a load asked for one (scenario.LoadPolicy.PerSecond); Slices the records
	// of its slices apart (scenario.LoadPolicy.DeniedSlice).
	Seconds []results.LoadSecond
	Slices  map[results.LoadSlice][]results.LoadSecond
}

// NotMeasuredError is a load that ran but measured nothing the case can count, in the generator's own words. The
// case fails as on any load error, keeping its facts and windows; its reason is the error's text alone, without
// "load: ".
type NotMeasuredError struct{ Err error }

func (e *NotMeasuredError) Error() string { return e.Err.Error() }

func (e *NotMeasuredError) Unwrap() error { return e.Err }

// LoadGenerator runs a case's load.
type LoadGenerator interface {
	// Run runs one load: lead-in, measured window, cool-down.
	Run(ctx context.Context, t target.Target, req LoadRequest) (LoadResult, error)
}

// LoadClients is a LoadGenerator that places clients of its own for each target and mode (load client pods in the
// app's namespace): the runner prepares them after the switch, in the step load-clients, and removes them before
// the workloads. A generator that runs in the pods Workloads deployed (cni's) is not one.
type LoadClients interface {
	// Prepare places the load clients for the target in the given mode (same namespace, so the same data plane)
	// and waits until they are ready and, where the mode says so, captured by the mesh.
	Prepare(ctx context.Context, t target.Target, mode scenario.Mode) error
	// Teardown removes the load clients of the target.
	Teardown(ctx context.Context, t target.Target) error
}

// Collection is what the resource collector read for one window.
type Collection struct {
	// Window is the window the figures cover (the measured one, to the millisecond).
	Window   results.Window
	Samples  []results.Sample
	Warnings []string
	// Facts are recorded with the case (a cni case: "resources", what was not collected and why).
	Facts map[results.FactKey]string
	// IngestWait is the part of the collection spent waiting for the window's data to be ingested (recorded as
	// the timing collect-wait-<kind>, inside collect-<kind>).
	IngestWait time.Duration
}

// collector reads resource usage per component over a window.
type collector interface {
	// Collect reads the window of case c (waiting until its data is complete). The case's mode decides which
	// shared components serve the app (ztunnel only in ambient modes, waypoints only in waypoint mode, istiod only
	// with a mesh); a cni case's path decides which test pods and nodes are read.
	Collect(ctx context.Context, t target.Target, c scenario.Case, w results.Window) (Collection, error)
	// LeadIn is how long before a window the measured condition must already hold (the rate range), so that the
	// first rate point of the window sees no earlier activity.
	LeadIn() time.Duration
	// Guard is how long the measured condition must still hold after a window ends (two median sample spacings):
	// the collector reads samples up to Guard beyond a window's edges as the window's own.
	Guard() time.Duration
}

// nodeGate decides whether a case can run while nodes an earlier case failed on (target.FailedNodes: a wait's
// *target.NodeNotReadyError or a *target.KubeletError) may still be unusable. The runner asks it only after such a
// failure, so a run without one sends no request for it.
type nodeGate interface {
	// Check reads nodes again. t is the deployed target the case runs on, nil when the case deploys another
	// topology (its pods are placed anew).
	Check(ctx context.Context, t *target.Target, nodes []string) NodeCheck
}

// NodeCheck is what a NodeGate found.
type NodeCheck struct {
	// Recovered are the nodes that are usable again (Ready, and their kubelet answers) or gone: not checked again.
	Recovered []string
	// Skip, when set, is why the case is skipped: Node, still not usable and needed by the case (the app's or the
	// load clients' pods), named with what is wrong with it. Empty: the case runs.
	Skip, Node string
}

// requestCounter reads the API requests counted so far (kube.RequestCounter on the run's clients).
type requestCounter interface {
	Counts() (total int64, byVerbResource map[string]int64)
}

// Store receives each finished case at once.
type Store interface {
	AppendCase(res results.CaseResult, samples []results.Sample) error
}

// runClock is time for the runner; tests inject a fake. It is not k8s.io/utils/clock.Clock (meshbench's clock
// elsewhere) on purpose: the runner's test fake advances its time inside Sleep, so a whole plan runs in virtual time
// without a goroutine stepping a fake clock.
type runClock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the wall clock.
type realClock struct{}

// Now is time.Now in UTC.
func (realClock) Now() time.Time { return time.Now().UTC() }

// Sleep waits d or until ctx is done: kube.Sleep on the wall clock, the one context-aware sleep.
func (realClock) Sleep(ctx context.Context, d time.Duration) error { return kube.Sleep(ctx, nil, d) }
