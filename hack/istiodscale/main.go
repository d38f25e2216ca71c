package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/hack/kwokfleet"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/results"
)

type options struct {
	kubeconfig, prometheus, kwokDir, out string
	steps                                string
	shape                                Shape
	podsPerNode, nodeMaxPods             int
	settle, window, readyTimeout         time.Duration
	repetitions                          int
	spacing                              time.Duration
	injection, istiodNS, istiodSelector  string
	image                                string
	cleanupOnly                          bool
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (the local cluster's cluster.env exports it)")
	flag.StringVar(&o.prometheus, "prometheus", os.Getenv("MESHBENCH_PROMETHEUS_URL"), "Prometheus URL (cAdvisor scraped)")
	stateDir := os.Getenv("MESHBENCH_CLUSTER_DIR")
	if stateDir == "" {
		stateDir = "/var/lib/meshbench/localcluster"
	}
	flag.StringVar(&o.kwokDir, "kwok-dir", filepath.Join(stateDir, "bin", "kwok"), "directory with kwok and kwok-stages (build-kwok.sh)")
	flag.StringVar(&o.out, "out", "istiod-scale-out", "output directory (istiod-curve.json, istiod-curve.md, kwok.log)")
	flag.StringVar(&o.steps, "steps", "0,250,500,1000,2000", "pod counts, increasing")
	flag.IntVar(&o.shape.PodsPerService, "pods-per-service", DefaultShape.PodsPerService, "replicas per Deployment/Service")
	flag.IntVar(&o.shape.ServicesPerNamespace, "services-per-namespace", DefaultShape.ServicesPerNamespace, "services per namespace before the next namespace")
	flag.IntVar(&o.shape.MaxNamespaces, "max-namespaces", DefaultShape.MaxNamespaces, "namespaces at most")
	flag.IntVar(&o.podsPerNode, "pods-per-node", 200, "the tool's pods per fake node (sets the node count)")
	flag.IntVar(&o.nodeMaxPods, "node-max-pods", 250, "pod capacity of a fake node (< 254: its pod CIDR is a /24)")
	flag.DurationVar(&o.settle, "settle", 60*time.Second, "wait after a size is reached, before the window")
	flag.DurationVar(&o.window, "window", 60*time.Second, "measurement window")
	flag.IntVar(&o.repetitions, "repetitions", 3, "measurement windows per size (the fit's intervals and linearity test come from them)")
	flag.DurationVar(&o.spacing, "spacing", 20*time.Second, "pause between a size's windows (at least Prometheus' rate range keeps their CPU rates apart)")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 10*time.Minute, "time for one size to be reached")
	flag.StringVar(&o.injection, "injection-label", "istio-injection=enabled", "namespace label that turns injection on (istio.io/rev=REV for a revision)")
	flag.StringVar(&o.istiodNS, "istiod-namespace", "istio-system", "istiod's namespace")
	flag.StringVar(&o.istiodSelector, "istiod-selector", "app=istiod", "istiod's pod selector")
	flag.StringVar(&o.image, "image", "172.30.0.1:5000/meshbench/pause:dev", "app container image (never pulled: kwok runs no containers)")
	flag.BoolVar(&o.cleanupOnly, "cleanup-only", false, "only remove what earlier runs left (namespaces, fake nodes, kwok) and exit")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("istiod-scale failed", "err", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log *slog.Logger) (err error) {
	steps, err := ParseSteps(o.steps)
	if err != nil {
		return err
	}
	if err := o.shape.Validate(); err != nil {
		return err
	}
	if o.podsPerNode < 1 || o.podsPerNode >= o.nodeMaxPods || o.nodeMaxPods > 254 {
		return fmt.Errorf("need 1 <= pods-per-node (%d) < node-max-pods (%d) <= 254", o.podsPerNode, o.nodeMaxPods)
	}
	if o.window < 30*time.Second {
		return fmt.Errorf("window %s: at least 30 s (the CPU min/max need a few rate steps)", o.window)
	}
	if err := ValidateRepetitions(o.repetitions, o.spacing); err != nil {
		return err
	}
	ik, iv, err := ParseLabel(o.injection)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return fmt.Errorf("output dir: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output dir: %w", err)
	}
	clients, err := kube.NewClients(o.kubeconfig, "")
	if err != nil {
		return err
	}
	c := &Cluster{Kube: clients.Kube, Applier: kube.Applier{Dynamic: clients.Dynamic, Mapper: clients.Mapper}, RunID: newRunID(),
		Image: o.image, InjectKey: ik, InjectValue: iv, Log: log}

	// Leftovers of a killed earlier run first (also the whole job of -cleanup-only).
	kwokfleet.StopStaleKwok(out, o.kwokDir, log)
	if left, err := c.Leftovers(ctx); err != nil {
		return err
	} else if len(left) > 0 {
		log.Warn("removing what an earlier run left", "objects", len(left), "first", left[0])
		if err := c.Cleanup(ctx, 5*time.Minute); err != nil {
			return fmt.Errorf("remove leftovers: %w", err)
		}
	}
	if o.cleanupOnly {
		return verifyClean(ctx, c, log)
	}

	istiod, err := FindIstiod(ctx, c.Kube, o.istiodNS, o.istiodSelector)
	if err != nil {
		return err
	}
	meter, piv, err := NewMeter(ctx, o.prometheus)
	if err != nil {
		return err
	}
	if w := SpacingWarning(o.repetitions, o.spacing, piv.RateRange()); w != "" {
		log.Warn(w)
	}
	curve := Curve{Schema: CurveSchema, Started: time.Now().UTC(), RunID: c.RunID, Istiod: IstiodOf(istiod), NotReal: NotReal,
		Method: Method{Steps: steps, PodsPerService: o.shape.PodsPerService, ServicesPerNamespace: o.shape.ServicesPerNamespace,
			MaxNamespaces: o.shape.MaxNamespaces, PodsPerNode: o.podsPerNode, SettleSeconds: o.settle.Seconds(), WindowSeconds: o.window.Seconds(),
			Repetitions: o.repetitions, SpacingSeconds: o.spacing.Seconds(),
			Kwok: "sigs.k8s.io/kwok v0.8.0 (out of cluster, default fast stages)", Prometheus: o.prometheus,
			ScrapeSeconds: piv.Scrape.Seconds(), SampleSpacingSeconds: piv.Effective.Seconds(), RateRangeSeconds: piv.RateRange().Seconds(),
			CPU:    "collectors/prom catalog: avg = increase(container_cpu_usage_seconds_total[window])/window, min/max over a rate subquery; millicores",
			Memory: "collectors/prom catalog: container_memory_working_set_bytes, min/avg/max over a subquery; MiB"}}
	if v, err := c.Kube.Discovery().ServerVersion(); err == nil {
		curve.Method.KubernetesVersion = v.GitVersion
	}

	// From here on everything is undone on the way out, whatever the way out is.
	var kw *kwokfleet.Kwok
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 6*time.Minute)
		defer cancel()
		log.Info("cleaning up: namespaces, fake nodes, kwok")
		cerr := c.Cleanup(cctx, 5*time.Minute)
		if serr := kw.Stop(); serr != nil {
			cerr = errors.Join(cerr, serr)
		}
		// Once more after kwok is gone: a lease kwok renewed between the node's deletion and its own exit.
		if cerr == nil {
			cerr = c.Cleanup(cctx, time.Minute)
		}
		if cerr == nil {
			cerr = verifyClean(cctx, c, log)
		}
		curve.Finished = time.Now().UTC()
		curve.Complete = err == nil && cerr == nil
		if err != nil {
			curve.Error = err.Error()
		} else if cerr != nil {
			curve.Error = "cleanup: " + cerr.Error()
		}
		if werr := WriteCurve(out, curve); werr != nil {
			cerr = errors.Join(cerr, werr)
		}
		err = errors.Join(err, cerr)
	}()

	nodes := NodesFor(steps, o.podsPerNode)
	log.Info("creating fake nodes", "nodes", nodes, "run", c.RunID)
	if err := c.CreateNodes(ctx, nodes, o.nodeMaxPods); err != nil {
		return err
	}
	if kw, err = kwokfleet.StartKwok(ctx, o.kwokDir, out, o.kubeconfig); err != nil {
		return err
	}
	if err := c.WaitNodesReady(ctx, nodes, 2*time.Minute, kw); err != nil {
		return err
	}
	log.Info("fake nodes ready", "nodes", nodes)

	for _, pods := range steps {
		p, err := measureSize(ctx, c, meter, kw, o, pods, nodes)
		if err != nil {
			return err
		}
		curve.Points = append(curve.Points, p)
		if err := WriteCurve(out, curve); err != nil {
			return err
		}
		log.Info("point", "pods", p.Pods, "services", p.Services, "namespaces", p.Namespaces, "endpoints", p.Endpoints, "windows", len(p.Repetitions),
			"cpu_m_avg", fmt.Sprintf("%.1f", p.CPUMillicores.Avg), "mem_mib_avg", fmt.Sprintf("%.1f", p.MemoryMiB.Avg))
	}
	return nil
}

