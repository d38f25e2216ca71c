package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// dataPlaneNotes are the run's caveats for the data-plane components its modes run that are not Istio's own.
func dataPlaneNotes(ist *results.IstioFacts, modes []scenario.Mode) []string {
	if ist == nil {
		return nil
	}
	var comps []results.Component
	for _, m := range modes {
		comps = append(comps, mesh.ComponentsOfMode(m)...)
	}
	return results.DataPlaneNotes(ist.DataPlanes, comps)
}

// runDataPlane is the least representative kind among the components the run's modes run (a stand-in no case used
// does not count); a run whose modes run no proxy, or without per-component records, keeps the kind recorded.
func runDataPlane(ist *results.IstioFacts, modes []scenario.Mode) results.DataPlaneKind {
	var used []results.ComponentDataPlane
	for _, m := range modes {
		for _, comp := range mesh.ComponentsOfMode(m) {
			if c, ok := results.DataPlaneOf(ist.DataPlanes, comp); ok {
				used = append(used, c)
			}
		}
	}
	if len(used) == 0 {
		return ist.DataPlane
	}
	return results.LeastRepresentative(used)
}

// observedDataPlanes folds what the cases' pods showed into run.json's per-component data planes: a component a
// case saw less representative than detected (a stand-in pod where the marker said nothing) is recorded as seen,
// so no figure of it is read as Istio's. It returns whether anything changed.
func observedDataPlanes(ist *results.IstioFacts, seen map[string]results.DataPlaneKind, modes []scenario.Mode) bool {
	if ist == nil {
		return false
	}
	changed := false
	for comp, k := range seen {
		cur, ok := results.DataPlaneOf(ist.DataPlanes, results.Component(comp))
		if ok && results.LeastRepresentative([]results.ComponentDataPlane{cur, {Kind: k}}) == cur.Kind {
			continue
		}
		changed = true
		entry := results.ComponentDataPlane{Component: results.Component(comp), Kind: k, Description: string(k) + " (seen on the case's pods)"}
		if i := slices.IndexFunc(ist.DataPlanes, func(c results.ComponentDataPlane) bool { return string(c.Component) == comp }); i >= 0 {
			ist.DataPlanes[i] = entry
		} else {
			ist.DataPlanes = append(ist.DataPlanes, entry)
		}
	}
	if changed {
		ist.DataPlane = runDataPlane(ist, modes)
	}
	return changed
}

// RunConfig is one `meshbench run`: a new run of Scenario, or the continuation of the run in ResumeDir (whose
// recorded scenario Scenario then is). Scenario is validated with every flag already applied: what run.json records
// is what runs, so a resumed run repeats it.
type RunConfig struct {
	Scenario  *scenario.Scenario
	ResumeDir string
	// Keep keeps the app, load clients and mode labels after the run.
	Keep          bool
	AllowExisting bool
	ReadyTimeout  time.Duration
	VerifyTimeout time.Duration
	// DeleteTimeout bounds teardown and label restore (also after Ctrl-C).
	DeleteTimeout time.Duration
}

// Deps are the live handles a run uses: clients of a reachable API server (Connect) and where humans read progress.
type Deps struct {
	Clients     *kube.Clients
	KubeVersion string
	Log         *slog.Logger
	// Progress receives progress bars or lines (nil: none).
	Progress io.Writer
}

// RunResult is what a run wrote: its directory, the summary and its Markdown rendering, and the runner's outcome.
type RunResult struct {
	RunID    string
	Dir      string
	Summary  results.Summary
	Markdown string
	Outcome  runner.Outcome
}

