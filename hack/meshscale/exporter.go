package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/meshbench/meshbench/hack/kwokfleet"
)

// Usage is what the stand-in cAdvisor reports for one container: a CPU counter growing at a fixed rate and a
// constant working set.
type Usage struct {
	Millicores float64
	MiB        float64
}

// Exporter is a stand-in for the kubelets' cAdvisor of the fake nodes (kwok runs no containers, so nothing
// measures them): it watches the pods bound to the fake nodes (an informer, no polling) and serves
// container_cpu_usage_seconds_total and container_memory_working_set_bytes for every container of each (app and
// istio-proxy, init containers with restartPolicy Always included), plus cAdvisor's pod-level series
// (container=""), with the labels the kubelet's cAdvisor gives: namespace, pod, container, id, image, name.
// collectors/prom selects container!="",container!="POD" per namespace and pod (doc.go, probe.go), so the pod-level
// series is served as cAdvisor has it but never counted twice.
type Exporter struct {
	// App and Proxy are the usage of every app container and of istio-proxy.
	App, Proxy Usage
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Also receives every pod event the informer delivers (the harness' rollout clock).
	Also func(p *corev1.Pod, deleted bool)

	mu    sync.Mutex
	pods  map[string]*corev1.Pod // by namespace/name, only pods on fake nodes
	first map[string]time.Time   // when the exporter first saw each pod: its counters start there
}

var (
	cpuDesc = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds (meshbench stand-in cAdvisor for kwok fake nodes).",
		[]string{"container", "cpu", "id", "image", "name", "namespace", "pod"}, nil)
	memDesc = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes (meshbench stand-in cAdvisor for kwok fake nodes).",
		[]string{"container", "id", "image", "name", "namespace", "pod"}, nil)
)

// NewExporter is an exporter without pods.
func NewExporter(app, proxy Usage) *Exporter {
	return &Exporter{App: app, Proxy: proxy, pods: map[string]*corev1.Pod{}, first: map[string]time.Time{}}
}

func (e *Exporter) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Set records a pod (on a fake node) or forgets it (deleted, or not bound to a fake node).
func (e *Exporter) Set(p *corev1.Pod, deleted bool) {
	key := p.Namespace + "/" + p.Name
	e.mu.Lock()
	defer e.mu.Unlock()
	if deleted || !strings.HasPrefix(p.Spec.NodeName, kwokfleet.NodePrefix+"-") || p.Status.Phase != corev1.PodRunning {
		delete(e.pods, key)
		delete(e.first, key)
		return
	}
	if _, ok := e.first[key]; !ok {
		e.first[key] = e.now()
	}
	e.pods[key] = p
}

// Describe is prometheus.Collector's.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) { ch <- cpuDesc; ch <- memDesc }

// Collect is prometheus.Collector's: one series per running container of every known pod, and the pod's own.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for key, p := range e.pods {
		up := now.Sub(e.first[key]).Seconds()
		podID := "/kubepods/burstable/pod" + string(p.UID)
		var podCPU, podMem float64
		for _, c := range runningContainers(p) {
			u := e.App
			if c.Name == "istio-proxy" {
				u = e.Proxy
			}
			cid := fakeContainerID(p, c.Name)
			cpu, mem := u.Millicores/1000*up, u.MiB*(1<<20)
			podCPU, podMem = podCPU+cpu, podMem+mem
			ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, cpu, c.Name, "total", podID+"/"+cid, c.Image, cid, p.Namespace, p.Name)
			ch <- prometheus.MustNewConstMetric(memDesc, prometheus.GaugeValue, mem, c.Name, podID+"/"+cid, c.Image, cid, p.Namespace, p.Name)
		}
		ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, podCPU, "", "total", podID, "", "", p.Namespace, p.Name)
		ch <- prometheus.MustNewConstMetric(memDesc, prometheus.GaugeValue, podMem, "", podID, "", "", p.Namespace, p.Name)
	}
}

// runningContainers are the containers that would run: the regular ones and native sidecars (init containers with
// restartPolicy Always, as the injector adds istio-proxy); ordinary init containers have finished.
func runningContainers(p *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return append(out, p.Spec.Containers...)
}

// fakeContainerID is a stable 64-hex container ID like containerd's, from the pod's UID and the container's name.
func fakeContainerID(p *corev1.Pod, container string) string {
	h := fmt.Sprintf("%x", []byte(string(p.UID)+"/"+container))
	for len(h) < 64 {
		h += h
	}
	return h[:64]
}

// Watch feeds the exporter from an informer on the pods with label selector sel until ctx ends; it returns once
// the informer has synced.
func (e *Exporter) Watch(ctx context.Context, kc kubernetes.Interface, sel string) error {
	f := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	inf := f.Core().V1().Pods().Informer()
	set := func(obj any, deleted bool) {
		switch p := obj.(type) {
		case *corev1.Pod:
			e.Set(p, deleted)
			if e.Also != nil {
				e.Also(p, deleted)
			}
		case cache.DeletedFinalStateUnknown:
			if p2, ok := p.Obj.(*corev1.Pod); ok {
				e.Set(p2, true)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { set(o, false) },
		UpdateFunc: func(_, o any) { set(o, false) },
		DeleteFunc: func(o any) { set(o, true) },
	}); err != nil {
		return fmt.Errorf("exporter informer: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("exporter informer did not sync: %w", ctx.Err())
	}
	return nil
}

// Serve serves /metrics/cadvisor on addr (port 0: any) until ctx ends; it returns the address it listens on.
func (e *Exporter) Serve(ctx context.Context, addr string) (string, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(e); err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics/cadvisor", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("exporter listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return ln.Addr().String(), nil
}
