package prom

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// The accuracy tests of issue 13 section 1: a real Prometheus holds a counter whose rate is a known square wave and
// a gauge that is one, sampled every 5 s at offsets that sweep the window's phase against the sample grid; the
// collector's figures are compared with the truth computed here from the waves (never taken from its output).

// wave is a square wave: lo for the first half of every period, hi for the second, from t = 0.
type wave struct{ lo, hi, period float64 }

func (w wave) at(t float64) float64 {
	if math.Mod(t, w.period) < w.period/2 {
		return w.lo
	}
	return w.hi
}

// integral is the wave's integral from 0 to t (t >= 0).
func (w wave) integral(t float64) float64 {
	n := math.Floor(t / w.period)
	r, h := t-n*w.period, w.period/2
	v := n * h * (w.lo + w.hi)
	if r < h {
		return v + r*w.lo
	}
	return v + h*w.lo + (r-h)*w.hi
}

func (w wave) mean(s, e float64) float64 { return (w.integral(e) - w.integral(s)) / (e - s) }

// edgeBound is the most a window's average of w can be off when estimated from samples dt apart: at each edge, the
// true integral bends away from the chord between the two samples around it by up to (hi-lo)*dt/4 (a change of rate
// halfway between them); two edges, over the window's integral.
func (w wave) edgeBound(dt, window float64) float64 {
	return 2 * (w.hi - w.lo) * dt / 4 / (w.mean(0, w.period) * window)
}

// accSignal is one synthetic pod: CPU (cores) and memory (MiB) waves, its samples offset from the 5 s grid (live)
// or at the given times (backfilled).
type accSignal struct {
	pod      string
	cpu, mem wave
	offset   float64   // seconds after the grid
	times    []float64 // sample times, seconds after the epoch
	resetAt  int       // sample index after which the counter restarts from 0 (0 = never)
}

// counter is the cumulative CPU counter the signal exports at sample i, reset after sample resetAt.
func (a accSignal) counter(i int) float64 {
	if a.resetAt > 0 && i > a.resetAt {
		return a.cpu.integral(a.times[i]) - a.cpu.integral(a.times[a.resetAt])
	}
	return a.cpu.integral(a.times[i])
}

// grid is n sample times dt apart from offset.
func grid(n int, dt, offset float64) []float64 {
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = float64(i)*dt + offset
	}
	return ts
}

// jittered is n sample times about dt apart (dt +- 1 s, deterministic), from offset: cAdvisor's housekeeping under
// load spaces samples 8-9 s apart although the scrape is every 5 s.
func jittered(n int, dt, offset float64) []float64 {
	ts := make([]float64, n)
	t := offset
	for i := range ts {
		ts[i] = math.Round(t*1000) / 1000
		t += dt + math.Sin(float64(i)*1.7+offset)
	}
	return ts
}

// oldCatalog is the catalog this package used before (instant PromQL: increase()/window for the CPU average,
// subqueries for the rest), rendered for a namespace, kept to show what the sweep measures of it.
func oldQueries(ns string, window, avgWindow, rate, step int) map[string]string {
	cpu := fmt.Sprintf(`container_cpu_usage_seconds_total{namespace=%q,container!="",container!="POD"}`, ns)
	mem := fmt.Sprintf(`last_over_time(container_memory_working_set_bytes{namespace=%q,container!="",container!="POD"}[%ds])`, ns, rate)
	return map[string]string{
		"cpu/min":    fmt.Sprintf(`min_over_time((sum by (pod) (rate(%s[%ds])))[%ds:%ds]) * 1000`, cpu, rate, window, step),
		"cpu/max":    fmt.Sprintf(`max_over_time((sum by (pod) (rate(%s[%ds])))[%ds:%ds]) * 1000`, cpu, rate, window, step),
		"cpu/avg":    fmt.Sprintf(`sum by (pod) (increase(%s[%ds])) / %d * 1000`, cpu, avgWindow, avgWindow),
		"memory/min": fmt.Sprintf(`min_over_time((sum by (pod) (%s))[%ds:%ds]) / 1048576`, mem, window, step),
		"memory/max": fmt.Sprintf(`max_over_time((sum by (pod) (%s))[%ds:%ds]) / 1048576`, mem, window, step),
		"memory/avg": fmt.Sprintf(`avg_over_time((sum by (pod) (%s))[%ds:%ds]) / 1048576`, mem, window, step),
	}
}

