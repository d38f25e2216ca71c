package netbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	netcol "github.com/meshbench/meshbench/collectors/net"
	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// ResourceCollector reads CPU and memory of pod sets over a window (prom.Collector or prom.KubeletSampler).
type ResourceCollector interface {
	Collect(ctx context.Context, w results.Window, sets []prom.PodSet) (prom.Collected, error)
}

// Store records finished cases (results.Store).
type Store interface {
	AppendCase(res results.CaseResult, samples []results.Sample) error
}

// Deps are the adapters a run talks to.
type Deps struct {
	Kube kubernetes.Interface
	Exec kube.Execer
	// Resources is nil when resource use is not measured.
	Resources ResourceCollector
	Store     Store
	Log       *slog.Logger
	// Clock is the run's time: window bounds, the idle and retry pauses and the polls' intervals (nil = the wall
	// clock). Tests pass a fake whose timers fire at once.
	Clock clock.Clock
}

// Config is one run, fully resolved.
type Config struct {
	RunID     string
	Namespace string
	CNI       scenario.CNI
	Images    Images
	// RunDir receives raw/<path>-<test>-<n>.json; "" keeps no raw output.
	RunDir string
	// Keep leaves the namespace in place (for inspection or the iperf3 comparison script).
	Keep bool
	// ReadyTimeout bounds waiting for the pods; DeleteTimeout the namespace deletion.
	ReadyTimeout, DeleteTimeout time.Duration
	// Confidence of the intervals (0.95).
	Confidence float64
	// RateRange is the resource collector's rate range (0 = unknown: no lead-in, no attribution check). The idle
	// window follows a quiet lead-in this long; a case's resource window starts this long (at most half the case)
	// after its traffic did, and a case shorter than two rate ranges gets no CPU figures (see caseWindow).
	RateRange time.Duration
	// IdleWindow is the idle measurement (pods deployed, no traffic); 0 means samples x duration, the length of
	// one case's traffic.
	IdleWindow time.Duration
}

func (c Config) idleWindow() time.Duration {
	if c.IdleWindow > 0 {
		return c.IdleWindow
	}
	return time.Duration(c.CNI.Samples) * c.CNI.Duration.Duration
}

// run is the state of one Run.
type run struct {
	cfg    Config
	d      Deps
	objs   Objects
	cases  []Case
	report *Report

	pods    map[Role]*corev1.Pod    // Ready, verified pods
	nodes   map[string]prom.NodeRef // the cluster's nodes, to name the test nodes in scrape labels
	broken  map[Role]error          // pods that failed to start or are misplaced
	service *corev1.Service

	// cpuLeftOut are the cases whose CPU figures were left out: too short to be attributable (see caseWindow).
	cpuLeftOut []string

	mu        sync.Mutex
	nodeNotes []string // why a test node's CPU and memory are absent, once per run
	// recorded and recSamples are what the recorder stored, in order: the report's rows are computed from them
	// exactly as from the run directory (results.Summarize, results.CNIRows).
	recorded   []results.CaseResult
	recSamples []results.Sample
}

// Run deploys the test pods, runs every case, records the results and deletes the namespace (also on failure and
// when ctx is cancelled). The report is returned even with an error, holding what was measured.
func Run(ctx context.Context, cfg Config, d Deps) (*Report, error) {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Confidence == 0 {
		cfg.Confidence = results.DefaultConfidence
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 3 * time.Minute
	}
	if cfg.DeleteTimeout == 0 {
		cfg.DeleteTimeout = 3 * time.Minute
	}
	r := &run{cfg: cfg, d: d, pods: map[Role]*corev1.Pod{}, broken: map[Role]error{},
		report: &Report{RunID: cfg.RunID, RunDir: cfg.RunDir, Namespace: cfg.Namespace, Confidence: cfg.Confidence}}
	err := r.execute(ctx)
	r.mu.Lock()
	sum := results.Summarize(results.RunMeta{RunID: cfg.RunID}, r.recSamples, r.recorded, results.SummaryOptions{Confidence: cfg.Confidence})
	r.mu.Unlock()
	r.report.Rows, r.report.Resources = results.CNIRows(sum), results.CNIResourceRows(sum)
	if w := cfg.idleWindow(); len(r.report.Resources) > 0 && cfg.RateRange > 0 && w < 3*cfg.RateRange {
		r.report.Notes = append(r.report.Notes, fmt.Sprintf(
			"resource windows (%s per case) are shorter than 3 rate ranges (%s): CPU min/max are coarse and may not bracket the average; use more samples or a longer duration for resource figures",
			w, 3*cfg.RateRange))
	}
	r.report.Notes = append(r.report.Notes, r.nodeNotes...)
	if len(r.cpuLeftOut) > 0 {
		r.report.Notes = append(r.report.Notes, fmt.Sprintf(
			"CPU of %d case(s) not recorded (%s): a case's traffic (samples x duration = %s) must last at least two rate ranges (%s) for its CPU figures to see only its own traffic; lengthen cni.duration or samples",
			len(r.cpuLeftOut), strings.Join(r.cpuLeftOut, ", "), time.Duration(cfg.CNI.Samples)*cfg.CNI.Duration.Duration, 2*cfg.RateRange))
	}
	return r.report, err
}

