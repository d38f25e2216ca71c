package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/meshbench/meshbench/hack/kwokfleet"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

type options struct {
	kubeconfig, prometheus, kwokDir, stateDir, out, meshbench   string
	image, targetImage, modes                                   string
	pods, namespaces, podsPerWorkload, podsPerNode, nodeMaxPods int
	window, readyTimeout                                        time.Duration
	qps                                                         int
	app, proxy                                                  Usage
	cleanupOnly                                                 bool
}

func main() {
	var o options
	stateDir := os.Getenv("MESHBENCH_CLUSTER_DIR")
	if stateDir == "" {
		stateDir = "/var/lib/meshbench/localcluster"
	}
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (cluster.env exports it)")
	flag.StringVar(&o.prometheus, "prometheus", os.Getenv("MESHBENCH_PROMETHEUS_URL"), "Prometheus URL")
	flag.StringVar(&o.stateDir, "state-dir", stateDir, "local cluster state dir: the stand-in cAdvisor's file_sd file goes to <dir>/prometheus-sd/")
	flag.StringVar(&o.kwokDir, "kwok-dir", filepath.Join(stateDir, "bin", "kwok"), "directory with kwok and kwok-stages (hack/istiodscale/build-kwok.sh)")
	flag.StringVar(&o.out, "out", "scale-out", "output directory (figures.json, figures.md, meshbench.log, the run, kwok.log)")
	flag.StringVar(&o.meshbench, "meshbench", "meshbench", "meshbench binary to run")
	flag.IntVar(&o.pods, "pods", 1000, "fake app pods")
	flag.IntVar(&o.namespaces, "namespaces", 60, "namespaces they are spread over")
	flag.IntVar(&o.podsPerWorkload, "pods-per-workload", 10, "replicas per Deployment (and Service)")
	flag.IntVar(&o.podsPerNode, "pods-per-node", 200, "pods per fake node (sets the node count)")
	flag.IntVar(&o.nodeMaxPods, "node-max-pods", 250, "pod capacity of a fake node (< 254: its pod CIDR is a /24)")
	flag.StringVar(&o.modes, "modes", "none,sidecar", "modes (none and sidecar; ambient is not covered: no istio-cni agent runs on a fake node)")
	flag.DurationVar(&o.window, "window", 20*time.Second, "idle and load window of each case")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 15*time.Minute, "time for the pods to be Ready (also meshbench's --ready-timeout)")
	flag.IntVar(&o.qps, "qps", 20, "load level against the real target")
	flag.StringVar(&o.image, "image", "172.30.0.1:5000/meshbench/pause:dev", "fake pods' image (never pulled)")
	flag.StringVar(&o.targetImage, "agent-image", os.Getenv("MESHBENCH_IMAGE_AGENT"), "meshbench-agent image: the real target and spec.images.agent (default: $MESHBENCH_IMAGE_AGENT, else profile localcluster's)")
	flag.Float64Var(&o.app.Millicores, "fake-app-millicores", 5, "stand-in cAdvisor: CPU of every fake app container")
	flag.Float64Var(&o.app.MiB, "fake-app-mib", 20, "stand-in cAdvisor: working set of every fake app container")
	flag.Float64Var(&o.proxy.Millicores, "fake-proxy-millicores", 3, "stand-in cAdvisor: CPU of every fake istio-proxy")
	flag.Float64Var(&o.proxy.MiB, "fake-proxy-mib", 40, "stand-in cAdvisor: working set of every fake istio-proxy")
	flag.BoolVar(&o.cleanupOnly, "cleanup-only", false, "only remove what earlier runs left and exit")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("mesh-scale failed", "err", err)
		stop()
		os.Exit(1)
	}
}

// harness is what the run holds.
type harness struct {
	o       options
	clients *kube.Clients
	fleet   kwokfleet.Fleet
	log     *slog.Logger
	sdFile  string

	mu   sync.Mutex
	pods map[string]*PodTimes // by UID
	// rolledOut is when each Deployment (ns/name) last turned rolled out; rolledOutNow its current state.
	rolledOut    map[string][]time.Time
	rolledOutNow map[string]bool
}