// sweepResult gathers the errors of one method over a sweep.
type sweepResult struct {
	worstCPU, worstMem     float64 // relative error of the average
	worstCPUAt, worstMemAt string
	outside                int // windows whose average lies outside its own [min, max]
	outsideAt              string
	windows                int
}

func (r *sweepResult) add(where string, cpuTruth, memTruth float64, got map[string]float64) {
	r.windows++
	if e := math.Abs(got["cpu/avg"]-cpuTruth) / cpuTruth; e > r.worstCPU {
		r.worstCPU, r.worstCPUAt = e, fmt.Sprintf("%s: %.3f vs truth %.3f", where, got["cpu/avg"], cpuTruth)
	}
	if e := math.Abs(got["memory/avg"]-memTruth) / memTruth; e > r.worstMem {
		r.worstMem, r.worstMemAt = e, fmt.Sprintf("%s: %.3f vs truth %.3f", where, got["memory/avg"], memTruth)
	}
	for _, m := range []string{"cpu", "memory"} {
		lo, hi, avg := got[m+"/min"], got[m+"/max"], got[m+"/avg"]
		if avg < lo-1e-9*math.Abs(lo) || avg > hi+1e-9*math.Abs(hi) {
			r.outside++
			r.outsideAt = fmt.Sprintf("%s %s: avg %.4f outside [%.4f, %.4f]", where, m, avg, lo, hi)
		}
	}
}

func (r sweepResult) String() string {
	return fmt.Sprintf("%d windows: worst CPU avg error %.3f%% (%s), worst memory avg error %.3f%% (%s), %d averages outside [min, max] (%s)",
		r.windows, 100*r.worstCPU, r.worstCPUAt, 100*r.worstMem, r.worstMemAt, r.outside, r.outsideAt)
}

// needPromtool returns the path of promtool (same package as prometheus), or skips (fails in CI) without it.
func needPromtool(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found (CI must have it: apt-get install prometheus): %v", err)
		}
		t.Skip("promtool not found; install it (apt-get install prometheus) to run the backfilled accuracy sweep")
	}
	return bin
}