// Run carries out a mesh benchmark run. Everything that can refuse the run (the Istio revision, the Prometheus
// configuration, the kubelet sampler's calibration) is settled before the run directory is created. The returned
// error is the runner's (or the writing of the results); failed and interrupted cases are in RunResult.Outcome.
func Run(ctx context.Context, cfg RunConfig, d Deps) (RunResult, error) {
	s, log := cfg.Scenario, d.Log
	if err := checkAllowExisting(cfg); err != nil {
		return RunResult{}, err
	}
	if err := checkResumeDir(cfg.ResumeDir, results.CommandRun); err != nil {
		return RunResult{}, err
	}
	plan := scenario.NewPlan(s)
	ist, err := resolveCluster(ctx, d.Clients, s, plan, log)
	if err != nil {
		return RunResult{}, err
	}
	protected := ist.OwnNamespaces()
	if e := s.Spec.Workload.Existing; e != nil && s.Spec.Workload.App == scenario.AppExisting {
		// The namespaces the scenario names: refused before the run directory exists (the deployer refuses every
		// app's namespaces again before its first request).
		if err := scenario.RefuseProtected(e.Namespaces, protected...); err != nil {
			return RunResult{}, inputError(err)
		}
	}
	col, err := newCollector(ctx, d.Clients, s, log)
	if err != nil {
		return RunResult{}, err
	}
	defer col.Stop()

	sess, err := openSession(openOptions{command: results.CommandRun, resumeDir: cfg.ResumeDir, outputDir: s.Spec.Output.Dir,
		prefix: s.Metadata.Name, log: log, newMeta: func() (results.RunMeta, error) { return newRunMeta(ctx, d, s, plan, ist, col) }})
	if err != nil {
		return RunResult{}, err
	}
	defer sess.close()
	runID := sess.runID()
	res := RunResult{RunID: runID, Dir: sess.dir()}
	record, err := sess.labelRecord()
	if err != nil {
		return res, err
	}
	clients := d.Clients
	lg := &loadgen.Cluster{Kube: clients.Kube, Exec: kube.PodExecer{Config: clients.Config, Kube: clients.Kube}, RunID: runID,
		Image: s.Spec.Images.Agent, PullPolicy: corev1.PullPolicy(s.Spec.Images.PullPolicy), NodeSelector: s.Spec.Workload.NodeSelector,
		Tolerations: s.Spec.Workload.Tolerations,
		Clients:     s.Spec.Load.Clients, ReadyTimeout: cfg.ReadyTimeout, Log: log}
	col.loadSelector, col.waypoint, col.revision = lg.Selector(), s.Spec.Waypoint, ist.Revision
	deployer := &workloads.Deployer{Clients: clients, RunID: runID, AllowExisting: cfg.AllowExisting, Log: log, Progress: d.Progress,
		Protected: protected}
	// One informer cache per case serves its readiness wait and then its mode verification.
	cache := &appCache{kc: clients.Kube}
	meshA := &meshAdapter{sw: &mesh.Switcher{Clients: clients, RunID: runID, Log: log, Record: record, Revision: ist.Revision, Protected: protected},
		wp: s.Spec.Waypoint, spec: s.Spec, timeout: cfg.VerifyTimeout, rootNS: ist.RootNamespace, revision: ist.Revision, istioVersion: ist.Version, cache: cache}
	loadA := &loadAdapter{c: lg, spec: s.Spec.Load, scn: &s.Spec, login: workloads.LoginFor(s.Spec.Workload.App, s.Spec.Load.Login)}
	meshA.probe = loadA.probe
	meshA.sink = lg
	meshA.meshConfig = &mesh.MeshConfigEditor{Clients: clients, Namespace: ist.Namespace, Revision: ist.Revision, RunID: runID}
	r := &runner.Runner{
		Plan: plan, RunID: runID, Store: sess.store, Done: sess.done(), Keep: cfg.Keep, DeleteTimeout: cfg.DeleteTimeout, Log: log,
		Progress:  d.Progress,
		Workloads: &workloadsAdapter{d: deployer, s: s, timeout: cfg.ReadyTimeout, cache: cache},
		Mesh:      meshA,
		Load:      loadA,
		Collector: runCollector{col},
		Requests:  clients.Requests,
		Nodes:     newNodeGate(clients.Kube, s, lg.Selector()),
	}
	if err := sess.begin(plan.Summary()); err != nil {
		return res, err
	}
	out, runErr := r.Run(ctx)
	res.Outcome = out
	if sess.resumed() && !cfg.Keep {
		runErr = errors.Join(runErr, sweepEarlierSessions(ctx, clients, runID, cfg.DeleteTimeout, log))
	}
	if facts := sess.meta.Cluster.Istio; observedDataPlanes(facts, meshA.seen, s.Spec.Modes) {
		sess.addNotes(dataPlaneNotes(facts, s.Spec.Modes)...)
	}
	sum, md, err := sess.finish(ctx, out, runErr)
	res.Summary, res.Markdown = sum, md
	return res, errors.Join(runErr, err)
}

// newRunMeta is run.json of a new mesh run before its ID is drawn: the cluster's and collector's facts, and the
// notes every report of it repeats.
func newRunMeta(ctx context.Context, d Deps, s *scenario.Scenario, plan scenario.Plan, ist mesh.IstioInfo, col *Collector) (results.RunMeta, error) {
	meta, err := newMeta(results.CommandRun, s, plan)
	if err != nil {
		return meta, err
	}
	meta.Cluster, meta.Prometheus = ClusterFacts(ctx, d.Clients, s, d.KubeVersion, ist, d.Log), col.Facts
	meta.Notes = append(meta.Notes, col.Notes...)
	// Whole-node figures of nodes on one host are that machine's, once per node: say so in every report.
	meta.Notes = append(meta.Notes, results.SharedHostNotes(meta.Cluster.Nodes)...)
	meta.Notes = append(meta.Notes, dataPlaneNotes(meta.Cluster.Istio, s.Spec.Modes)...)
	return meta, nil
}

// sweepEarlierSessions removes, after a resumed run's own finalizers, every object still labelled with the run's ID
// (what killed earlier sessions left; the runner tears down only its own session's). Own budget, also after Ctrl-C.
func sweepEarlierSessions(ctx context.Context, clients *kube.Clients, runID string, budget time.Duration, log *slog.Logger) error {
	if budget <= 0 {
		budget = runner.DefaultDeleteTimeout
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	rep, err := workloads.Cleaner{Clients: clients, Log: log}.Clean(sctx, workloads.CleanOptions{RunID: runID, Wait: budget})
	edited, merr := mesh.RemoveTracingProviders(sctx, clients, runID)
	rep.Deleted, err = append(rep.Deleted, edited...), errors.Join(err, merr)
	if len(rep.Deleted) > 0 {
		log.Info("removed what an earlier session of the run left", "objects", rep.Deleted, "waited", rep.Waited.Round(time.Millisecond))
	}
	if err != nil {
		return fmt.Errorf("remove what an earlier session of the run left (meshbench cleanup --run %s): %w", runID, err)
	}
	return nil
}