func run(ctx context.Context, o options, log *slog.Logger) (err error) {
	for _, m := range strings.Split(o.modes, ",") {
		if m != "none" && m != "sidecar" {
			return fmt.Errorf("mode %q: only none and sidecar (ambient needs istio-cni's redirection on the node, which no agent does on a fake node)", m)
		}
	}
	if o.pods < 1 || o.namespaces < 1 || o.podsPerWorkload < 1 || o.podsPerNode < 1 || o.podsPerNode >= o.nodeMaxPods || o.nodeMaxPods > 254 {
		return fmt.Errorf("need pods, namespaces, pods-per-workload >= 1 and 1 <= pods-per-node < node-max-pods <= 254")
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	clients, err := kube.NewClients(o.kubeconfig, "")
	if err != nil {
		return err
	}
	runID := newRunID()
	h := &harness{o: o, clients: clients, fleet: Fleet(clients.Kube, runID), log: log, pods: map[string]*PodTimes{},
		rolledOut: map[string][]time.Time{}, rolledOutNow: map[string]bool{},
		sdFile: filepath.Join(o.stateDir, "prometheus-sd", "meshscale.json")}

	// Leftovers of a killed earlier run first (also the whole job of -cleanup-only).
	kwokfleet.StopStaleKwok(out, o.kwokDir, log)
	if err := h.cleanup(ctx); err != nil {
		return fmt.Errorf("remove leftovers: %w", err)
	}
	if o.cleanupOnly {
		return h.verifyClean(ctx)
	}
	if o.targetImage == "" {
		s, err := scenario.Parse([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec: {profile: localcluster, workload: {app: fortio-chain}}\n"))
		if err != nil {
			return err
		}
		o.targetImage = s.Spec.Images.Agent
	}
	fig := Figures{Schema: FiguresSchema, RunID: runID, Started: time.Now().UTC(), Pods: o.pods, Namespaces: o.namespaces,
		Workloads: len(Layout(o.pods, o.namespaces, o.podsPerWorkload)), FakeNodes: kwokfleet.NodesFor(o.pods, o.podsPerNode),
		Modes: strings.Split(o.modes, ","), WindowSeconds: o.window.Seconds(), StandIns: []string{
			fmt.Sprintf("CPU and memory of the %d fake pods: a stand-in cAdvisor (fixed %.0fm / %.0f MiB per app container, %.0fm / %.0f MiB per istio-proxy), not measured; only the real target pod's figures are real",
				o.pods, o.app.Millicores, o.app.MiB, o.proxy.Millicores, o.proxy.MiB),
			"pod and container status of the fake pods: kwok's stages (Running and Ready at once, no container started, no readiness probe)",
			"load: against one real meshbench-agent server on a real node; the fake pods receive no traffic",
			"ambient: not covered (no istio-cni agent sets ambient.istio.io/redirection on a fake node's pods)",
		}}

	var kw *kwokfleet.Kwok
	runCtx, cancelRun := context.WithCancel(ctx)
	defer func() {
		cancelRun()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 8*time.Minute)
		defer cancel()
		log.Info("cleaning up: stand-in cAdvisor target, namespaces, fake nodes, kwok")
		cerr := h.cleanup(cctx)
		if serr := kw.Stop(); serr != nil {
			cerr = errors.Join(cerr, serr)
		}
		if cerr == nil {
			cerr = h.cleanup(cctx) // a lease kwok renewed between the node's deletion and its exit
		}
		if cerr == nil {
			cerr = h.verifyClean(cctx)
		}
		fig.Complete = err == nil && cerr == nil
		if e := errors.Join(err, cerr); e != nil {
			fig.Error = e.Error()
		}
		if werr := writeFigures(out, fig); werr != nil {
			cerr = errors.Join(cerr, werr)
		}
		err = errors.Join(err, cerr)
	}()

	log.Info("creating fake nodes", "nodes", fig.FakeNodes, "run", runID)
	if err := h.fleet.CreateNodes(ctx, fig.FakeNodes, o.nodeMaxPods); err != nil {
		return err
	}
	if kw, err = kwokfleet.StartKwok(ctx, o.kwokDir, out, o.kubeconfig); err != nil {
		return err
	}
	if err := h.fleet.WaitNodesReady(ctx, fig.FakeNodes, 2*time.Minute, kw); err != nil {
		return err
	}

	exp := NewExporter(o.app, o.proxy)
	exp.Also = h.track
	if err := exp.Watch(runCtx, clients.Kube, ScaleLabel); err != nil {
		return err
	}
	if err := h.watchDeployments(runCtx); err != nil {
		return err
	}
	addr, err := exp.Serve(runCtx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := h.writeSD(addr); err != nil {
		return err
	}
	if note := promScrapesSD(ctx, o.prometheus, h.sdFile); note != "" {
		fig.Notes = append(fig.Notes, note)
		log.Warn(note)
	}

	log.Info("applying the app", "pods", o.pods, "namespaces", o.namespaces, "workloads", fig.Workloads)
	applier := kube.Applier{Dynamic: clients.Dynamic, Mapper: clients.Mapper}
	for _, obj := range Objects(h.fleet, o.pods, o.namespaces, o.podsPerWorkload, o.image, o.targetImage) {
		if _, err := applier.Apply(ctx, obj); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if err := h.waitReady(ctx, o.pods+1, o.readyTimeout, kw); err != nil {
		return err
	}
	log.Info("app ready", "pods", o.pods+1, "in", time.Since(t0).Round(time.Second))

	var ql QueryLog
	promURL, err := ql.Serve(runCtx, "127.0.0.1:0", o.prometheus)
	if err != nil {
		return err
	}
	scen := filepath.Join(out, "scenario.yaml")
	if err := os.WriteFile(scen, []byte(ScenarioYAML(runID, o, promURL)), 0o644); err != nil {
		return err
	}
	runs := filepath.Join(out, "runs")
	proc, merr := runMeshbench(ctx, o, scen, runs, filepath.Join(out, "meshbench.log"))
	fig.Meshbench = proc
	run, rerr := readOnlyRun(runs)
	if rerr != nil {
		return errors.Join(merr, rerr)
	}
	h.figures(&fig, run.Cases, ql.Times())
	if err := writeRequests(filepath.Join(out, "prometheus-requests.jsonl"), ql.Requests()); err != nil {
		fig.Notes = append(fig.Notes, "prometheus request log: "+err.Error())
	}
	if merr != nil {
		fig.Notes = append(fig.Notes, "meshbench: "+merr.Error())
	}
	WriteTable(os.Stdout, fig)
	return nil
}

// track records when each pod of the harness was created and first seen Ready (the rollout's clock).
func (h *harness) track(p *corev1.Pod, deleted bool) {
	if deleted {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.pods[string(p.UID)]
	if !ok {
		t = &PodTimes{Created: p.CreationTimestamp.Time}
		h.pods[string(p.UID)] = t
	}
	if t.Ready.IsZero() && podReady(p) {
		t.Ready = time.Now()
	}
}

// trackDeployment records when a Deployment of the harness turns rolled out (target.DeploymentReady: the
// status kubectl rollout status waits for), the end of the cluster's own rollout.
func (h *harness) trackDeployment(d *appsv1.Deployment) {
	ok, _ := target.DeploymentReady(d)
	key := d.Namespace + "/" + d.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok && !h.rolledOutNow[key] {
		h.rolledOut[key] = append(h.rolledOut[key], time.Now())
	}
	h.rolledOutNow[key] = ok
}

// watchDeployments runs an informer on the harness' Deployments (one list and one watch) until ctx ends.
func (h *harness) watchDeployments(ctx context.Context) error {
	f := informers.NewSharedInformerFactoryWithOptions(h.clients.Kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ScaleLabel }))
	inf := f.Apps().V1().Deployments().Informer()
	on := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			h.trackDeployment(d)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, n any) { on(n) }}); err != nil {
		return fmt.Errorf("watch deployments: %w", err)
	}
	f.Start(ctx.Done())
	context.AfterFunc(ctx, f.Shutdown)
	return nil
}