// TestAccuracySweepBackfilled is the long sweep of issue 13: two 240 s windows' worth of data per window (240 s
// windows, 5 s samples), backfilled with promtool so it takes seconds, not minutes. Forty pods: wave A (period 40 s,
// 0.2/0.6 cores; 200/240 MiB) and wave B (period 50 s, which does not divide the window) at 20 sample offsets
// 0, 0.25, ..., 4.75 s, the counter reset once mid-data; window ends are swept over 50 whole seconds. 2000
// (pod, window) pairs in all.
//
// Wave A must be within 0.5 % at every phase. Wave B cannot be at every phase, by any method that only has the
// samples: with a rate change between the two samples around an edge, what the counter did between them is unknown
// to (hi-lo)*dt/4 = 0.5 core-s per edge, 0.52 % of a 240 s window at 0.4 cores, 1.04 % for both edges
// (wave.edgeBound); B is held to that bound, and the log says what it reached.
func TestAccuracySweepBackfilled(t *testing.T) {
	t.Parallel()
	promtool := needPromtool(t)
	const (
		dt      = 5.0
		samples = 80 // 400 s of data
		window  = 240
		sweep   = 50
		offsets = 20
	)
	waveA := wave{0.2, 0.6, 40}
	waveB := wave{0.2, 0.6, 50}
	memA, memB := wave{200, 240, 40}, wave{200, 240, 50}
	// Recent enough for the 1 h retention, whole 200 s so both waves start at phase 0.
	epoch := time.Now().Add(-30 * time.Minute).Truncate(200 * time.Second)
	var sigs, sparse []accSignal
	for k := range offsets {
		off := float64(k) * 0.25
		sigs = append(sigs, accSignal{pod: fmt.Sprintf("a-%02d", k), cpu: waveA, mem: memA, times: grid(samples, dt, off), resetAt: 45},
			accSignal{pod: fmt.Sprintf("b-%02d", k), cpu: waveB, mem: memB, times: grid(samples, dt, off), resetAt: 45})
		// Short windows over sparse samples (the 20 s windows of a short case, samples 8-10 s apart): the old
		// catalog's average and extremes came from different ranges there.
		sparse = append(sparse, accSignal{pod: fmt.Sprintf("c-%02d", k), cpu: wave{0.3, 0.7, 30}, mem: wave{100, 130, 30}, times: jittered(samples*5/9, 9, 2*off)})
	}
	var om strings.Builder
	om.WriteString("# HELP container_cpu_usage_seconds cpu\n# TYPE container_cpu_usage_seconds counter\n")
	for _, s := range append(sigs, sparse...) {
		for i, t := range s.times {
			fmt.Fprintf(&om, "container_cpu_usage_seconds_total{namespace=\"acc\",pod=%q,container=\"app\"} %.9g %.3f\n", s.pod, s.counter(i), float64(epoch.Unix())+t)
		}
	}
	om.WriteString("# HELP container_memory_working_set_bytes mem\n# TYPE container_memory_working_set_bytes gauge\n")
	for _, s := range append(sigs, sparse...) {
		for _, t := range s.times {
			fmt.Fprintf(&om, "container_memory_working_set_bytes{namespace=\"acc\",pod=%q,container=\"app\"} %.9g %.3f\n", s.pod, s.mem.at(t)*(1<<20), float64(epoch.Unix())+t)
		}
	}
	om.WriteString("# EOF\n")
	input := filepath.Join(t.TempDir(), "acc.om")
	if err := os.WriteFile(input, []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startPrometheusPrepared(t, "", func(dataDir string) {
		if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", input, dataDir).CombinedOutput(); err != nil {
			t.Fatalf("promtool backfill: %v\n%s", err, out)
		}
	})
	api, err := NewAPI(ClientConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	retry := Retry{Attempts: 2, Backoff: 200 * time.Millisecond, Timeout: 20 * time.Second}
	col := &Collector{API: api, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second}, Retry: retry}
	var sets []podset.PodSet
	for _, s := range sigs {
		sets = append(sets, podset.PodSet{Component: results.Component(s.pod), Pods: map[string][]string{"acc": {s.pod}}})
	}
	res := map[string]*sweepResult{"new A": {}, "new B": {}, "old A": {}, "old B": {}}
	for j := range sweep {
		end := epoch.Add(time.Duration(60+window+j) * time.Second)
		w := resultsWindow(end.Add(-window*time.Second), end)
		got, err := col.Collect(ctx, w, sets)
		if err != nil {
			t.Fatal(err)
		}
		// Backfilled blocks come from no scrape target (no job label, no up series): the completeness check says
		// it could not run, once for the window, and nothing else is to be said.
		if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], ": series without a job label: whether prometheus had their samples all through the load window is not checked") {
			t.Errorf("window %d: warnings %q", j, got.Warnings)
		}
		figs := map[string]map[string]float64{}
		for _, smp := range got.Samples {
			if figs[string(smp.Component)] == nil {
				figs[string(smp.Component)] = map[string]float64{}
			}
			figs[string(smp.Component)][string(smp.Metric)+"/"+string(smp.Stat)] = smp.Value
		}
		old := map[string]map[string]float64{}
		for name, q := range oldQueries("acc", window, window, 20, 5) {
			v, _, err := query(ctx, api, retry, q, end)
			if err != nil {
				t.Fatal(err)
			}
			for _, smp := range v.(model.Vector) {
				pod := string(smp.Metric["pod"])
				if old[pod] == nil {
					old[pod] = map[string]float64{}
				}
				old[pod][name] = float64(smp.Value)
			}
		}
		s0, e0 := float64(60+j), float64(60+window+j)
		for _, s := range sigs {
			cpuTruth, memTruth := 1000*s.cpu.mean(s0, e0), s.mem.mean(s0, e0)
			where := fmt.Sprintf("%s window end +%ds", s.pod, j)
			set := strings.ToUpper(s.pod[:1])
			if len(figs[s.pod]) != 6 {
				t.Fatalf("%s: figures %v, want 6", where, figs[s.pod])
			}
			res["new "+set].add(where, cpuTruth, memTruth, figs[s.pod])
			res["old "+set].add(where, cpuTruth, memTruth, old[s.pod])
			// min and max stay within the wave's extremes (rate points are averages over 20 s).
			f := figs[s.pod]
			if f["cpu/min"] < 1000*s.cpu.lo-1e-6 || f["cpu/max"] > 1000*s.cpu.hi+1e-6 || f["memory/min"] < s.mem.lo-1e-6 || f["memory/max"] > s.mem.hi+1e-6 {
				t.Errorf("%s: extremes %v beyond the waves' %v %v", where, f, s.cpu, s.mem)
			}
		}
	}
	// Short windows over sparse samples: 20 s windows, samples 8-10 s apart (step 9 s, rate range 36 s), ends swept
	// over one 30 s period. The CPU figures cover the rate range up to the window's end (the collector says so),
	// the memory figures the window.
	const short, rng, step = 20, 36, 9
	colSparse := &Collector{API: api, Interval: Interval{Scrape: 5 * time.Second, Effective: step * time.Second}, Retry: retry}
	var sparseSets []podset.PodSet
	for _, s := range sparse {
		sparseSets = append(sparseSets, podset.PodSet{Component: results.Component(s.pod), Pods: map[string][]string{"acc": {s.pod}}})
	}
	res["new C"], res["old C"] = &sweepResult{}, &sweepResult{}
	for j := range 30 {
		end := epoch.Add(time.Duration(100+j) * time.Second)
		got, err := colSparse.Collect(ctx, resultsWindow(end.Add(-short*time.Second), end), sparseSets)
		if err != nil {
			t.Fatal(err)
		}
		// Backfilled blocks come from no scrape target (no job label, no up series): the completeness check says
		// it could not run, once for the window.
		if len(got.Warnings) != 2 || !strings.Contains(got.Warnings[0], "shorter than the rate range 36s") ||
			!strings.HasPrefix(got.Warnings[1], "c-00, c-01, ") || !strings.Contains(got.Warnings[1], ": series without a job label: whether prometheus had their samples all through the load window is not checked") {
			t.Errorf("short window %d: warnings %q, want the one about the rate range and the one about the unchecked completeness", j, got.Warnings)
		}
		figs := map[string]map[string]float64{}
		for _, smp := range got.Samples {
			if figs[string(smp.Component)] == nil {
				figs[string(smp.Component)] = map[string]float64{}
			}
			figs[string(smp.Component)][string(smp.Metric)+"/"+string(smp.Stat)] = smp.Value
		}
		old := map[string]map[string]float64{}
		for name, q := range oldQueries("acc", short, rng, rng, step) {
			v, _, err := query(ctx, api, retry, q, end)
			if err != nil {
				t.Fatal(err)
			}
			for _, smp := range v.(model.Vector) {
				pod := string(smp.Metric["pod"])
				if old[pod] == nil {
					old[pod] = map[string]float64{}
				}
				old[pod][name] = float64(smp.Value)
			}
		}
		e0 := float64(100 + j)
		for _, s := range sparse {
			where := fmt.Sprintf("%s window end +%ds", s.pod, j)
			cpuTruth, memTruth := 1000*s.cpu.mean(e0-rng, e0), s.mem.mean(e0-short, e0)
			res["new C"].add(where, cpuTruth, memTruth, figs[s.pod])
			res["old C"].add(where, cpuTruth, memTruth, old[s.pod])
		}
	}
	for _, k := range []string{"new A", "new B", "new C", "old A", "old B", "old C"} {
		t.Logf("%s: %s", k, res[k])
	}
	if r := res["new C"]; r.outside > 0 || r.windows != 30*len(sparse) {
		t.Errorf("short sparse windows: %s; want every average within its [min, max]", r)
	}
	if r := res["old C"]; r.outside == 0 {
		t.Errorf("old queries on short sparse windows: %s; the sweep no longer shows averages outside [min, max]", r)
	}
	boundB := waveB.edgeBound(dt, window)
	if r := res["new A"]; r.worstCPU > 0.005 || r.worstMem > 0.005 || r.outside > 0 {
		t.Errorf("wave A: %s; want within 0.5 %% and every average within its [min, max]", r)
	}
	if r := res["new B"]; r.worstCPU > boundB || r.worstMem > 0.005 || r.outside > 0 {
		t.Errorf("wave B: %s; want the CPU within the %.2f %% edge bound, memory within 0.5 %%, every average within its [min, max]", r, 100*boundB)
	}
	// The sweep must tell the methods apart: the old catalog misses 0.5 % on wave A, or the test proves nothing.
	if r := res["old A"]; r.worstCPU <= 0.005 && r.outside == 0 {
		t.Errorf("old queries on wave A: %s; the sweep no longer shows what it was built to show", r)
	}
}