func (r *run) execute(ctx context.Context) (err error) {
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return err
	}
	pl, err := ChoosePlacement(r.cfg.CNI.Placement, nodes)
	r.report.Placement = pl
	if err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	r.cases = Plan(r.cfg.CNI, pl)
	r.clusterFacts(ctx, nodes, pl)
	r.nodes = map[string]prom.NodeRef{}
	for i := range nodes {
		r.nodes[nodes[i].Name] = prom.NodeRefOf(&nodes[i])
	}
	r.objs = Objects{Images: r.cfg.Images, Namespace: r.cfg.Namespace, RunID: r.cfg.RunID, Placement: pl,
		Host: r.runs(scenario.CNIPathHost), Remote: r.runs(scenario.CNIPathCrossNode), Service: r.runs(scenario.CNIPathService)}

	r.d.Log.Info("creating the run namespace", "namespace", r.cfg.Namespace, "nodeA", pl.ClientNode, "nodeB", pl.ServerNode)
	created, err := createNamespace(ctx, r.d.Clock, r.d.Kube, r.objs.NamespaceObject())
	if created {
		// Registered as soon as the namespace exists, before the ServiceAccount wait can fail (Ctrl-C, a slow
		// controller-manager); a namespace that already existed (Create failed) is never ours to delete.
		defer r.finalize(ctx, &err)
	}
	if err != nil {
		return err
	}

	rec := r.startRecorder(ctx)
	defer func() { err = errors.Join(err, rec.wait()) }()

	if err := r.deploy(ctx); err != nil {
		r.failAll(rec, err)
		return err
	}
	for _, c := range r.cases {
		if c.SkipReason != "" {
			rec.submit(pending{res: results.CaseResult{CaseID: c.ID(), Status: results.StatusSkipped, Reason: c.SkipReason,
				Start: r.d.Clock.Now().UTC(), End: r.d.Clock.Now().UTC(), Facts: c.Labels()}})
		}
	}
	if err := r.idle(ctx, rec); err != nil {
		return err
	}
	var failed []string
	for _, c := range r.cases {
		if c.SkipReason != "" {
			continue
		}
		status := r.runCase(ctx, c, rec)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted during %s: %w", c.ID(), ctx.Err())
		}
		if status == RowFailed {
			failed = append(failed, c.ID())
		}
	}
	if len(failed) > 0 {
		return &CasesFailedError{Cases: failed}
	}
	return nil
}

// failAll records every planned case as failed (or skipped) when the test pods could not be deployed, so no cell is
// left empty without a reason.
func (r *run) failAll(rec *recorder, err error) {
	if errors.Is(err, context.Canceled) {
		return // interrupted: nothing was measured, nothing to claim
	}
	now := r.d.Clock.Now().UTC()
	for _, c := range r.cases {
		res := results.CaseResult{CaseID: c.ID(), Start: now, End: now, Status: results.StatusFailed, Reason: "deploy: " + err.Error(),
			Facts: c.Labels()}
		if c.SkipReason != "" {
			res.Status, res.Reason = results.StatusSkipped, c.SkipReason
		}
		rec.submit(pending{res: res})
	}
}

// CasesFailedError reports cases without any successful sample (their reasons are in the report and cases.jsonl).
type CasesFailedError struct{ Cases []string }

func (e *CasesFailedError) Error() string {
	return fmt.Sprintf("%d case(s) failed: %s (reasons in the table and cases.jsonl)", len(e.Cases), strings.Join(e.Cases, ", "))
}

