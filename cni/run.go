package cni

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// ResourceCollector reads CPU and memory of pod sets over a window (collectors/prom's Collector or KubeletSampler,
// wired by orchestrate).
type ResourceCollector interface {
	Collect(ctx context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error)
}

// Deps are the adapters a bench talks to.
type Deps struct {
	Kube kubernetes.Interface
	Exec kube.Execer
	// Resources is nil when resource use is not measured.
	Resources ResourceCollector
	Log       *slog.Logger
	// Clock is the bench's time: window bounds, the retry pauses and the polls' intervals (nil = the wall clock).
	// Tests pass a fake whose timers fire at once.
	Clock clock.Clock
}

// Config is one run, fully resolved.
type Config struct {
	RunID     string
	Namespace string
	CNI       scenario.CNI
	Images    Images
	// RunDir receives raw/<path>-<test>-<n>.json (.txt, .err.txt: see rawName); "" keeps no raw output.
	RunDir string
	// Keep: the runner leaves the namespace in place (--keep, for inspection or the iperf3 comparison script);
	// the report says how to delete it.
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

// Bench is one pod network benchmark on a cluster: its cases (placement, skips, the RR tool) and the steps
// runner.Runner orders through orchestrate's adapters: Deploy, Measure, Resources and Teardown (also after Ctrl-C),
// called one at a time.
type Bench struct {
	cfg    Config
	d      Deps
	objs   objects
	cases  []pathTest
	report *Report

	created bool                      // the namespace was created by this bench (Teardown deletes it)
	pods    map[Role]*corev1.Pod      // Ready, verified pods
	nodes   map[string]podset.NodeRef // the cluster's nodes, to name the test nodes in scrape labels
	broken  map[Role]error            // pods that failed to start or are misplaced
	service *corev1.Service

	// cpuLeftOut are the cases whose CPU figures were left out: too short to be attributable (see caseWindow);
	// noCPU is why, per case ID, for Resources.
	cpuLeftOut []string
	noCPU      map[string]string
	cgroupCPU  map[string]bool // cases among cpuLeftOut whose cgroup-1s CPU was recorded
	nodeNotes  []string        // why a test node's CPU and memory are absent, once per run
}

// New lists the nodes, places the test pods and plans the cases (scenario's plan of the cni section with the skips
// the placement implies); nothing is created. The bench is returned with an error too: its report holds the
// placement that was refused.
func New(ctx context.Context, cfg Config, d Deps) (*Bench, error) {
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
	r := &Bench{cfg: cfg, d: d, pods: map[Role]*corev1.Pod{}, broken: map[Role]error{}, noCPU: map[string]string{}, cgroupCPU: map[string]bool{},
		report: &Report{RunID: cfg.RunID, RunDir: cfg.RunDir, Namespace: cfg.Namespace, Confidence: cfg.Confidence}}
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return r, err
	}
	pl, err := choosePlacement(r.cfg.CNI.Placement, nodes)
	r.report.Placement = pl
	if err != nil {
		return r, fmt.Errorf("placement: %w", err)
	}
	r.cases = plan(r.cfg.CNI, pl)
	r.clusterFacts(ctx, nodes, pl)
	r.nodes = map[string]podset.NodeRef{}
	for i := range nodes {
		r.nodes[nodes[i].Name] = podset.NodeRefOf(&nodes[i])
	}
	r.objs = objects{Images: r.cfg.Images, Namespace: r.cfg.Namespace, RunID: r.cfg.RunID, Placement: pl,
		Host: r.runs(scenario.CNIPathHost), Remote: r.runs(scenario.CNIPathCrossNode), Service: r.runs(scenario.CNIPathService)}
	return r, nil
}

// Cases are the bench's plan in the runner's Case shape: the idle window first (when resource use is measured), then
// every path x test in scenario's order, Skip set where the cluster cannot run it; each with its policy (one
// attempt; the idle case its window only, a path x test its samples back to back as its load).
func (r *Bench) Cases() []scenario.Case {
	var out []scenario.Case
	if r.d.Resources != nil {
		idle := r.cfg.idleWindow()
		out = append(out, scenario.Case{ID: scenario.CNIIdleCaseID, Kind: scenario.CaseCNI, Idle: true, Traffic: scenario.D(idle),
			Policy: scenario.CasePolicy{Idle: idle, Attempts: 1}})
	}
	traffic := time.Duration(r.cfg.CNI.Samples) * r.cfg.CNI.Duration.Duration
	for _, c := range r.cases {
		out = append(out, scenario.Case{ID: c.id(), Kind: scenario.CaseCNI, Path: c.Path, Test: c.Test, Samples: r.cfg.CNI.Samples,
			Traffic: scenario.D(traffic), Skip: c.SkipReason, Policy: scenario.CasePolicy{
				Load: &scenario.LoadPolicy{Window: traffic, BackToBack: true}, Attempts: 1,
				Facts: map[string]string{string(results.FactCNIPath): string(c.Path), string(results.FactCNITest): string(c.Test)},
			}})
	}
	for i := range out {
		out[i].Index = i + 1
		out[i].Switch = i == 0
	}
	return out
}

// Namespace is the run namespace; Created reports whether this bench created it (and Teardown deletes it).
func (r *Bench) Namespace() string { return r.cfg.Namespace }

// Created reports whether Deploy created the run namespace, also when it then failed.
func (r *Bench) Created() bool { return r.created }

// RateRange is the resource collector's rate range the bench was configured with.
func (r *Bench) RateRange() time.Duration { return r.cfg.RateRange }