func (h *harness) rolledOutTimes() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []time.Time
	for _, ts := range h.rolledOut {
		out = append(out, ts...)
	}
	return out
}

func (h *harness) podTimes() []PodTimes {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]PodTimes, 0, len(h.pods))
	for _, t := range h.pods {
		out = append(out, *t)
	}
	return out
}

func (h *harness) figures(fig *Figures, cases []results.CaseResult, queries []time.Time) {
	sortCases(cases)
	pods, rolledOut := h.podTimes(), h.rolledOutTimes()
	for _, c := range cases {
		cf := CaseFiguresOf(c, queries)
		if s, ok := SwitchOf(c, pods, rolledOut); ok {
			fig.Switches = append(fig.Switches, s)
			cf = cf.BeyondRollout(s)
		}
		fig.Cases = append(fig.Cases, cf)
	}
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitReady waits until want pods of the harness are Ready and none terminates.
func (h *harness) waitReady(ctx context.Context, want int, timeout time.Duration, k *kwokfleet.Kwok) error {
	var last string
	err := kube.Wait{Timeout: timeout, Interval: 3 * time.Second}.Until(ctx, func(ctx context.Context) (bool, error) {
		if err, exited := k.Exited(); exited {
			return false, fmt.Errorf("kwok exited (see kwok.log): %w", err)
		}
		pods, err := h.clients.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: ScaleLabel})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for i := range pods.Items {
			if podReady(&pods.Items[i]) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d pods Ready (%d listed)", ready, want, len(pods.Items))
		return ready == want && len(pods.Items) == want, nil
	})
	if err != nil {
		return fmt.Errorf("app not ready: %s: %w", last, err)
	}
	return nil
}