// runs reports whether the plan runs any case on the path.
func (r *run) runs(p scenario.CNIPath) bool {
	for _, c := range r.cases {
		if c.Path == p && c.SkipReason == "" {
			return true
		}
	}
	return false
}

func (r *run) listNodes(ctx context.Context) ([]corev1.Node, error) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	l, err := r.d.Kube.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return l.Items, nil
}

// finalize deletes the namespace with a fresh context: it runs after success, failure and Ctrl-C alike.
func (r *run) finalize(ctx context.Context, errp *error) {
	if r.cfg.Keep {
		r.report.Notes = append(r.report.Notes, fmt.Sprintf("namespace %s kept (--keep): delete it with `kubectl delete namespace %s`", r.cfg.Namespace, r.cfg.Namespace))
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.DeleteTimeout)
	defer cancel()
	r.d.Log.Info("deleting the run namespace", "namespace", r.cfg.Namespace)
	if err := DeleteNamespace(cctx, r.d.Kube, r.cfg.Namespace); err != nil {
		*errp = errors.Join(*errp, fmt.Errorf("cleanup: %w (find leftovers with the label %s=%s)", err, kube.RunLabel, r.cfg.RunID))
	}
}

// idle measures the resource use with every pod deployed and no traffic.
func (r *run) idle(ctx context.Context, rec *recorder) error {
	if r.d.Resources == nil {
		return nil
	}
	// The deploy's exec probes and API calls are activity in the test pods. Every CPU rate of a window looks one
	// rate range back from its point, and a window shorter than the rate range has its CPU average stretched to the
	// rate range before its end: both reach at most one rate range before the window's start, so one rate range of
	// quiet before it is exactly what keeps the idle figures idle (collectors/prom: the measured condition holds for
	// one rate range before a window starts).
	lead, d := r.cfg.RateRange, r.cfg.idleWindow()
	r.d.Log.Info("idle window: pods deployed, no traffic", "leadIn", lead, "duration", d)
	if err := kube.Sleep(ctx, r.d.Clock, lead); err != nil {
		return fmt.Errorf("interrupted before the idle window: %w", err)
	}
	start := r.d.Clock.Now()
	if err := kube.Sleep(ctx, r.d.Clock, d); err != nil {
		return fmt.Errorf("interrupted during the idle window: %w", err)
	}
	w := results.Window{Kind: results.WindowIdle, Start: start.UTC(), End: r.d.Clock.Now().UTC()}
	var sets []labelledSet
	var all []Role
	for _, p := range r.cfg.CNI.Paths {
		if r.runs(p) {
			sets = append(sets, labelledSet{set: r.podSet(p), labels: map[string]string{LabelPath: string(p)}})
			all = append(all, pathRoles(p)...)
		}
	}
	sets = append(sets, labelledSet{set: r.nodeSet(all), labels: map[string]string{LabelPath: "all"}})
	rec.submit(pending{res: results.CaseResult{CaseID: "idle", Status: results.StatusOK, Start: w.Start, End: w.End,
		Windows: []results.Window{w}}, window: &w, sets: sets})
	return nil
}

