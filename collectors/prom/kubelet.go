package prom

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
)

// Point is one reading of a series.
type Point struct {
	T time.Time
	V float64
}

// SeriesKey identifies a series of the kubelet's resource metrics. Node-level series have only Node set.
type SeriesKey struct {
	Node, Namespace, Pod, Container string
	Metric                          results.Metric // results.MetricCPU (cumulative core-seconds) or results.MetricMemory (bytes)
}

// parseResource reads one kubelet /metrics/resource response: container_cpu_usage_seconds_total,
// container_memory_working_set_bytes, node_cpu_usage_seconds_total and node_memory_working_set_bytes. Readings
// without a timestamp get fetched. It is pure.
func parseResource(node string, data []byte, fetched time.Time) (map[SeriesKey]Point, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse resource metrics of node %s: %w", node, err)
	}
	out := map[SeriesKey]Point{}
	for name, metric := range map[string]results.Metric{
		"container_cpu_usage_seconds_total":  results.MetricCPU,
		"container_memory_working_set_bytes": results.MetricMemory,
		"node_cpu_usage_seconds_total":       results.MetricCPU,
		"node_memory_working_set_bytes":      results.MetricMemory,
	} {
		fam, ok := fams[name]
		if !ok {
			continue
		}
		for _, m := range fam.GetMetric() {
			k := SeriesKey{Node: node, Metric: metric}
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "namespace":
					k.Namespace = l.GetValue()
				case "pod":
					k.Pod = l.GetValue()
				case "container":
					k.Container = l.GetValue()
				}
			}
			if strings.HasPrefix(name, "container_") && (k.Pod == "" || k.Container == "" || k.Container == "POD") {
				continue
			}
			ts := fetched
			if m.TimestampMs != nil {
				ts = time.UnixMilli(m.GetTimestampMs())
			}
			out[k] = Point{T: ts.UTC(), V: value(m)}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resource metrics of node %s hold no CPU or memory series", node)
	}
	return out, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// setMatches reports whether a kubelet series belongs to the set. It is pure.
func setMatches(s podset.PodSet, k SeriesKey) bool {
	if s.Component == results.ComponentNode {
		return isNodeSeries(k) && slices.ContainsFunc(s.Nodes, func(n podset.NodeRef) bool { return n.Name == k.Node })
	}
	if k.Pod == "" || !slices.Contains(s.Pods[k.Namespace], k.Pod) {
		return false
	}
	if name, ok := strings.CutPrefix(s.Container, `container!=`); ok {
		return k.Container != strings.Trim(name, `"`)
	}
	if name, ok := strings.CutPrefix(s.Container, `container=`); ok {
		return k.Container == strings.Trim(name, `"`)
	}
	return true
}

// Stats computes min/max/avg of CPU (cores) and memory (bytes) of the series over [start, end] by the Prometheus
// collector's rules (CounterStats, gaugeStats), so the average lies within [min, max]; ok is false for a metric
// without data. It is pure.
func Stats(series map[SeriesKey][]Point, start, end time.Time, step, rateRange, lookback, guard time.Duration) (cpu, mem Summary3) {
	var cpuSeries, memSeries []Series
	for _, k := range slices.SortedFunc(maps.Keys(series), func(a, b SeriesKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }) {
		pts := series[k]
		if len(pts) == 0 {
			continue
		}
		s := Series{Namespace: k.Namespace, Pod: k.Pod, Sign: 1}
		counter := k.Metric == results.MetricCPU
		offset, prev := 0.0, math.Inf(-1)
		for _, p := range pts {
			if counter && p.V < prev {
				offset += prev
			}
			prev = p.V
			s.T = append(s.T, float64(p.T.UnixMilli())/1000)
			s.V = append(s.V, p.V+offset)
		}
		if counter {
			cpuSeries = append(cpuSeries, s)
		} else {
			memSeries = append(memSeries, s)
		}
	}
	if st, ok := CounterStats(cpuSeries, start, end, rateRange, step, guard); ok {
		cpu = Summary3{Min: st.Min, Max: st.Max, Avg: st.Avg, OK: true}
	}
	if st, ok := gaugeStats(memSeries, start, end, lookback); ok {
		mem = Summary3{Min: st.Min, Max: st.Max, Avg: st.Avg, OK: true}
	}
	return cpu, mem
}