// writeSD publishes the stand-in cAdvisor to Prometheus: a file_sd target in the kubelet-cadvisor job
// (hack/localcluster/conf/prometheus.yml.in). Target labels win over the job's scheme and metrics path
// (prometheus/prometheus scrape/target.go, PopulateLabels: the job's defaults are set only where the target has
// none). Written to a temporary name and renamed, so Prometheus never reads half a file.
func (h *harness) writeSD(addr string) error {
	b, err := json.Marshal([]map[string]any{{"targets": []string{addr},
		"labels": map[string]string{"__scheme__": "http", "__metrics_path__": "/metrics/cadvisor", "node": "kwok-fleet"}}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.sdFile), 0o755); err != nil {
		return fmt.Errorf("file_sd dir: %w", err)
	}
	tmp := h.sdFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write file_sd: %w", err)
	}
	return os.Rename(tmp, h.sdFile)
}

// cleanup removes the file_sd target, the namespaces of any run (their pods force-deleted: pods on a fake node
// without kwok never finish terminating) and the fleet.
func (h *harness) cleanup(ctx context.Context) error {
	var errs []error
	for _, f := range []string{h.sdFile, h.sdFile + ".tmp"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(filepath.Dir(h.sdFile)) // only when empty: another tool's targets stay
	kc := h.clients.Kube
	sel := metav1.ListOptions{LabelSelector: ScaleLabel}
	nss, err := kc.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list namespaces: %w", err))...)
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp == nil {
			if err := kc.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns.Name, err))
			}
		}
	}
	if len(nss.Items) > 0 {
		err = kube.Wait{Timeout: 6 * time.Minute, Interval: 3 * time.Second}.Until(ctx, func(ctx context.Context) (bool, error) {
			// Every pod in the namespaces (meshbench's load clients too), once terminating for 20 s.
			for _, ns := range nss.Items {
				_ = kwokfleet.ForceDeletePods(ctx, kc, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns.Name}, 20*time.Second,
					func(p *corev1.Pod) bool { return p.Namespace == ns.Name })
			}
			left, err := kc.CoreV1().Namespaces().List(ctx, sel)
			return err == nil && len(left.Items) == 0, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("namespaces not gone: %w", err))
		}
	}
	if err := h.fleet.CleanupNodes(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (h *harness) verifyClean(ctx context.Context) error {
	left, err := h.fleet.Leftovers(ctx, func(p *corev1.Pod) bool { _, ok := p.Labels[ScaleLabel]; return ok })
	if err != nil {
		return err
	}
	nss, err := h.clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: ScaleLabel})
	if err != nil {
		return err
	}
	for _, n := range nss.Items {
		left = append(left, "namespace "+n.Name)
	}
	if _, err := os.Stat(h.sdFile); err == nil {
		left = append(left, "file "+h.sdFile)
	}
	if len(left) > 0 {
		return fmt.Errorf("left in the cluster: %s", strings.Join(left, ", "))
	}
	h.log.Info("clean: no namespace, fake node, pod, lease or file_sd target of the harness is left")
	return nil
}