// runCase runs the samples of one case back to back (one resource window covers them), records it and returns its
// status (RowOK, RowPartial, RowFailed).
func (r *run) runCase(ctx context.Context, c Case, rec *recorder) string {
	res := results.CaseResult{CaseID: c.ID(), Facts: c.Labels()}
	if err := r.caseBroken(c); err != nil {
		res.Status, res.Reason = results.StatusFailed, err.Error()
		res.Start, res.End = r.d.Clock.Now().UTC(), r.d.Clock.Now().UTC()
		rec.submit(pending{res: res})
		return RowFailed
	}
	tg := r.target(c)
	for k, v := range tg.facts() {
		res.Facts[k] = v
	}
	r.d.Log.Info("running", "case", c.ID(), "tool", c.Tool, "samples", r.cfg.CNI.Samples, "duration", r.cfg.CNI.Duration.Duration)
	start := r.d.Clock.Now()
	var outs []Outcome
	var samples []results.Sample
	for n := 1; n <= r.cfg.CNI.Samples; n++ {
		o, w, raw := r.sample(ctx, c, tg, n)
		if ctx.Err() != nil && o.Err != nil {
			break // an interrupted sample is not a measurement
		}
		outs = append(outs, o)
		res.Windows = append(res.Windows, w)
		if raw != "" {
			res.Facts["raw."+strconv.Itoa(n)] = raw
		}
		if o.Result != nil {
			samples = append(samples, MeasurementSamples(c, n, w, *o.Result)...)
		}
	}
	end := r.d.Clock.Now()
	if len(outs) == 0 && ctx.Err() != nil {
		return RowFailed // interrupted before a sample finished: nothing to record
	}
	status, reason, warnings := caseStatus(outs)
	p := pending{samples: samples} // p.res once res is complete, below
	if len(samples) > 0 {
		p.window, p.noCPU = r.caseWindow(start, end)
		p.sets = []labelledSet{{set: r.podSet(c.Path), labels: c.Labels()}, {set: r.nodeSet(pathRoles(c.Path)), labels: c.Labels()}}
		if p.noCPU != "" {
			warnings = append(warnings, p.noCPU)
			r.cpuLeftOut = append(r.cpuLeftOut, c.ID())
		}
	}
	res.Start, res.End = start.UTC(), end.UTC()
	switch status {
	case RowOK:
		res.Status = results.StatusOK
	case RowPartial:
		res.Status, res.Reason = results.StatusOK, results.CNIPartialPrefix+reason
	default:
		res.Status, res.Reason = results.StatusFailed, reason
	}
	if ctx.Err() != nil && len(outs) < r.cfg.CNI.Samples {
		res.Reason = strings.TrimPrefix(res.Reason+"; ", "; ") + fmt.Sprintf("interrupted after %d of %d samples", len(outs), r.cfg.CNI.Samples)
	}
	if len(warnings) > 0 {
		res.Facts["warnings"] = strings.Join(warnings, "; ")
	}
	p.res = res
	rec.submit(p)
	return status
}

// caseWindow is the resource window of a case whose traffic ran from start to end, and, when its CPU figures
// would see more than this case's traffic, why they are left out ("" otherwise).
//
// The window starts trim = min(rate range, half the case) after the traffic did. Every CPU rate of the window looks
// one rate range back from its point, and a window shorter than the rate range has its CPU average stretched to the
// rate range before its end, so the CPU figures reach back to window start - rate range at the earliest. That stays
// inside this case (after the previous case's traffic) only when trim >= rate range, that is when the case lasts at
// least two rate ranges; then the window (case - rate range) is at least one rate range long. Cutting the window to
// whole seconds only moves its start later and its end earlier, and the stretched average still begins at or after
// end - 1 s - rate range >= start + rate range - 1 s, inside the case. Memory is a gauge read inside the window and
// stays attributable, so it is still collected.
func (r *run) caseWindow(start, end time.Time) (*results.Window, string) {
	rate, elapsed := r.cfg.RateRange, end.Sub(start)
	trim := min(rate, elapsed/2)
	w := &results.Window{Kind: results.WindowTest, Start: start.Add(trim).UTC(), End: end.UTC()}
	if rate <= 0 || r.d.Resources == nil || elapsed >= 2*rate {
		return w, ""
	}
	return w, fmt.Sprintf("case window %s is shorter than the rate range %s: CPU not attributable to this test (it would include earlier traffic; the case needs samples x duration >= %s); lengthen cni.duration or samples",
		w.End.Sub(w.Start), rate, 2*rate)
}

// caseBroken says why a case cannot run although it was planned (a pod it needs is broken).
func (r *run) caseBroken(c Case) error {
	var errs []error
	for _, role := range r.rolesOf(c) {
		if err := r.broken[role]; err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", role, err))
		} else if r.pods[role] == nil {
			errs = append(errs, fmt.Errorf("pod %s was not deployed", role))
		}
	}
	if c.Path == scenario.CNIPathService && r.service == nil {
		errs = append(errs, errors.New("the Service was not created"))
	}
	if c.Tool == "" {
		errs = append(errs, errors.New("no tool for the test"))
	}
	return errors.Join(errs...)
}

// rolesOf are the pods a case uses: client first, server second.
func (r *run) rolesOf(c Case) []Role {
	client := RoleClient
	if c.Tool == netcol.ToolBuiltin {
		client = RoleClientAgent
	}
	switch c.Path {
	case scenario.CNIPathSameNode:
		return []Role{client, RoleServerLocal}
	case scenario.CNIPathHost:
		return []Role{RoleHostClient, RoleHostServer}
	default:
		return []Role{client, RoleServerRemote}
	}
}