// Summary3 is min, max and avg of one metric.
type Summary3 struct {
	Min, Max, Avg float64
	OK            bool
}

// NodeResourceGetter fetches a node's /metrics/resource.
type NodeResourceGetter interface {
	Nodes(ctx context.Context) ([]string, error)
	Resource(ctx context.Context, node string) ([]byte, error)
}

// KubeNodes reads nodes and their kubelets' resource metrics through the API server (nodes/<n>/proxy).
type KubeNodes struct{ Kube kubernetes.Interface }

// Nodes lists the Ready nodes.
func (k KubeNodes) Nodes(ctx context.Context) ([]string, error) {
	l, err := k.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []string
	for i := range l.Items {
		if target.NodeReady(&l.Items[i]) {
			out = append(out, l.Items[i].Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Resource GETs /metrics/resource from the node's kubelet.
func (k KubeNodes) Resource(ctx context.Context, node string) ([]byte, error) {
	return kube.ProxyGet(ctx, k.Kube, "nodes", "", node, "/metrics/resource", nil)
}

// KubeletSampler is the fallback when no Prometheus is configured: it reads every node's kubelet resource metrics
// at a fixed interval (Run, in the background for the whole run) and computes the catalog's statistics from the
// readings (Collect).
type KubeletSampler struct {
	Nodes    NodeResourceGetter
	Interval time.Duration
	Timeout  time.Duration // per node request; 0 = Interval
	Log      *slog.Logger
	// Clock times the sampling rounds and Calibrate's limit, and stamps the rounds (nil = the wall clock); tests
	// pass a fake.
	Clock clock.WithTicker

	mu       sync.Mutex
	series   map[SeriesKey][]Point
	lastTick time.Time // completion time of the last sampling round
	errs     []string
	tick     chan struct{}
}

// Resolution is the readings' resolution as an Interval (for RunMeta facts and rate ranges): the sampling interval,
// or the spacing of cAdvisor's own timestamps when that is wider (its housekeeping runs every 10-15 s, so sampling
// faster only repeats readings). Calibrate first so the spacing is known.
func (k *KubeletSampler) Resolution() Interval {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.resolutionLocked()
}

func (k *KubeletSampler) resolutionLocked() Interval {
	iv := Interval{Scrape: k.Interval, Effective: ceilSecond(k.Interval), Source: "kubelet sample interval"}
	sp, ok := spacingOf(k.series)
	if ok {
		iv.Spacing = sp
	}
	if ok && sp > k.Interval {
		iv.Effective = ceilSecond(sp)
		iv.Notes = append(iv.Notes, fmt.Sprintf("cAdvisor readings are %s apart (sampled every %s): rates use %s", sp, k.Interval, iv.Effective))
	}
	return iv
}

// spacingOf is the median over series of each series' median time between consecutive readings, over the series
// with 3 readings or more; it needs 3 such series (one young container, whose first readings come faster, must not
// decide).
func spacingOf(series map[SeriesKey][]Point) (time.Duration, bool) {
	var perSeries []time.Duration
	for _, pts := range series {
		if len(pts) < 3 {
			continue
		}
		deltas := make([]time.Duration, 0, len(pts)-1)
		for i := 1; i < len(pts); i++ {
			deltas = append(deltas, pts[i].T.Sub(pts[i-1].T))
		}
		slices.Sort(deltas)
		perSeries = append(perSeries, deltas[len(deltas)/2])
	}
	if len(perSeries) < 3 {
		return 0, false
	}
	slices.Sort(perSeries)
	return perSeries[len(perSeries)/2].Round(10 * time.Millisecond), true
}

// Calibrate waits (Run must be running) until the readings' spacing is known, at most max. A run should call it
// before its first window: the lead-in before every window is the rate range, which depends on the spacing.
func (k *KubeletSampler) Calibrate(ctx context.Context, max time.Duration) (Interval, error) {
	deadline := k.clock().NewTimer(max)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		k.init()
		_, ok := spacingOf(k.series)
		tick := k.tick
		iv := k.resolutionLocked()
		k.mu.Unlock()
		if ok {
			return iv, nil
		}
		select {
		case <-ctx.Done():
			return iv, ctx.Err()
		case <-deadline.C():
			iv.Notes = append(iv.Notes, fmt.Sprintf("readings' spacing unknown after %s: assuming the sampling interval", max))
			return iv, nil
		case <-tick:
		}
	}
}

func (k *KubeletSampler) clock() clock.WithTicker {
	if k.Clock == nil {
		return clock.RealClock{}
	}
	return k.Clock
}

// init prepares the sampler's state; k.mu must be held.
func (k *KubeletSampler) init() {
	if k.series == nil {
		k.series = map[SeriesKey][]Point{}
	}
	if k.tick == nil {
		k.tick = make(chan struct{})
	}
}

// Run samples until ctx is done. It returns ctx's error.
func (k *KubeletSampler) Run(ctx context.Context) error {
	k.mu.Lock()
	k.init()
	k.mu.Unlock()
	t := k.clock().NewTicker(k.Interval)
	defer t.Stop()
	var nodes []string
	for round := 0; ; round++ {
		if round%10 == 0 || len(nodes) == 0 {
			if ns, err := k.Nodes.Nodes(ctx); err == nil {
				nodes = ns
			} else if ctx.Err() == nil {
				k.note(err)
			}
		}
		k.sampleOnce(ctx, nodes)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
	}
}

func (k *KubeletSampler) note(err error) {
	if k.Log != nil {
		k.Log.Warn("kubelet resource metrics", "err", err)
	}
	k.mu.Lock()
	if len(k.errs) < 20 {
		k.errs = append(k.errs, err.Error())
	}
	k.mu.Unlock()
}

func (k *KubeletSampler) sampleOnce(ctx context.Context, nodes []string) {
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = k.Interval
	}
	var wg sync.WaitGroup
	got := make([]map[SeriesKey]Point, len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			b, err := k.Nodes.Resource(rctx, n)
			if err != nil {
				if ctx.Err() == nil {
					k.note(err)
				}
				return
			}
			pts, err := parseResource(n, b, k.clock().Now())
			if err != nil {
				k.note(err)
				return
			}
			got[i] = pts
		})
	}
	wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, pts := range got {
		for key, p := range pts {
			s := k.series[key]
			// cAdvisor stamps readings at its housekeeping; an unchanged stamp is the same reading.
			if len(s) > 0 && !p.T.After(s[len(s)-1].T) {
				continue
			}
			k.series[key] = append(s, p)
		}
	}
	k.lastTick = k.clock().Now()
	close(k.tick)
	k.tick = make(chan struct{})
}