func measureSize(ctx context.Context, c *Cluster, meter *Meter, kw *kwokfleet.Kwok, o options, pods, nodes int) (Point, error) {
	size := o.shape.Layout(NamespacePrefix, pods)
	c.Log.Info("size", "pods", size.Pods, "services", size.Services, "namespaces", size.Namespaces)
	t0 := time.Now()
	if err := c.Reconcile(ctx, size); err != nil {
		return Point{}, err
	}
	st, err := c.WaitSettled(ctx, size, o.readyTimeout, kw)
	if err != nil {
		return Point{}, err
	}
	ready := time.Since(t0)
	if pods > 0 && st.Injected == 0 {
		return Point{}, fmt.Errorf("no pod was injected: is %s the label istiod's injector selects?", o.injection)
	}
	c.Log.Info("size reached; settling", "state", st.String(), "sample", st.InjectedSample, "in", ready.Round(time.Second), "settle", o.settle)
	if err := kube.Sleep(ctx, nil, o.settle); err != nil {
		return Point{}, err
	}
	p := Point{Pods: size.Pods, Services: size.Services, Namespaces: size.Namespaces, FakeNodes: nodes, ReadySeconds: ready.Seconds()}
	// Each window starts where the plan puts it after the settle time, or at once when collecting the previous one
	// (which waits for Prometheus to store its end) took longer than the spacing.
	origin := time.Now()
	var istiod *corev1.Pod
	for i, span := range WindowPlan(o.repetitions, o.window, o.spacing) {
		if err := kube.SleepUntil(ctx, nil, origin.Add(span.Start)); err != nil {
			return Point{}, err
		}
		if istiod, err = FindIstiod(ctx, c.Kube, o.istiodNS, o.istiodSelector); err != nil {
			return Point{}, err
		}
		r, err := measureWindow(ctx, meter, c, istiod, o.window)
		if err != nil {
			return Point{}, fmt.Errorf("%d pods, window %d: %w", pods, i+1, err)
		}
		r.Repetition = i + 1
		p.Repetitions = append(p.Repetitions, r)
		c.Log.Info("window", "pods", pods, "repetition", r.Repetition, "cpu_m_avg", fmt.Sprintf("%.1f", r.CPUMillicores.Avg),
			"mem_mib_avg", fmt.Sprintf("%.1f", r.MemoryMiB.Avg))
	}
	p.CPUMillicores, p.MemoryMiB = Summarize(p.Repetitions)
	// The objects after the last window, so the point says what istiod held while it was measured.
	end, err := c.Observe(ctx)
	if err != nil {
		return Point{}, err
	}
	if !end.Settled(size) {
		p.Warnings = append(p.Warnings, "the size changed during the windows: "+end.String())
	}
	p.Endpoints, p.Injected, p.InjectedSample = end.Endpoints, end.Injected, end.InjectedSample
	if p.OtherPodsOnFakeNodes, err = c.OtherPodsOnFakeNodes(ctx, nodes); err != nil {
		return Point{}, err
	}
	if now, err := c.Kube.CoreV1().Pods(istiod.Namespace).Get(ctx, istiod.Name, metav1.GetOptions{}); err == nil {
		p.IstiodRestarts = restarts(now)
	}
	return p, nil
}