func resultsWindow(start, end time.Time) results.Window {
	return results.Window{Kind: results.WindowLoad, Start: start, End: end}
}

// liveExporter serves the signals of sigs, each stamped offset before the scrape (as cAdvisor stamps its own
// housekeeping times), with the value the wave had then.
type liveExporter struct {
	epoch time.Time
	sigs  []accSignal
}

func (l *liveExporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	var b strings.Builder
	b.WriteString("# TYPE container_cpu_usage_seconds_total counter\n")
	for _, s := range l.sigs {
		ts := now.Add(-time.Duration(s.offset * float64(time.Second))).Truncate(time.Millisecond)
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{namespace=\"live\",pod=%q,container=\"app\"} %.9g %d\n", s.pod, s.cpu.integral(ts.Sub(l.epoch).Seconds()), ts.UnixMilli())
	}
	b.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
	for _, s := range l.sigs {
		ts := now.Add(-time.Duration(s.offset * float64(time.Second))).Truncate(time.Millisecond)
		fmt.Fprintf(&b, "container_memory_working_set_bytes{namespace=\"live\",pod=%q,container=\"app\"} %.9g %d\n", s.pod, s.mem.at(ts.Sub(l.epoch).Seconds())*(1<<20), ts.UnixMilli())
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

// TestAccuracySweepLiveScrape is the short live counterpart: Prometheus scrapes a loopback exporter every 5 s, ten
// pods stamp their samples 0, 0.5, ..., 4.5 s before the scrape, the waves have a 20 s period (0.2/0.6 cores,
// 200/240 MiB), and 40 s windows end at 10 successive whole seconds: 100 (pod, window) pairs, about 90 s.
func TestAccuracySweepLiveScrape(t *testing.T) {
	t.Parallel()
	const window, sweep = 40, 10
	exp := &liveExporter{epoch: time.Now().Truncate(20 * time.Second)}
	for k := range 10 {
		exp.sigs = append(exp.sigs, accSignal{pod: fmt.Sprintf("live-%02d", k), cpu: wave{0.2, 0.6, 20}, mem: wave{200, 240, 20}, offset: float64(k) * 0.5})
	}
	api := scrapedAPI(t, "live-cadvisor", "5s", exp)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	retry := Retry{Attempts: 2, Backoff: 200 * time.Millisecond, Timeout: 10 * time.Second}
	var first time.Time
	for first.IsZero() {
		v, _, err := query(ctx, api, retry, `timestamp(container_cpu_usage_seconds_total{pod="live-09"})`, time.Time{})
		if f, ok, _ := Scalar(v); err == nil && ok {
			first = time.UnixMilli(int64(f * 1000))
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("prometheus never scraped the exporter")
		case <-time.After(250 * time.Millisecond):
		}
	}
	col := &Collector{API: api, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second, Job: "live-cadvisor"}, Retry: retry}
	var sets []podset.PodSet
	for _, s := range exp.sigs {
		sets = append(sets, podset.PodSet{Component: results.Component(s.pod), Pods: map[string][]string{"live": {s.pod}}})
	}
	// The first window starts a rate range and a step after the first (most offset) sample: a sample before it.
	start0 := first.Truncate(time.Second).Add(26 * time.Second)
	var r, old sweepResult
	for j := range sweep {
		start := start0.Add(time.Duration(j) * time.Second)
		got, err := col.Collect(ctx, resultsWindow(start, start.Add(window*time.Second)), sets)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Warnings) > 0 {
			t.Errorf("window %d: warnings %q", j, got.Warnings)
		}
		figs := map[string]map[string]float64{}
		for _, smp := range got.Samples {
			if figs[string(smp.Component)] == nil {
				figs[string(smp.Component)] = map[string]float64{}
			}
			figs[string(smp.Component)][string(smp.Metric)+"/"+string(smp.Stat)] = smp.Value
		}
		s0, e0 := got.Window.Start.Sub(exp.epoch).Seconds(), got.Window.End.Sub(exp.epoch).Seconds()
		oldFigs := map[string]map[string]float64{}
		for name, q := range oldQueries("live", window, window, 20, 5) {
			v, _, err := query(ctx, api, retry, q, got.Window.End)
			if err != nil {
				t.Fatal(err)
			}
			for _, smp := range v.(model.Vector) {
				pod := string(smp.Metric["pod"])
				if oldFigs[pod] == nil {
					oldFigs[pod] = map[string]float64{}
				}
				oldFigs[pod][name] = float64(smp.Value)
			}
		}
		for _, s := range exp.sigs {
			where := fmt.Sprintf("%s window start %s", s.pod, got.Window.Start.Format(time.TimeOnly))
			r.add(where, 1000*s.cpu.mean(s0, e0), s.mem.mean(s0, e0), figs[s.pod])
			old.add(where, 1000*s.cpu.mean(s0, e0), s.mem.mean(s0, e0), oldFigs[s.pod])
		}
	}
	t.Logf("live, 5 s scrape: new: %s", r)
	t.Logf("live, 5 s scrape: old: %s", old)
	if r.worstCPU > 0.005 || r.worstMem > 0.005 || r.outside > 0 || r.windows != sweep*len(exp.sigs) {
		t.Errorf("live sweep: %s; want every average within 0.5 %% and within its [min, max]", r)
	}
}
