package orchestrate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// Collector is the resource collector of a run: Prometheus when configured, else the kubelet sampler running in the
// background until Stop. It is the runner's Collector and, through Collect, cni's ResourceCollector.
type Collector struct {
	pods         prom.PodLister
	loadSelector string
	collect      func(ctx context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error)
	// waypoint and revision say which waypoints and which istiod serve the app (meshScope).
	waypoint scenario.Waypoint
	revision string
	// lead is the rate range when the collector was built; leadFn, when set, follows later changes (the kubelet
	// sampler's resolution follows cAdvisor's timestamps).
	lead   time.Duration
	leadFn func() time.Duration
	// guard and guardFn are the same for the guard (prom.Interval.Guard).
	guard   time.Duration
	guardFn func() time.Duration
	// Facts and Notes are what run.json records about the source of the resource figures.
	Facts *results.PromFacts
	Notes []string
	// stop ends the background sampler and waits until it has returned (nil with Prometheus).
	stop     func()
	stopOnce sync.Once
}

// Stop ends the kubelet sampler, if any, and waits for its goroutine: after Stop nothing of the collector runs.
func (c *Collector) Stop() {
	c.stopOnce.Do(func() {
		if c.stop != nil {
			c.stop()
		}
	})
}

// Collect reads the resources of pod sets over w (cni's ResourceCollector).
func (c *Collector) Collect(ctx context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
	return c.collect(ctx, w, sets)
}

// LeadIn is the rate range a window's first point looks back over.
func (c *Collector) LeadIn() time.Duration {
	if c.leadFn != nil {
		return c.leadFn()
	}
	return c.lead
}

// Guard is how long a window keeps from the next phase: two median sample spacings (prom.Interval.Guard).
func (c *Collector) Guard() time.Duration {
	if c.guardFn != nil {
		return c.guardFn()
	}
	return c.guard
}

// runCollector is the Collector as the runner's Collector: it finds the pod sets from the Kubernetes API at
// collection time.
type runCollector struct{ *Collector }

func (c runCollector) Collect(ctx context.Context, t target.Target, cs scenario.Case, w results.Window) (runner.Collection, error) {
	// Node: each node running the app, load client or waypoint pods, measured on its own (never the whole cluster).
	// Workloads: the app and sidecar figures also per Deployment and StatefulSet, so a team sees which service pays
	// most for the mesh.
	wls, err := scopeWorkloads(t)
	if err != nil {
		return runner.Collection{}, err
	}
	sets, err := prom.PodSets(ctx, c.pods, prom.Scope{AppNamespaces: t.Namespaces, AppSelector: t.AppSelector, LoadgenSelector: c.loadSelector, Node: true,
		Workloads: wls, OnlyWorkloadPods: t.App == scenario.AppExisting, Mesh: meshScope(t, cs.Mode, c.waypoint, c.revision)})
	if err != nil {
		return runner.Collection{}, err
	}
	got, err := c.collect(ctx, w, sets)
	if err == nil {
		err = prom.CheckRequired(sets, got.Samples)
	}
	// Allocation beside usage: the requests and limits the same pods had, from the specs just listed, over the
	// window the usage was queried for (none when the window could not be cut).
	if !got.Window.End.IsZero() {
		got.Samples = append(got.Samples, prom.AllocationSamples(sets, got.Window)...)
	}
	return runner.Collection{Window: got.Window, Samples: got.Samples, Warnings: got.Warnings, IngestWait: got.IngestWait}, err
}

// scopeWorkloads are the target's workloads with their pod selectors (target.Target.PodSelector), keyed
// results.WorkloadKey.
func scopeWorkloads(t target.Target) ([]prom.Workload, error) {
	out := make([]prom.Workload, 0, len(t.Workloads))
	for _, w := range t.Workloads {
		sel, err := t.PodSelector(w)
		if err != nil {
			return nil, fmt.Errorf("pod selector of %s: %w", w, err)
		}
		out = append(out, prom.Workload{Key: results.WorkloadKey(w.Kind, w.Namespace, w.Name), Namespace: w.Namespace, Selector: sel})
	}
	return out, nil
}