// measureWindow measures one window: istiod's metrics scraped before and after it, its CPU and memory from
// Prometheus.
func measureWindow(ctx context.Context, meter *Meter, c *Cluster, istiod *corev1.Pod, window time.Duration) (Repetition, error) {
	var r Repetition
	before, berr := ScrapeIstiod(ctx, c.Kube, istiod)
	start := time.Now()
	if err := kube.Sleep(ctx, nil, window); err != nil {
		return r, err
	}
	w := results.Window{Kind: results.WindowLoad, Start: start, End: time.Now()}
	after, aerr := ScrapeIstiod(ctx, c.Kube, istiod)
	if berr != nil || aerr != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("istiod metrics not read: %v", errors.Join(berr, aerr)))
	} else {
		r.Istiod = IstiodFigures(before, after)
	}
	cpu, mem, warns, err := meter.Measure(ctx, w, istiod)
	if err != nil {
		return r, err
	}
	qw := w
	if q, err := queryWindow(w); err == nil {
		qw = q
	}
	r.Window, r.CPUMillicores, r.MemoryMiB, r.Warnings = qw, cpu, mem, append(r.Warnings, warns...)
	return r, nil
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

func verifyClean(ctx context.Context, c *Cluster, log *slog.Logger) error {
	left, err := c.Leftovers(ctx)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("left in the cluster: %s", strings.Join(left, ", "))
	}
	log.Info("clean: no namespace, fake node, pod or lease of the tool is left")
	return nil
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}