// pathRoles are the pods a path's cases may use, for resource use.
func pathRoles(p scenario.CNIPath) []Role {
	switch p {
	case scenario.CNIPathSameNode:
		return []Role{RoleClient, RoleClientAgent, RoleServerLocal}
	case scenario.CNIPathHost:
		return []Role{RoleHostClient, RoleHostServer}
	default:
		return []Role{RoleClient, RoleClientAgent, RoleServerRemote}
	}
}

// podSet is the path's pods, for resource use.
func (r *run) podSet(p scenario.CNIPath) prom.PodSet {
	var deployed []string
	for _, role := range pathRoles(p) {
		if r.pods[role] != nil {
			deployed = append(deployed, string(role))
		}
	}
	return prom.PodSet{Component: results.ComponentCNITest, Pods: map[string][]string{r.cfg.Namespace: deployed}}
}

// nodeSet is the whole-node component of the nodes the deployed pods among roles run on (same-node: node A only;
// the other paths: A and B), each measured on its own: never the cluster's other nodes.
func (r *run) nodeSet(roles []Role) prom.PodSet {
	var names []string
	for _, role := range roles {
		if p := r.pods[role]; p != nil && p.Spec.NodeName != "" && !slices.Contains(names, p.Spec.NodeName) {
			names = append(names, p.Spec.NodeName)
		}
	}
	slices.Sort(names)
	set := prom.NodeSet()
	for _, n := range names {
		ref, ok := r.nodes[n]
		if !ok {
			ref = prom.NodeRef{Name: n}
		}
		set.Nodes = append(set.Nodes, ref)
	}
	return set
}

// target is where a case's client runs and what it connects to.
type target struct {
	client    Role
	container string
	host      string
	ports     Ports
	expect    Expect
	server    Role
}

func (t target) facts() map[string]string {
	return map[string]string{"client": string(t.client), "server": string(t.server), "target": t.host,
		"backend": t.expect.Backend}
}

func (r *run) target(c Case) target {
	roles := r.rolesOf(c)
	t := target{client: roles[0], server: roles[1], container: ContainerNet, ports: PodPorts}
	if c.Tool == netcol.ToolBuiltin {
		t.container = ContainerAgent
	}
	server := r.pods[t.server]
	t.host = server.Status.PodIP
	t.expect = Expect{Dialled: server.Status.PodIP, Backend: server.Status.PodIP}
	switch c.Path {
	case scenario.CNIPathService:
		t.host = r.service.Spec.ClusterIP
		t.expect = Expect{Dialled: r.service.Spec.ClusterIP, Backend: server.Status.PodIP, Service: true}
	case scenario.CNIPathHost:
		t.ports = HostPorts
	}
	return t
}

// spec is the collectors/net invocation of one case.
func (r *run) spec(c Case, t target) netcol.Spec {
	n := r.cfg.CNI
	s := netcol.Spec{Test: c.Test, Tool: c.Tool, Host: t.host, Duration: n.Duration.Duration, Omit: n.Omit.Duration,
		Streams: n.Streams, Bitrate: n.UDPBitrate, PacketBytes: n.UDPPacketBytes, RequestBytes: n.RequestBytes,
		ResponseBytes: n.ResponseBytes, Connections: 1}
	switch c.Tool {
	case netcol.ToolIperf3:
		s.Port, s.ServerOutput = t.ports.Iperf3, true
	case netcol.ToolNetperf:
		s.Port, s.DataPort = t.ports.Netserver, t.ports.NetperfData
	case netcol.ToolBuiltin:
		s.Port = t.ports.Echo
		s.LocalPorts = crrLocalPorts[c.Path]
	}
	return s
}

// crrLocalPorts keep the built-in TCP_CRR client's ports of the cross-node and service paths apart: both reach
// server-remote from the same client pod, and a DNATed connection whose reply tuple equals a direct one still in
// conntrack TIME_WAIT is dropped (insert_failed), which shows up as 1 s SYN retransmits in the Service cell.
var crrLocalPorts = map[scenario.CNIPath]string{
	scenario.CNIPathCrossNode: "33000-48999",
	scenario.CNIPathService:   "49000-64999",
}

// connectRetries is how often a sample whose connection could not even be set up is retried (kube-proxy rules
// still syncing, an iperf3 server finishing the previous test). Nothing was measured, so retrying is safe.
const connectRetries = 3