// meshScope is what serves the app in mode: nothing in none; istiod of the run's revision with a mesh; the node agents
// (ztunnel, istio-cni) of the app's nodes in ambient modes; the run's own waypoints in waypoint mode.
func meshScope(t target.Target, mode scenario.Mode, wp scenario.Waypoint, revision string) prom.MeshScope {
	var m prom.MeshScope
	if !mesh.NeedsIstio(mode) {
		return m
	}
	m.Istiod, m.IstiodRevision = true, revision
	m.NodeAgents = mesh.UsesAmbient(mode)
	if mode == scenario.ModeWaypoint {
		for _, r := range mesh.Waypoints(t, wp) {
			m.Waypoints = append(m.Waypoints, prom.NamespacedName{Namespace: r.Namespace, Name: r.Name})
		}
	}
	return m
}

// newCollector builds the resource collector: Prometheus when configured (scrape interval detected now), else the
// kubelet sampler, started now and running until Stop. A Prometheus configuration that cannot be used is an
// *InputError. It creates nothing, so it runs before the run directory exists.
func newCollector(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, log *slog.Logger) (*Collector, error) {
	pc := s.Spec.Prometheus
	retry := prom.DefaultRetry()
	retry.Timeout = pc.Timeout.Duration
	rc := &Collector{pods: prom.KubePods{Kube: clients.Kube}}
	if pc.URL == "" && pc.Service == nil {
		k := &prom.KubeletSampler{Nodes: prom.KubeNodes{Kube: clients.Kube}, Interval: pc.KubeletSampleInterval.Duration, Log: log}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = k.Run(sctx)
		}()
		rc.stop = func() { cancel(); <-done }
		// cAdvisor stamps its readings at its own housekeeping (10-15 s): learn their spacing before the first window.
		log.Info("no Prometheus configured: sampling the kubelets' resource metrics", "interval", k.Interval)
		res, err := k.Calibrate(ctx, 90*time.Second)
		if err != nil {
			rc.Stop()
			return nil, err
		}
		log.Info("kubelet resource metrics", "resolution", res.Effective, "rateRange", res.RateRange(), "notes", res.Notes)
		rc.collect, rc.lead, rc.leadFn = k.Collect, res.RateRange(), func() time.Duration { return k.Resolution().RateRange() }
		rc.guard, rc.guardFn = res.Guard(), func() time.Duration { return k.Resolution().Guard() }
		rc.Facts = &results.PromFacts{Source: prom.SourceKubelet, ScrapeInterval: res.Scrape, SampleSpacing: res.Spacing, Step: res.Step(), RateRange: res.RateRange(), Guard: res.Guard()}
		rc.Notes = append([]string{"no Prometheus configured: resource figures come from the kubelets' /metrics/resource sampled every " + res.Scrape.String()}, res.Notes...)
		return rc, nil
	}
	cc := prom.ClientConfig{URL: pc.URL, BearerTokenFile: pc.BearerTokenFile, CAFile: pc.CAFile, InsecureSkipVerify: pc.InsecureSkipVerify}
	if pc.InsecureSkipVerify {
		// Off only on request, and never silently: run.json's insecure records it as well.
		log.Warn("TLS verification of Prometheus is off (spec.prometheus.insecureSkipVerify): its certificate is not checked; recorded in run.json insecure", "url", pc.URL)
	}
	if svc := pc.Service; svc != nil && pc.URL == "" {
		cc.ServiceNamespace, cc.ServiceName, cc.ServicePort, cc.ServiceScheme, cc.Rest = svc.Namespace, svc.Name, svc.Port, svc.Scheme, clients.Config
	}
	api, err := prom.NewAPI(cc)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	iv, err := prom.DetectInterval(ctx, api, retry, pc.ScrapeInterval.Duration, time.Now())
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	for _, n := range iv.Notes {
		log.Warn("prometheus", "note", n)
	}
	c := &prom.Collector{API: api, Interval: iv, Retry: retry}
	rc.collect, rc.lead, rc.guard = c.Collect, iv.RateRange(), iv.Guard()
	addr, _ := cc.Address()
	rc.Facts = &results.PromFacts{URL: addr, Source: prom.SourcePrometheus, ScrapeInterval: iv.Scrape, SampleSpacing: iv.Spacing, Step: iv.Step(), RateRange: iv.RateRange(), Guard: iv.Guard()}
	if iv.Effective != iv.Scrape {
		rc.Notes = append(rc.Notes, fmt.Sprintf("cAdvisor samples are %s apart (scrape interval %s): CPU min/max use rates over %s", iv.Effective, iv.Scrape, iv.RateRange()))
	}
	return rc, nil
}