// Collect waits for a sampling round that ends two intervals after the window (cAdvisor stamps lag), then
// computes each set's statistics. Readings older than needed by any later window are dropped.
func (k *KubeletSampler) Collect(ctx context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
	qw, err := QueryWindow(w)
	if err != nil {
		return podset.Collected{}, err
	}
	out := podset.Collected{Window: qw}
	res := k.Resolution()
	step, rate := res.Step(), res.RateRange()
	if l := qw.End.Sub(qw.Start); l < rate {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s window %s is shorter than the rate range %s: the CPU figures cover the %s up to the window's end",
			w.Kind, l, rate, rate))
	}
	// The reading after the end (the counters are interpolated at the end from it) is stamped up to a spacing after
	// it and read up to an interval later.
	if err := k.awaitRound(ctx, qw.End.Add(2*res.Effective+time.Second)); err != nil {
		return out, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	out.Warnings = append(out.Warnings, k.errs...)
	k.errs = nil
	f := kubeletFigures{out: &out, kind: w.Kind, step: step, rate: rate, guard: res.Guard()}
	for _, set := range sets {
		out.Warnings = append(out.Warnings, set.Notes...)
		k.setFiguresLocked(&f, set)
	}
	// Later windows start after this one's start: older readings (beyond one rate range) are no longer needed.
	k.dropBeforeLocked(qw.Start.Add(-2 * rate))
	out.Warnings = append(out.Warnings, consistencyWarnings(out.Samples)...)
	return out, nil
}