// ScenarioYAML is the scenario meshbench runs: app existing over the harness' namespaces, load against the real
// target, one repetition of short windows. It is pure.
func ScenarioYAML(runID string, o options, promURL string) string {
	var ns []string
	for i := range o.namespaces {
		ns = append(ns, NamespaceName(i))
	}
	return fmt.Sprintf(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: mesh-scale, description: "hack/meshscale %s: %d fake pods in %d namespaces"}
spec:
  profile: localcluster
  workload:
    app: existing
    existing: {namespaces: [%s]}
  modes: [%s]
  load:
    qps: [%d]
    connections: 1
    targets:
    - {service: %s, namespace: %s, port: %d, path: /}
  windows: {idle: %s, load: %s, repetitions: 1, settle: 2s}
  prometheus: {url: %q}
  images: {agent: %q}
`, runID, o.pods, o.namespaces, strings.Join(ns, ", "), o.modes, o.qps, TargetName, NamespaceName(0), TargetPort, o.window, o.window, promURL, o.targetImage)
}

// runMeshbench runs `meshbench run` as a subprocess and reads its rusage (peak RSS, CPU). Ctrl-C reaches it as
// SIGINT (it cleans up then), SIGKILL only 5 minutes later.
func runMeshbench(ctx context.Context, o options, scen, runs, logPath string) (Process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return Process{}, err
	}
	defer logf.Close()
	args := []string{"run", "-f", scen, "--allow-existing-namespaces", "--output-dir", runs, "--ready-timeout", o.readyTimeout.String(),
		"--verify-timeout", o.readyTimeout.String(), "--skip-image-check"}
	if o.kubeconfig != "" {
		args = append(args, "--kubeconfig", o.kubeconfig)
	}
	cmd := exec.CommandContext(ctx, o.meshbench, args...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(logf), io.MultiWriter(logf, os.Stderr)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Minute
	t0 := time.Now()
	err = cmd.Run()
	p := Process{WallSeconds: time.Since(t0).Seconds()}
	if st := cmd.ProcessState; st != nil {
		p.ExitCode = st.ExitCode()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			p.PeakRSSMiB = float64(ru.Maxrss) / 1024 // Linux getrusage(2): ru_maxrss in KiB
			p.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	if err != nil {
		return p, fmt.Errorf("meshbench run: %w (see %s)", err, logPath)
	}
	return p, nil
}

func readOnlyRun(runs string) (*results.Run, error) {
	dirs, err := os.ReadDir(runs)
	if err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	var last string
	for _, d := range dirs {
		if d.IsDir() {
			last = filepath.Join(runs, d.Name())
		}
	}
	if last == "" {
		return nil, fmt.Errorf("no run dir under %s", runs)
	}
	return results.Read(last)
}

// promScrapesSD says what is wrong when Prometheus' loaded configuration does not read the file_sd directory (a
// cluster started before the directory was in hack/localcluster/conf/prometheus.yml.in): then the fake pods have
// no CPU or memory series at all.
func promScrapesSD(ctx context.Context, promURL, sdFile string) string {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, strings.TrimSuffix(promURL, "/")+"/api/v1/status/config", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "cannot read Prometheus' configuration: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), filepath.Dir(sdFile)) {
		return "Prometheus' loaded configuration has no file_sd for " + filepath.Dir(sdFile) +
			" (cluster started before this harness): the stand-in cAdvisor is not scraped, the fake pods have no CPU/memory series"
	}
	return ""
}

func writeFigures(out string, f Figures) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "figures.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	WriteTable(&md, f)
	return os.WriteFile(filepath.Join(out, "figures.md"), []byte(md.String()), 0o644)
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}
