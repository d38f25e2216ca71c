package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/version"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

type runFlags struct {
	file            string
	resume          string
	retain          bool
	allowExisting   bool
	prometheusURL   string
	outputDir       string
	readyTimeout    time.Duration
	verifyTimeout   time.Duration
	finalizeTimeout time.Duration
	imageRegistry   string
	skipImages      bool
}

// NewRunCommand runs a scenario end to end: deploy, switch modes, verify, load, collect, summarise.
func NewRunCommand(streams Streams, g *GlobalFlags) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run -f SCENARIO | --resume RUN_DIR",
		Short: "Run a scenario: deploy, switch data-plane modes, verify, load with fortio, collect min/max/avg CPU and memory",
		Long: `Run every case of a scenario's plan. Per case: switch the data-plane mode when it changes (apply, wait for
the workloads, verify every pod; a case whose verification fails is recorded failed and not measured), measure the
idle window, run fortio load from client pods in the app's namespace (same data plane as the app), and read min,
max and avg CPU and memory per component from Prometheus (or, without one, the kubelets' resource metrics) over
the exact windows. Each case is written to RUN_DIR/samples.jsonl and cases.jsonl as soon as it ends; --resume
RUN_DIR continues an interrupted run without repeating recorded cases. At the end summary.json and a report are
written and the study-A tables are printed.

Ctrl-C or SIGTERM stops after cleaning up (app namespaces deleted, namespace labels restored) unless --retain.
Exit code 1 when some cases failed (everything is still written), 2 for bad input, which includes an image the
registry does not have or refuses: every image is resolved before anything is created (--skip-image-check).`,
		Example: `  meshbench run -f examples/quickstart.yaml
  meshbench run --resume runs/quickstart-20261201-101500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRun(cmd.Context(), streams, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "scenario file (YAML)")
	fl.StringVar(&f.resume, "resume", "", "continue the run in RUN_DIR (its recorded scenario and plan are used)")
	fl.BoolVar(&f.retain, "retain", false, "keep the app, load clients and mode labels after the run")
	fl.BoolVar(&f.allowExisting, "allow-existing-namespaces", false, "deploy into app namespaces that already exist (never deleted)")
	fl.StringVar(&f.prometheusURL, "prometheus-url", "", "Prometheus URL (overrides spec.prometheus)")
	fl.StringVar(&f.outputDir, "output-dir", "", "directory that receives the run directory (overrides spec.output.dir)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 10*time.Minute, "how long workloads and load clients may take to become ready")
	fl.DurationVar(&f.verifyTimeout, "verify-timeout", 3*time.Minute, "how long every pod may take to prove the data-plane mode")
	fl.DurationVar(&f.finalizeTimeout, "finalize-timeout", runner.DefaultFinalizeTimeout, "bound on teardown and label restore (also after Ctrl-C)")
	addImageRegistryFlag(fl, &f.imageRegistry)
	addSkipImageCheckFlag(fl, &f.skipImages)
	return cmd
}

func runRun(ctx context.Context, streams Streams, g *GlobalFlags, f *runFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	log := g.Logger(streams.ErrOut)
	// Every image is resolved before the run directory or anything in the cluster is created.
	s, store, meta, done, err := openRun(f, func(s *scenario.Scenario) error {
		return checkRunImages(ctx, g, streams, nil, s, true, false, f.skipImages)
	})
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	if f.prometheusURL != "" {
		s.Spec.Prometheus.URL, s.Spec.Prometheus.Service = f.prometheusURL, nil
	}
	plan := scenario.NewPlan(s)
	clients, err := kube.NewClients(g.Kubeconfig, g.Context)
	if err != nil {
		return badInput(err)
	}
	ist, err := resolveCluster(ctx, clients, s, plan, log)
	if err != nil {
		return err
	}
	col, promFacts, notes, stop, err := newCollector(ctx, clients, s, log)
	if err != nil {
		return err
	}
	defer stop()
	if done == nil { // a new run: record the facts before the first case
		meta.Cluster, meta.Prometheus = clusterFacts(ctx, clients, s, ist, log), promFacts
		meta.Notes = append(meta.Notes, notes...)
		if ist := meta.Cluster.Istio; ist != nil && ist.DataPlane == results.DataPlaneStandIn {
			meta.Notes = append(meta.Notes, standInNote)
		}
		if err := store.UpdateMeta(meta); err != nil {
			return err
		}
	}
	record, err := mesh.OpenLabelRecord(filepath.Join(store.Dir(), mesh.LabelRecordFile))
	if err != nil {
		return err
	}
	lg := &loadgen.Cluster{Kube: clients.Kube, Exec: kube.PodExecer{Config: clients.Config, Kube: clients.Kube}, RunID: meta.RunID,
		Image: s.Spec.Images.Agent, PullPolicy: corev1.PullPolicy(s.Spec.Images.PullPolicy), NodeSelector: s.Spec.Workload.NodeSelector,
		Clients: s.Spec.Load.Clients, ReadyTimeout: f.readyTimeout, Log: log}
	col.loadSelector, col.waypoint, col.revision = lg.Selector(), s.Spec.Waypoint, ist.Revision
	deployer := &workloads.Deployer{Clients: clients, RunID: meta.RunID, AllowExisting: f.allowExisting, Log: log, Progress: progressWriter(g, streams)}
	meshA := &meshAdapter{sw: &mesh.Switcher{Clients: clients, RunID: meta.RunID, Log: log, Record: record, Revision: ist.Revision},
		wp: s.Spec.Waypoint, timeout: f.verifyTimeout, rootNS: ist.RootNamespace}
	r := &runner.Runner{
		Scenario: s, Plan: plan, RunID: meta.RunID, Store: store, Done: done, Retain: f.retain, FinalizeTimeout: f.finalizeTimeout, Log: log,
		Progress:  progressWriter(g, streams),
		Workloads: &workloadsAdapter{d: deployer, s: s, timeout: f.readyTimeout},
		Mesh:      meshA,
		Load:      &loadAdapter{c: lg, spec: s.Spec.Load, login: deployer.Login},
		Collector: col,
	}
	log.Info("run", "id", meta.RunID, "dir", store.Dir(), "plan", plan.Summary())
	out, runErr := r.Run(ctx)
	if meshA.standIn && !slices.Contains(meta.Notes, standInNote) {
		meta.Notes = append(meta.Notes, standInNote)
	}
	sum, md, err := finish(store, meta, log)
	if err != nil {
		return errors.Join(runErr, err)
	}
	if err := printValue(streams.Out, g.Output, sum, func() string { return md }); err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "run directory: %s (report: %s)\n", store.Dir(), filepath.Join(store.Dir(), "report", report.MarkdownFile))
	switch {
	case runErr != nil:
		return runErr
	case out.Interrupted:
		return fmt.Errorf("run %s interrupted after %d of %d cases (continue with --resume %s): %w",
			meta.RunID, out.Resumed+out.OK+len(out.Failed), out.Total, store.Dir(), context.Canceled)
	case len(out.Failed) > 0:
		return &ExitError{Code: ExitRunFailed, Err: fmt.Errorf("%d of %d cases failed (results and reasons are in %s):\n  %s",
			len(out.Failed), out.Total, store.Dir(), strings.Join(out.Failed, "\n  "))}
	}
	return nil
}

// progressWriter is stderr for progress bars, or nil with -q.
func progressWriter(g *GlobalFlags, streams Streams) io.Writer {
	if g.Quiet {
		return nil
	}
	return streams.ErrOut
}

const standInNote = "data plane: test stand-in, figures are not Istio's"

// openRun creates a new run directory for -f, or resumes --resume RUN_DIR with the scenario recorded in it; check
// runs on the scenario first (the image check).
func openRun(f *runFlags, check func(*scenario.Scenario) error) (*scenario.Scenario, *results.Store, results.RunMeta, map[string]results.CaseResult, error) {
	var zero results.RunMeta
	switch {
	case f.resume != "" && f.file != "":
		return nil, nil, zero, nil, badInput(errors.New("give either -f SCENARIO (new run) or --resume RUN_DIR, not both"))
	case f.resume != "" && f.imageRegistry != "":
		return nil, nil, zero, nil, badInput(errors.New("--image-registry with --resume: a resumed run keeps the images it recorded"))
	case f.resume != "":
		store, run, err := results.Resume(f.resume)
		if err != nil {
			return nil, nil, zero, nil, badInput(err)
		}
		s, err := scenario.Parse(run.Meta.Scenario)
		if err != nil {
			_ = store.Close()
			return nil, nil, zero, nil, badInput(fmt.Errorf("resume %s: recorded scenario: %w", f.resume, err))
		}
		if err := check(s); err != nil {
			_ = store.Close()
			return nil, nil, zero, nil, err
		}
		return s, store, run.Meta, run.DoneCases(), nil
	case f.file == "":
		return nil, nil, zero, nil, badInput(errors.New("give -f SCENARIO or --resume RUN_DIR"))
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return nil, nil, zero, nil, err
	}
	plan := scenario.NewPlan(s)
	if len(plan.Cases) == 0 {
		return nil, nil, zero, nil, badInput(fmt.Errorf("%s: no mesh benchmark cases (spec.workload is empty); use meshbench cni for network-only scenarios", f.file))
	}
	if err := check(s); err != nil {
		return nil, nil, zero, nil, err
	}
	start := time.Now().UTC()
	v := version.Get()
	meta := results.RunMeta{
		RunID: s.Metadata.Name + "-" + start.Format("20060102-150405"), Command: "run", Start: start,
		Tool: results.ToolInfo{Version: v.Version, Commit: v.Commit, GoVersion: v.GoVersion, BuildDate: v.BuildDate},
	}
	if meta.Scenario, err = json.Marshal(s); err != nil {
		return nil, nil, zero, nil, fmt.Errorf("encode scenario: %w", err)
	}
	if meta.Plan, err = json.Marshal(plan); err != nil {
		return nil, nil, zero, nil, fmt.Errorf("encode plan: %w", err)
	}
	if f.outputDir != "" {
		s.Spec.Output.Dir = f.outputDir
	}
	store, err := results.Create(filepath.Join(s.Spec.Output.Dir, meta.RunID), meta)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil, zero, nil, badInput(err)
	}
	if err != nil {
		return nil, nil, zero, nil, err
	}
	return s, store, meta, nil, nil
}

// finish summarises everything the run directory holds (resumed cases included), writes summary.json, the end time
// and the report files, and returns the summary and its Markdown.
func finish(store *results.Store, meta results.RunMeta, log *slog.Logger) (results.Summary, string, error) {
	run, err := results.Read(store.Dir())
	if err != nil {
		return results.Summary{}, "", err
	}
	sum := results.Summarize(meta, run.Samples, run.Cases, results.SummaryOptions{}) // meta: with the notes of this session
	if err := store.WriteSummary(sum); err != nil {
		return sum, "", err
	}
	end := time.Now().UTC()
	meta.End = &end
	if err := store.UpdateMeta(meta); err != nil {
		return sum, "", err
	}
	run.Meta, run.Summary = meta, &sum
	rep := report.Build(run)
	if _, err := report.Write(filepath.Join(store.Dir(), "report"), rep.Files()); err != nil {
		log.Warn("write report files", "err", err)
	}
	return sum, string(rep.Markdown()), nil
}

// runCollector adapts a prom.Collector or the kubelet fallback to the runner: it finds the pod sets from the
// Kubernetes API at collection time.
type runCollector struct {
	pods         prom.PodLister
	loadSelector string
	collect      func(ctx context.Context, w results.Window, sets []prom.PodSet) (prom.Collected, error)
	// waypoint and revision say which waypoints and which istiod serve the app (meshScope).
	waypoint scenario.Waypoint
	revision string
	// lead is the rate range when the collector was built; leadFn, when set, follows later changes (the kubelet
	// sampler's resolution follows cAdvisor's timestamps).
	lead   time.Duration
	leadFn func() time.Duration
}

func (c *runCollector) Collect(ctx context.Context, t runner.Target, mode scenario.Mode, w results.Window) (runner.Collection, error) {
	// Node: each node running the app, load client or waypoint pods, measured on its own (never the whole cluster).
	sets, err := prom.PodSets(ctx, c.pods, prom.Scope{AppNamespaces: t.Namespaces, AppSelector: t.AppSelector, LoadgenSelector: c.loadSelector, Node: true,
		Mesh: meshScope(t, mode, c.waypoint, c.revision)})
	if err != nil {
		return runner.Collection{}, err
	}
	got, err := c.collect(ctx, w, sets)
	if err == nil {
		err = prom.CheckRequired(sets, got.Samples)
	}
	return runner.Collection{Window: got.Window, Samples: got.Samples, Warnings: got.Warnings}, err
}

// meshScope is what serves the app in mode: nothing in none; istiod of the run's revision with a mesh; the node agents
// (ztunnel, istio-cni) of the app's nodes in ambient modes; the run's own waypoints in waypoint mode.
func meshScope(t runner.Target, mode scenario.Mode, wp scenario.Waypoint, revision string) prom.MeshScope {
	var m prom.MeshScope
	if !mesh.NeedsIstio(mode) {
		return m
	}
	m.Istiod, m.IstiodRevision = true, revision
	m.NodeAgents = mesh.UsesAmbient(mode)
	if wt, ok := t.Handle.(workloads.Target); ok && mode == scenario.ModeWaypoint {
		for _, r := range mesh.Waypoints(wt, wp) {
			m.Waypoints = append(m.Waypoints, prom.NamespacedName{Namespace: r.Namespace, Name: r.Name})
		}
	}
	return m
}

func (c *runCollector) LeadIn() time.Duration {
	if c.leadFn != nil {
		return c.leadFn()
	}
	return c.lead
}

// newCollector builds the resource collector: Prometheus when configured (scrape interval detected now), else the
// kubelet sampler running in the background until stop is called.
func newCollector(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, log *slog.Logger) (*runCollector, *results.PromFacts, []string, func(), error) {
	pc := s.Spec.Prometheus
	retry := prom.DefaultRetry()
	retry.Timeout = pc.Timeout.Duration
	rc := &runCollector{pods: prom.KubePods{Kube: clients.Kube}}
	if pc.URL == "" && pc.Service == nil {
		k := &prom.KubeletSampler{Nodes: prom.KubeNodes{Kube: clients.Kube}, Interval: pc.KubeletSampleInterval.Duration, Log: log}
		sctx, cancel := context.WithCancel(ctx)
		go func() { _ = k.Run(sctx) }()
		// cAdvisor stamps its readings at its own housekeeping (10-15 s): learn their spacing before the first window.
		log.Info("no Prometheus configured: sampling the kubelets' resource metrics", "interval", k.Interval)
		res, err := k.Calibrate(ctx, 90*time.Second)
		if err != nil {
			cancel()
			return nil, nil, nil, nil, err
		}
		log.Info("kubelet resource metrics", "resolution", res.Effective, "rateRange", res.RateRange(), "notes", res.Notes)
		rc.collect, rc.lead, rc.leadFn = k.Collect, res.RateRange(), func() time.Duration { return k.Resolution().RateRange() }
		facts := &results.PromFacts{Source: prom.SourceKubelet, ScrapeInterval: res.Effective, RateRange: res.RateRange()}
		notes := append([]string{"no Prometheus configured: resource figures come from the kubelets' /metrics/resource sampled every " + res.Scrape.String()}, res.Notes...)
		return rc, facts, notes, cancel, nil
	}
	cc := prom.ClientConfig{URL: pc.URL, BearerTokenFile: pc.BearerTokenFile, CAFile: pc.CAFile, InsecureSkipVerify: pc.InsecureSkipVerify}
	if svc := pc.Service; svc != nil && pc.URL == "" {
		cc.ServiceNamespace, cc.ServiceName, cc.ServicePort, cc.ServiceScheme, cc.Rest = svc.Namespace, svc.Name, svc.Port, svc.Scheme, clients.Config
	}
	api, err := prom.NewAPI(cc)
	if err != nil {
		return nil, nil, nil, nil, badInput(err)
	}
	iv, err := prom.DetectInterval(ctx, api, retry, pc.ScrapeInterval.Duration, time.Now())
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("prometheus: %w", err)
	}
	for _, n := range iv.Notes {
		log.Warn("prometheus", "note", n)
	}
	c := &prom.Collector{API: api, Interval: iv, Retry: retry}
	rc.collect, rc.lead = c.Collect, iv.RateRange()
	addr, _ := cc.Address()
	facts := &results.PromFacts{URL: addr, Source: prom.SourcePrometheus, ScrapeInterval: iv.Effective, RateRange: iv.RateRange()}
	var notes []string
	if iv.Effective != iv.Scrape {
		notes = append(notes, fmt.Sprintf("cAdvisor samples are %s apart (scrape interval %s): CPU min/max use rates over %s", iv.Effective, iv.Scrape, iv.RateRange()))
	}
	return rc, facts, notes, func() {}, nil
}

// resolveCluster reads, before anything is changed, what the run must know of the cluster: the Istio control plane
// serving the app (spec.istio.revision, or the only/default one; with several and no default the run refuses to guess:
// exit 2) and the cluster DNS domain for the app's FQDNs (spec.workload.clusterDomain, else the kubelets' clusterDomain,
// else cluster.local with a warning).
func resolveCluster(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, plan scenario.Plan, log *slog.Logger) (mesh.IstioInfo, error) {
	info, err := mesh.Detect(ctx, clients, s.Spec.Istio.Revision)
	if err != nil {
		log.Warn("detect istio", "err", err)
	}
	for _, p := range info.Problems {
		log.Warn("detect istio", "problem", p)
	}
	needIstio := false
	for _, c := range plan.Cases {
		needIstio = needIstio || mesh.NeedsIstio(c.Mode)
	}
	if info.RevisionError != "" && needIstio {
		return info, badInput(fmt.Errorf("choose the Istio control plane: %s (nothing was changed in the cluster)", info.RevisionError))
	}
	if len(plan.Cases) > 0 && s.Spec.Workload.ClusterDomain == "" {
		d, err := kube.DetectClusterDomain(ctx, clients.Kube)
		if err != nil {
			d = kube.DefaultClusterDomain
			log.Warn("cluster DNS domain not detected: using "+d+" (set spec.workload.clusterDomain if the cluster uses another)", "err", err)
		}
		s.Spec.Workload.ClusterDomain = d
	}
	return info, nil
}

// clusterFacts gathers run.json's cluster facts; what cannot be read is logged and left empty.
func clusterFacts(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, ist mesh.IstioInfo, log *slog.Logger) results.ClusterFacts {
	f := results.ClusterFacts{Profile: string(s.Spec.Profile), ClusterDomain: s.Spec.Workload.ClusterDomain}
	if v, err := clients.Kube.Discovery().ServerVersion(); err == nil {
		f.KubernetesVersion = v.GitVersion
	} else {
		log.Warn("kubernetes version", "err", err)
	}
	nodes, err := clients.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Warn("list nodes", "err", err)
	} else {
		for _, n := range nodes.Items {
			nf := results.NodeFacts{Name: n.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion, KernelVersion: n.Status.NodeInfo.KernelVersion,
				OSImage: n.Status.NodeInfo.OSImage, ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion,
				CPU: n.Status.Allocatable.Cpu().String(), Memory: n.Status.Allocatable.Memory().String()}
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					nf.InternalIP = a.Address
				}
			}
			f.Nodes = append(f.Nodes, nf)
		}
		sort.Slice(f.Nodes, func(i, j int) bool { return f.Nodes[i].Name < f.Nodes[j].Name })
	}
	f.Istio = istioFacts(ist)
	return f
}

// workloadsAdapter is workloads.Deployer as the runner's Workloads.
type workloadsAdapter struct {
	d       *workloads.Deployer
	s       *scenario.Scenario
	timeout time.Duration
}

func (a *workloadsAdapter) Ensure(ctx context.Context, topo scenario.Topology) (runner.Target, error) {
	t, err := a.d.Ensure(ctx, a.s, topo)
	if err != nil {
		return runner.Target{}, err
	}
	return runner.Target{
		Topology: t.Topology, Namespaces: t.Namespaces, EntryNamespace: t.EntryNamespace, EntryService: t.EntryService,
		EntryURL: t.EntryURL, Headers: t.Headers, AppSelector: t.AppSelector, Services: t.Services, Handle: t,
		Facts: map[string]string{
			"app": string(t.App), "namespaces": strings.Join(t.Namespaces, ","), "services": strconv.Itoa(len(t.Services)),
			"replicas": strconv.Itoa(topo.Replicas), "app-pods": strconv.Itoa(t.ExpectedPods()), "entry-url": t.EntryURL,
		},
	}, nil
}

func (a *workloadsAdapter) WaitReady(ctx context.Context, t runner.Target) error {
	return a.d.WaitReady(ctx, t.Handle.(workloads.Target), a.timeout)
}

func (a *workloadsAdapter) Teardown(ctx context.Context, t runner.Target) error {
	return a.d.Teardown(ctx, t.Handle.(workloads.Target))
}

// meshAdapter is mesh.Switcher as the runner's Mesh.
type meshAdapter struct {
	sw      *mesh.Switcher
	wp      scenario.Waypoint
	timeout time.Duration
	last    mesh.Transition
	standIn bool
	rootNS  string // mesh config rootNamespace (mesh-wide PeerAuthentication)
}

func (a *meshAdapter) Apply(ctx context.Context, t runner.Target, mode scenario.Mode) (map[string]string, error) {
	tr, err := a.sw.Apply(ctx, t.Handle.(workloads.Target), mode, a.wp)
	a.last = tr
	facts := map[string]string{"mode-from": string(tr.From)}
	if len(tr.Restarted) > 0 {
		facts["restarted"] = strings.Join(tr.Restarted, ",")
	}
	return facts, err
}

func (a *meshAdapter) Verify(ctx context.Context, t runner.Target, mode scenario.Mode) (map[string]string, error) {
	v, err := a.sw.Verify(ctx, t.Handle.(workloads.Target), mode, a.wp, a.timeout)
	facts := a.last.Timings(&v)
	for k, d := range facts {
		delete(facts, k)
		facts["switch-"+k] = d
	}
	facts["verified-pods"] = strconv.Itoa(len(v.Pods))
	if len(v.Waypoints) > 0 {
		facts["waypoints"] = strconv.Itoa(len(v.Waypoints))
	}
	if v.StandIn {
		facts["data-plane"] = results.DataPlaneStandIn
		a.standIn = true
	}
	if r := a.sw.Revision; r != "" && mesh.NeedsIstio(mode) {
		facts["istio-revision"] = r
	}
	facts["mtls"] = a.mtls(ctx, t.Namespaces, mode)
	if err == nil && !v.OK() {
		err = fmt.Errorf("%d pods, problems: %s", len(v.Pods), strings.Join(v.Problems, "; "))
	}
	return facts, err
}

// mtls is the effective PeerAuthentication mode of the app's namespaces in mode (what the measured traffic had to
// satisfy): "none (no mesh)" in mode none.
func (a *meshAdapter) mtls(ctx context.Context, namespaces []string, mode scenario.Mode) string {
	if !mesh.NeedsIstio(mode) {
		return "none (no mesh)"
	}
	ms, err := mesh.DetectMTLS(ctx, a.sw.Clients.Istio, a.rootNS, namespaces)
	if err != nil {
		return "unknown: " + err.Error()
	}
	return mesh.SummarizeMTLS(ms)
}

func (a *meshAdapter) Restore(ctx context.Context) error {
	_, err := a.sw.Restore(ctx)
	return err
}

// loadAdapter is loadgen.Cluster as the runner's LoadGenerator.
type loadAdapter struct {
	c    *loadgen.Cluster
	spec scenario.LoadSpec
	// login returns the target with the headers the app needs (bank-of-anthos: the demo user's session cookie,
	// without which the frontend answers every request with a redirect to /login and the load measures nothing). It
	// sends its request with agent, from a load client pod: through the data plane of the mode, as the load does.
	login func(ctx context.Context, t workloads.Target, agent workloads.AgentExec) (workloads.Target, error)
	// headers are login's headers per topology, taken after every mode switch (pods restarted, data plane new).
	headers map[string]map[string]string
}

func (a *loadAdapter) Prepare(ctx context.Context, t runner.Target, mode scenario.Mode) error {
	if err := a.c.Prepare(ctx, t.EntryNamespace, mode); err != nil {
		return err
	}
	if a.login == nil {
		return nil
	}
	wt, err := a.login(ctx, t.Handle.(workloads.Target), func(ctx context.Context, args []string) ([]byte, error) {
		return a.c.ExecAgent(ctx, t.EntryNamespace, mode, args)
	})
	if err != nil {
		return err
	}
	if a.headers == nil {
		a.headers = map[string]map[string]string{}
	}
	a.headers[t.Topology] = wt.Headers
	return nil
}

func (a *loadAdapter) Run(ctx context.Context, t runner.Target, req runner.LoadRequest) (runner.LoadResult, error) {
	spec := loadgen.Spec{
		URL: t.EntryURL, Connections: a.spec.Connections, Duration: req.Window, WarmUp: req.LeadIn, CoolDown: req.CoolDown,
		PayloadBytes: a.spec.PayloadBytes, Headers: kube.MergeLabels(t.Headers, a.headers[t.Topology]), Jitter: a.spec.Jitter, Uniform: a.spec.Uniform, Clients: a.spec.Clients,
	}
	if !req.Case.QPS.Max {
		spec.QPS = req.Case.QPS.Value
	}
	res, err := a.c.Run(ctx, t.EntryNamespace, req.Case.Mode, spec)
	if err != nil {
		return runner.LoadResult{}, err
	}
	var clients []string
	for _, c := range res.Clients {
		clients = append(clients, fmt.Sprintf("%s %s..%s %.1f qps", c.Client, c.Start.Format(time.RFC3339Nano), c.End.Format(time.RFC3339Nano), c.ActualQPS))
	}
	return runner.LoadResult{
		Window:   results.Window{Kind: results.WindowLoad, Start: res.Start, End: res.End},
		Samples:  res.Samples(results.Sample{}),
		Requests: res.Requests, Errors: res.Errors, Notes: res.Notes,
		Facts: map[string]string{
			"achieved-qps": strconv.FormatFloat(res.ActualQPS, 'f', 1, 64), "error-rate": strconv.FormatFloat(res.ErrorRate(), 'f', 3, 64) + "%",
			"load-clients": strings.Join(clients, "; "),
		},
	}, nil
}

func (a *loadAdapter) Teardown(ctx context.Context, t runner.Target) error {
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