// sample runs sample n of a case: exec, keep the raw output, parse, check the connection.
func (r *run) sample(ctx context.Context, c Case, t target, n int) (Outcome, results.Window, string) {
	spec := r.spec(c, t)
	if err := spec.Validate(); err != nil {
		return Outcome{N: n, Err: err}, results.Window{Kind: results.WindowTest}, ""
	}
	args := netcol.Args(spec)
	var (
		w      results.Window
		stdout []byte
		res    netcol.Result
		err    error
		raw    string
	)
	for attempt := 1; ; attempt++ {
		w, stdout, err = r.execTest(ctx, t, args, spec)
		raw = r.keepRaw(c, n, spec.Tool, stdout, err)
		if err == nil {
			res, err = netcol.Parse(spec, stdout)
		}
		if err == nil || attempt >= connectRetries || ctx.Err() != nil || !retryable(err) {
			break
		}
		r.d.Log.Warn("connection setup failed, retrying", "case", c.ID(), "sample", n, "attempt", attempt, "err", err)
		if kube.Sleep(ctx, r.d.Clock, 2*time.Second) != nil {
			// Interrupted in the pause: another exec would only fail with the context's error and overwrite the
			// raw output of the attempt that really failed.
			break
		}
	}
	if err != nil {
		return Outcome{N: n, Err: err}, w, raw
	}
	if err := CheckConnection(res, t.expect); err != nil {
		return Outcome{N: n, Err: fmt.Errorf("the connection did not take the %s path: %w", c.Path, err)}, w, raw
	}
	return Outcome{N: n, Result: &res}, w, raw
}

// execTest runs the tool and returns the test window (exactly around the exec). Output that parses wins over the
// exec error: iperf3 exits 1 on failures but explains them in its JSON.
func (r *run) execTest(ctx context.Context, t target, args []string, spec netcol.Spec) (results.Window, []byte, error) {
	timeout := spec.Duration + spec.Omit + time.Minute
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := r.d.Clock.Now()
	stdout, stderr, err := r.d.Exec.Exec(ectx, r.cfg.Namespace, string(t.client), t.container, args, nil)
	w := results.Window{Kind: results.WindowTest, Start: start.UTC(), End: r.d.Clock.Now().UTC()}
	if err != nil {
		if _, perr := netcol.Parse(spec, stdout); perr != nil {
			// The tool's own explanation first (iperf3 JSON error, netperf message), then the exec error.
			msg := strings.TrimSpace(string(stderr))
			if len(stdout) > 0 {
				return w, stdout, netcol.ClassifyStderr(spec.Tool, stderr, fmt.Errorf("%w (exec: %v)", perr, err))
			}
			if msg != "" {
				return w, stdout, netcol.ClassifyStderr(spec.Tool, stderr, fmt.Errorf("%s: %w", oneLine(msg, 300), err))
			}
			return w, stdout, err
		}
	}
	return w, stdout, nil
}

// retryable tells connection-setup failures (nothing measured) from measurement failures, on the error's type:
// collectors/net reads the tool's report once and marks a connection that was never set up as a *SetupError; an
// exec that could not reach its pod (connection refused, no route on the way to the kubelet) measured nothing too.
func retryable(err error) bool {
	return netcol.IsSetupFailure(err) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH)
}

// keepRaw writes the tool output of a sample to raw/<path>-<test>-<n>.json (.txt for netperf) and returns the path
// relative to the run directory.
func (r *run) keepRaw(c Case, n int, tool netcol.Tool, stdout []byte, execErr error) string {
	if r.cfg.RunDir == "" {
		return ""
	}
	ext := ".json"
	if tool == netcol.ToolNetperf {
		ext = ".txt"
	}
	rel := filepath.Join("raw", fmt.Sprintf("%s-%s-%d%s", c.Path, c.Test, n, ext))
	data := stdout
	if len(data) == 0 && execErr != nil {
		data = []byte("exec failed: " + execErr.Error() + "\n")
	}
	if err := os.MkdirAll(filepath.Join(r.cfg.RunDir, "raw"), 0o755); err != nil {
		r.d.Log.Warn("keep raw output", "err", err)
		return ""
	}
	if err := os.WriteFile(filepath.Join(r.cfg.RunDir, rel), data, 0o644); err != nil {
		r.d.Log.Warn("keep raw output", "err", err)
		return ""
	}
	return rel
}