// awaitRound waits until a sampling round has ended at or after deadline; it returns ctx's error when ctx ends first.
func (k *KubeletSampler) awaitRound(ctx context.Context, deadline time.Time) error {
	for {
		k.mu.Lock()
		k.init()
		done, tick := !k.lastTick.Before(deadline), k.tick
		k.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
		}
	}
}

// kubeletFigures turns readings into one window's samples and warnings in out, at the sampler's step, rate range
// and guard.
type kubeletFigures struct {
	out               *podset.Collected
	kind              string // the window's kind, for the warnings
	step, rate, guard time.Duration
}

// emit adds the min, max and avg of CPU (millicores) and memory (MiB) over sub as component's samples with labels,
// or a warning naming what for each metric without readings.
func (f *kubeletFigures) emit(component results.Component, sub map[SeriesKey][]Point, what string, labels map[string]string) {
	qw := f.out.Window
	cpu, mem := Stats(sub, qw.Start, qw.End, f.step, f.rate, 2*f.step, f.guard)
	add := func(metric results.Metric, s Summary3, scale float64, unit results.Unit) {
		if !s.OK {
			f.out.Warnings = append(f.out.Warnings, fmt.Sprintf("no %s readings for %s in the %s window", metric, what, f.kind))
			return
		}
		for _, st := range []struct {
			stat results.Stat
			v    float64
		}{{results.StatMin, s.Min}, {results.StatMax, s.Max}, {results.StatAvg, s.Avg}} {
			f.out.Samples = append(f.out.Samples, results.Sample{Window: qw, Source: SourceKubelet, Component: component,
				Metric: metric, Stat: st.stat, Value: st.v * scale, Unit: unit, Labels: maps.Clone(labels)})
		}
	}
	add(results.MetricCPU, cpu, 1000, results.UnitMillicores)
	add(results.MetricMemory, mem, 1.0/(1<<20), results.UnitMiB)
}

// setFiguresLocked emits set's figures from the series read: per node for the node set (each from its own
// kubelet's node_* series, never a sum over the cluster), else the set's total and each workload's; k.mu must be held.
func (k *KubeletSampler) setFiguresLocked(f *kubeletFigures, set podset.PodSet) {
	if set.Component == results.ComponentNode {
		for _, n := range set.Nodes {
			sub := map[SeriesKey][]Point{}
			for key, pts := range k.series {
				if key.Node == n.Name && setMatches(set, key) {
					sub[key] = pts
				}
			}
			f.emit(set.Component, sub, "node "+n.Name+" (its kubelet's /metrics/resource)", map[string]string{LabelNode: n.Name, LabelSeries: NodeSeriesResource})
		}
		return
	}
	sub := map[SeriesKey][]Point{}
	for key, pts := range k.series {
		if setMatches(set, key) {
			sub[key] = pts
		}
	}
	f.emit(set.Component, sub, string(set.Component), nil)
	// Each workload's figures from the same readings (the totals above stay the sums over every pod).
	if wc, ok := results.ByWorkload(set.Component); ok && len(set.Workloads) > 0 {
		byWl := map[string]map[SeriesKey][]Point{}
		for key, pts := range sub {
			if wl, ok := set.Workloads[podset.PodKey(key.Namespace, key.Pod)]; ok {
				if byWl[wl] == nil {
					byWl[wl] = map[SeriesKey][]Point{}
				}
				byWl[wl][key] = pts
			}
		}
		for _, wl := range set.WorkloadKeys() {
			f.emit(wc, byWl[wl], string(wc)+" "+wl, map[string]string{results.LabelWorkload: wl})
		}
	}
}

// dropBeforeLocked drops the readings older than cut, and the series left without any; k.mu must be held.
func (k *KubeletSampler) dropBeforeLocked(cut time.Time) {
	for key, pts := range k.series {
		i := 0
		for i < len(pts) && pts[i].T.Before(cut) {
			i++
		}
		if i == len(pts) {
			delete(k.series, key)
		} else if i > 0 {
			k.series[key] = slices.Clone(pts[i:])
		}
	}
}