// Deploy creates the run namespace and the test pods, picks the RR tool and verifies placement and listening
// servers. Pods that fail are remembered (their cases fail with the reason in Measure); an error is returned only
// when nothing can run. The facts are recorded with every case.
func (r *Bench) Deploy(ctx context.Context) (map[string]string, error) {
	pl := r.objs.Placement
	r.d.Log.Info("creating the run namespace", "namespace", r.cfg.Namespace, "nodeA", pl.ClientNode, "nodeB", pl.ServerNode)
	// created is kept as soon as the namespace exists, before the ServiceAccount wait can fail (Ctrl-C, a slow
	// controller-manager); a namespace that already existed (Create failed) is never ours to delete.
	created, err := createNamespace(ctx, r.d.Clock, r.d.Kube, r.objs.namespaceObject())
	r.created = r.created || created
	if err != nil {
		return nil, err
	}
	if err := r.deploy(ctx); err != nil {
		return nil, err
	}
	facts := map[string]string{string(results.FactNamespace): r.cfg.Namespace, string(results.FactNodeA): pl.ClientNode}
	if pl.ServerNode != "" {
		facts[string(results.FactNodeB)] = pl.ServerNode
	}
	return facts, nil
}

// Teardown deletes the run namespace when this bench created it, and waits until it is gone (ctx bounds it; at
// most DeleteTimeout).
func (r *Bench) Teardown(ctx context.Context) error {
	if !r.created {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.DeleteTimeout)
	defer cancel()
	r.d.Log.Info("deleting the run namespace", "namespace", r.cfg.Namespace)
	if err := deleteNamespace(cctx, r.d.Kube, r.cfg.Namespace); err != nil {
		return fmt.Errorf("cleanup: %w (find leftovers with the label %s=%s)", err, kube.RunLabel, r.cfg.RunID)
	}
	r.created = false
	return nil
}

// CasesFailedError reports cases without any successful sample (their reasons are in the report and cases.jsonl).
type CasesFailedError struct{ Cases []string }

func (e *CasesFailedError) Error() string {
	return fmt.Sprintf("%d case(s) failed: %s (reasons in the table and cases.jsonl)", len(e.Cases), strings.Join(e.Cases, ", "))
}

// Report is the bench's report with the rows computed from the run's summary (results.CNIRows: the computation
// the report's pod network section uses), the node totals over the test nodes (each host once) and the run's notes
// (Notes).
func (r *Bench) Report(sum results.Summary) *Report {
	rep := *r.report
	rep.Rows, rep.Resources = results.CNIRows(sum), results.CNIResourceRows(sum)
	rep.NodeTotals = results.CNINodeTotals(rep.Resources, rep.Facts.Nodes)
	rep.Notes = r.Notes()
	return &rep
}

// Facts are the cluster facts the bench read (Kubernetes version, CNI, MTU, nodes).
func (r *Bench) Facts() Facts { return r.report.Facts }

// NetworkImage is what the network image resolved to and its tools' versions (nil before Deploy).
func (r *Bench) NetworkImage() *results.NetworkImage { return r.report.NetworkImage }

// Notes are the run's notes: what deploying told (the RR tool, MTU, Service), coarse resource windows, nodes without
// figures, cases whose CPU was left out, a kept namespace. run.json records them.
func (r *Bench) Notes() []string {
	notes := slices.Clone(r.report.Notes)
	cfg := r.cfg
	if w := cfg.idleWindow(); r.d.Resources != nil && cfg.RateRange > 0 && w < 3*cfg.RateRange {
		notes = append(notes, fmt.Sprintf(
			"resource windows (%s per case) are shorter than 3 rate ranges (%s): CPU min/max are coarse and may not bracket the average; use more samples or a longer duration for resource figures",
			w, 3*cfg.RateRange))
	}
	notes = append(notes, r.nodeNotes...)
	notes = append(notes, results.SharedHostNotes(r.report.Facts.Nodes)...)
	if len(r.cpuLeftOut) > 0 {
		notes = append(notes, fmt.Sprintf(
			"CPU of %d case(s) not recorded (%s): a case's traffic (samples x duration = %s) must last at least two rate ranges (%s) for its CPU figures to see only its own traffic; lengthen cni.duration or samples",
			len(r.cpuLeftOut), strings.Join(r.cpuLeftOut, ", "), time.Duration(cfg.CNI.Samples)*cfg.CNI.Duration.Duration, 2*cfg.RateRange))
		if n := len(r.cgroupCPU); n > 0 {
			notes = append(notes, fmt.Sprintf("the %s source (the test pods' own cgroups, read every second) still gives the CPU of %d of them", results.CNISourceCgroup, n))
		}
	}
	if cfg.Keep && r.created {
		notes = append(notes, fmt.Sprintf("namespace %s kept (--keep): delete it with `kubectl delete namespace %s`", cfg.Namespace, cfg.Namespace))
	}
	return notes
}

// runs reports whether the plan runs any case on the path.
func (r *Bench) runs(p scenario.CNIPath) bool {
	for _, c := range r.cases {
		if c.Path == p && c.SkipReason == "" {
			return true
		}
	}
	return false
}

func (r *Bench) listNodes(ctx context.Context) ([]corev1.Node, error) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	l, err := r.d.Kube.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return l.Items, nil
}

// caseOf is the bench's case of a plan case (with its tool, known after Deploy).
func (r *Bench) caseOf(id string) (pathTest, bool) {
	for _, c := range r.cases {
		if c.id() == id {
			return c, true
		}
	}
	return pathTest{}, false
}
