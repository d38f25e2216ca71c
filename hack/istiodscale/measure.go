package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// IstiodMonitoringPort is istiod's http-monitoring port (/metrics).
const IstiodMonitoringPort = 15014

// FindIstiod returns the one running istiod pod of the selector (more than one would make "istiod's CPU" a sum of
// replicas: the tool wants exactly one).
func FindIstiod(ctx context.Context, kc kubernetes.Interface, ns, selector string) (*corev1.Pod, error) {
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list istiod pods: %w", err)
	}
	var running []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	if len(running) != 1 {
		return nil, fmt.Errorf("want exactly one running istiod pod in %s with %s, found %d (is the local Istio up? make istio-up)", ns, selector, len(running))
	}
	return running[0], nil
}

// IstiodOf describes the istiod pod as it runs (its discovery container's requests and limits).
func IstiodOf(p *corev1.Pod) Istiod {
	out := Istiod{Namespace: p.Namespace, Pod: p.Name, Node: p.Spec.NodeName}
	for _, c := range p.Spec.Containers {
		if c.Name != "discovery" && len(p.Spec.Containers) > 1 {
			continue
		}
		out.Image = c.Image
		out.Requests, out.Limits = quantities(c.Resources.Requests), quantities(c.Resources.Limits)
	}
	return out
}

func quantities(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range rl {
		out[string(k)] = v.String()
	}
	return out
}

// ScrapeIstiod reads the wanted families from istiod's /metrics through the API server's pod proxy.
func ScrapeIstiod(ctx context.Context, kc kubernetes.Interface, p *corev1.Pod) (map[string]float64, error) {
	b, err := kube.ProxyGet(ctx, kc, "pods", p.Namespace, fmt.Sprintf("%s:%d", p.Name, IstiodMonitoringPort), "/metrics", nil)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(bytes.NewReader(b), append(append([]string{}, IstiodGauges...), IstiodCounters...))
}

// Meter reads istiod's CPU and memory over a window with the collectors/prom catalog (the figures a run records for
// the istiod component).
type Meter struct {
	Collector *prom.Collector
}

// NewMeter connects to Prometheus and learns its scrape interval and cAdvisor's sample spacing.
func NewMeter(ctx context.Context, url string) (*Meter, prom.Interval, error) {
	api, err := prom.NewAPI(prom.ClientConfig{URL: url})
	if err != nil {
		return nil, prom.Interval{}, fmt.Errorf("prometheus: %w", err)
	}
	retry := prom.DefaultRetry()
	iv, err := prom.DetectInterval(ctx, api, retry, 0, time.Now())
	if err != nil {
		return nil, iv, fmt.Errorf("prometheus: %w", err)
	}
	return &Meter{Collector: &prom.Collector{API: api, Interval: iv, Retry: retry}}, iv, nil
}

// Measure waits for the window's data and reads istiod's statistics.
func (m *Meter) Measure(ctx context.Context, w results.Window, istiod *corev1.Pod) (cpu, mem Stat3, warnings []string, err error) {
	set := podset.PodSet{Component: results.ComponentIstiod, Pods: map[string][]string{istiod.Namespace: {istiod.Name}}, Required: true}
	got, err := m.Collector.Collect(ctx, w, []podset.PodSet{set})
	if err != nil {
		return cpu, mem, got.Warnings, fmt.Errorf("collect istiod: %w", err)
	}
	cpu, mem, err = StatsFrom(got.Samples)
	return cpu, mem, got.Warnings, err
}

// queryWindow is the whole-second window the collector queried (prom.QueryWindow).
func queryWindow(w results.Window) (results.Window, error) { return prom.QueryWindow(w) }
