package results

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"
)

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// fixtureBuilder writes the samples of a run the way the runner does: case by case, idle window then load window.
type fixtureBuilder struct {
	t0      time.Time
	slot    int
	samples []Sample
	cases   []CaseResult
}

type fixtureCase struct {
	b          *fixtureBuilder
	res        CaseResult
	idle, load Window
}

func (b *fixtureBuilder) newCase(topology string, mode Mode, load string, rep, attempt int, status Status) *fixtureCase {
	start := b.t0.Add(time.Duration(b.slot) * 10 * time.Minute)
	b.slot++
	c := &fixtureCase{b: b,
		idle: Window{Kind: WindowIdle, Start: start, End: start.Add(time.Minute)},
		load: Window{Kind: WindowLoad, Start: start.Add(2 * time.Minute), End: start.Add(7 * time.Minute)},
	}
	c.res = CaseResult{RunID: "run-golden", CaseID: fmt.Sprintf("%s/%s/%s/r%d", topology, mode, load, rep), Mode: mode,
		Topology: topology, Load: load, Repetition: rep, Status: status, Start: start, End: start.Add(8 * time.Minute),
		Windows: []Window{c.idle, c.load}, Attempt: attempt}
	return c
}

func (c *fixtureCase) add(w Window, source string, component Component, metric Metric, stat Stat, unit Unit, v float64, labels ...string) *fixtureCase {
	s := Sample{RunID: c.res.RunID, CaseID: c.res.CaseID, Mode: c.res.Mode, Topology: c.res.Topology, Load: c.res.Load,
		Repetition: c.res.Repetition, Window: w, Source: source, Component: component, Metric: metric, Stat: stat,
		Value: v, Unit: unit, Attempt: c.res.Attempt}
	if len(labels) > 0 {
		s.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			s.Labels[labels[i]] = labels[i+1]
		}
	}
	c.b.samples = append(c.b.samples, s)
	return c
}

func (c *fixtureCase) done() { c.b.cases = append(c.b.cases, c.res) }

// summarizeFixture is 2 modes x 3 repetitions of one topology and load (ambient's second repetition needed a re-run;
// a fourth ambient repetition failed). Values are chosen so the statistics can be checked by hand (see
// TestSummarizeGolden).
func summarizeFixture() (RunMeta, []Sample, []CaseResult) {
	meta := RunMeta{SchemaVersion: SchemaVersion, RunID: "run-golden", Command: "run",
		Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	b := &fixtureBuilder{t0: meta.Start}
	const mc, mib = "millicores", "MiB"
	sidecar := func(r int) {
		i := r - 1
		c := b.newCase("single", "sidecar", "1000", r, 1, StatusOK)
		c.add(c.idle, "prometheus", ComponentSidecar, "cpu", "avg", mc, []float64{5, 6, 7}[i])
		c.add(c.idle, "prometheus", ComponentIstiod, "cpu", "avg", mc, 10)
		c.add(c.load, "fortio", ComponentLoadgen, "qps", "value", "rps", []float64{1000, 1150, 1250}[i])
		c.add(c.load, "fortio", ComponentLoadgen, "latency", "p99", "ms", []float64{5, 6, 7}[i])
		c.add(c.load, "prometheus", ComponentApp, "cpu", "avg", mc, []float64{100, 110, 120}[i])
		c.add(c.load, "prometheus", ComponentSidecar, "cpu", "avg", mc, []float64{200, 220, 240}[i])
		c.add(c.load, "prometheus", ComponentSidecar, "cpu", "max", mc, []float64{300, 330, 360}[i])
		c.add(c.load, "prometheus", ComponentIstiod, "cpu", "avg", mc, 10)
		c.add(c.load, "prometheus", ComponentSidecar, "memory", "avg", mib, 50)
		c.add(c.load, "prometheus", ComponentIstiod, "memory", "avg", mib, 100)
		// The app total split by workload (60+40 = 100, ...); the sidecar total too (120+80 = 200, ...).
		c.add(c.load, "prometheus", ComponentAppByWorkload, "cpu", "avg", mc, []float64{60, 66, 72}[i], LabelWorkload, "Deployment/bank/frontend")
		c.add(c.load, "prometheus", ComponentAppByWorkload, "cpu", "avg", mc, []float64{40, 44, 48}[i], LabelWorkload, "StatefulSet/bank/db")
		c.add(c.load, "prometheus", ComponentSidecarByWorkload, "cpu", "avg", mc, []float64{120, 132, 144}[i], LabelWorkload, "Deployment/bank/frontend")
		c.add(c.load, "prometheus", ComponentSidecarByWorkload, "cpu", "avg", mc, []float64{80, 88, 96}[i], LabelWorkload, "StatefulSet/bank/db")
		c.add(c.load, "prometheus", ComponentSidecarByWorkload, "memory", "avg", mib, 30, LabelWorkload, "Deployment/bank/frontend")
		c.done()
	}
	ambient := func(r, attempt int, status Status) {
		i := (r - 1) % 3
		c := b.newCase("single", "ambient", "1000", r, attempt, status)
		c.add(c.idle, "prometheus", ComponentZtunnel, "cpu", "avg", mc, 2)
		c.add(c.idle, "prometheus", ComponentIstiod, "cpu", "avg", mc, 10)
		c.add(c.load, "fortio", ComponentLoadgen, "qps", "value", "rps", 1000)
		c.add(c.load, "fortio", ComponentLoadgen, "latency", "p99", "ms", []float64{4, 5, 6}[i])
		c.add(c.load, "prometheus", ComponentApp, "cpu", "avg", mc, []float64{100, 110, 120}[i])
		c.add(c.load, "prometheus", ComponentZtunnel, "cpu", "avg", mc, []float64{30, 35, 40}[i], "node", "n1")
		c.add(c.load, "prometheus", ComponentZtunnel, "cpu", "avg", mc, []float64{20, 25, 30}[i], "node", "n2")
		c.add(c.load, "prometheus", ComponentIstiod, "cpu", "avg", mc, 10)
		c.add(c.load, "prometheus", ComponentZtunnel, "memory", "avg", mib, []float64{20, 22, 24}[i])
		c.add(c.load, "prometheus", ComponentIstiod, "memory", "avg", mib, 100)
		c.add(c.load, "prometheus", ComponentAppByWorkload, "cpu", "avg", mc, []float64{60, 66, 72}[i], LabelWorkload, "Deployment/bank/frontend")
		c.add(c.load, "prometheus", ComponentAppByWorkload, "cpu", "avg", mc, []float64{40, 44, 48}[i], LabelWorkload, "StatefulSet/bank/db")
		if status == StatusFailed {
			c.add(c.load, "prometheus", ComponentZtunnel, "cpu", "avg", mc, 999, "node", "n1") // must not count
		}
		c.done()
	}
	sidecar(1)
	ambient(1, 1, StatusOK)
	sidecar(2)
	// Attempt 1 of ambient r2 failed before measuring anything (Read drops superseded samples anyway).
	failed := b.newCase("single", "ambient", "1000", 2, 1, StatusFailed)
	failed.res.Reason = "waypoint not ready after 2m"
	failed.done()
	ambient(2, 2, StatusOK)
	sidecar(3)
	ambient(3, 1, StatusOK)
	ambient(4, 1, StatusFailed)
	return meta, b.samples, b.cases
}

func findSeries(t *testing.T, list []Series, k Key) Series {
	t.Helper()
	for _, s := range list {
		if s.Key == k {
			return s
		}
	}
	t.Fatalf("no series %+v", k)
	return Series{}
}

func findDelta(t *testing.T, list []Delta, k Key, base, other Mode) Delta {
	t.Helper()
	for _, d := range list {
		if d.Key == k && d.Base == base && d.Other == other {
			return d
		}
	}
	t.Fatalf("no delta %s vs %s %+v", other, base, k)
	return Delta{}
}

func TestSummarizeGolden(t *testing.T) {
	t.Parallel()
	meta, samples, cases := summarizeFixture()
	sum := Summarize(meta, samples, cases, SummaryOptions{})
	got, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.golden.json", append(got, '\n'))

	// The numbers below were computed by hand (t critical values and p-values with mpmath, see TestMeanCI).
	key := func(mode Mode, window string, component Component, metric Metric, stat Stat, unit Unit) Key {
		return Key{Topology: "single", Mode: mode, Load: "1000", Window: window, Component: component, Metric: metric,
			Stat: stat, Unit: unit}
	}
	t.Run("mesh total", func(t *testing.T) {
		// sidecar: 200+10, 220+10, 240+10 = 210, 230, 250; mean 230, s = 20,
		// CI 230 ± 4.302653·20/√3 = 230 ± 49.682754.
		s := findSeries(t, sum.Series, key("sidecar", WindowLoad, ComponentMesh, "cpu", "avg", "millicores"))
		if !slices.Equal(s.Values, []float64{210, 230, 250}) || !near(s.Mean, 230) || !near(s.StdDev, 20) ||
			!nearInterval(s.CI, 180.3172, 279.6828) {
			t.Errorf("sidecar mesh cpu = %+v", s)
		}
		// ambient: ztunnel n1+n2 = 50, 60, 70, plus istiod 10 = 60, 70, 80; CI 70 ± 24.841377.
		s = findSeries(t, sum.Series, key("ambient", WindowLoad, ComponentMesh, "cpu", "avg", "millicores"))
		if !slices.Equal(s.Values, []float64{60, 70, 80}) || !nearInterval(s.CI, 45.1586, 94.8414) {
			t.Errorf("ambient mesh cpu = %+v", s)
		}
		// The failed r4 (ztunnel 999) is out; the failed first attempt of r2 had no samples.
		if s.N != 3 {
			t.Errorf("ambient mesh cpu N = %d, want 3", s.N)
		}
		for _, s := range sum.Series {
			if s.Component == ComponentMesh && s.Stat != "avg" {
				t.Errorf("mesh total of stat %q: only averages add up", s.Stat)
			}
		}
	})
	t.Run("deltas", func(t *testing.T) {
		// mesh cpu ambient - sidecar: diff 70 - 230 = -160; sb = 400/3, so = 100/3, se = √(500/3) = 12.909944;
		// df = (500/3)² / ((400/3)²/2 + (100/3)²/2) = 50/17 = 2.941176; t(0.975; 50/17) = 3.218759;
		// CI -160 ± 41.553995; percent = -160/230·100 = -69.5652; percentCI = CI·100/230; p = 0.001246.
		k := key("", WindowLoad, ComponentMesh, "cpu", "avg", "millicores")
		d := findDelta(t, sum.Deltas, k, "sidecar", "ambient")
		if !near(d.Diff, -160) || !near(d.WelchDF, 2.9412) || !nearInterval(d.DiffCI, -201.5540, -118.4460) ||
			d.Percent == nil || !near(*d.Percent, -69.5652) || !nearInterval(d.PercentCI, -87.6322, -51.4983) ||
			d.PValue == nil || !near(*d.PValue, 0.0012) || !d.Significant {
			t.Errorf("mesh cpu delta = %s", mustJSON(t, d))
		}
		// mesh memory: sidecar 50+100 = 150 (no spread), ambient 120, 122, 124: df = 2, se = √(4/3),
		// CI -28 ± 4.302653·1.154701 = -28 ± 4.968275.
		d = findDelta(t, sum.Deltas, key("", WindowLoad, ComponentMesh, "memory", "avg", "MiB"), "sidecar", "ambient")
		if !near(d.Diff, -28) || !near(d.WelchDF, 2) || !nearInterval(d.DiffCI, -32.9683, -23.0317) || !d.Significant {
			t.Errorf("mesh memory delta = %s", mustJSON(t, d))
		}
		// istiod 10 in every repetition of both modes: no spread at all, CI [0, 0], p = 1.
		d = findDelta(t, sum.Deltas, key("", WindowLoad, ComponentIstiod, "cpu", "avg", "millicores"), "sidecar", "ambient")
		if d.Diff != 0 || !nearInterval(d.DiffCI, 0, 0) || d.PValue == nil || *d.PValue != 1 || d.Significant {
			t.Errorf("istiod cpu delta = %s", mustJSON(t, d))
		}
		// latency p99 4,5,6 - 5,6,7: diff -1, df 4, se = √(2/3) = 0.816497, CI -1 ± 2.266958, p = 0.287864.
		d = findDelta(t, sum.Deltas, key("", WindowLoad, ComponentLoadgen, "latency", "p99", "ms"), "sidecar", "ambient")
		if !near(d.Diff, -1) || !near(d.WelchDF, 4) || !nearInterval(d.DiffCI, -3.2670, 1.2670) ||
			!near(*d.PValue, 0.2879) || d.Significant {
			t.Errorf("latency delta = %s", mustJSON(t, d))
		}
		// idle mesh: sidecar 15, 16, 17 (s = 1), ambient 12 x3: df = 2, CI -4 ± 4.302653/√3 = -4 ± 2.484138.
		d = findDelta(t, sum.Deltas, key("", WindowIdle, ComponentMesh, "cpu", "avg", "millicores"), "sidecar", "ambient")
		if !near(d.Diff, -4) || !nearInterval(d.DiffCI, -6.4841, -1.5159) || !near(*d.PValue, 0.0202) {
			t.Errorf("idle mesh delta = %s", mustJSON(t, d))
		}
	})
	t.Run("per krps", func(t *testing.T) {
		// sidecar mesh cpu / (achieved rps / 1000): 210/1.00, 230/1.15, 250/1.25 = 210, 200, 200;
		// mean 203.3333, s = 5.773503, CI ± 4.302653·5.773503/√3 = ± 14.342176.
		s := findSeries(t, sum.PerKRPS, key("sidecar", WindowLoad, ComponentMesh, "cpu", "avg", "millicores/krps"))
		if !near(s.Values[0], 210) || !near(s.Values[1], 200) || !near(s.Values[2], 200) || !near(s.Mean, 203.3333) ||
			!nearInterval(s.CI, 188.9912, 217.6755) {
			t.Errorf("sidecar mesh cpu per krps = %+v", s)
		}
		// vs ambient 60, 70, 80 at 1000 rps: diff -133.3333, sb = 100/9, so = 100/3,
		// df = (400/9)² / ((100/9)²/2 + (100/3)²/2) = 3.2, t(0.975; 3.2) = 3.072829, CI -133.3333 ± 20.485524.
		d := findDelta(t, sum.PerKRPSDeltas, key("", WindowLoad, ComponentMesh, "cpu", "avg", "millicores/krps"), "sidecar", "ambient")
		if !near(d.Diff, -133.3333) || !near(d.WelchDF, 3.2) || !nearInterval(d.DiffCI, -153.8189, -112.8478) {
			t.Errorf("mesh cpu per krps delta = %s", mustJSON(t, d))
		}
		for _, s := range sum.PerKRPS {
			if s.Window != WindowLoad || s.Stat != "avg" || s.Component == ComponentIstiod || s.Component == ComponentLoadgen {
				t.Errorf("unexpected per-krps series %+v", s.Key)
			}
		}
	})
	t.Run("shared components", func(t *testing.T) {
		// ambient ztunnel cpu: idle 2 (one unlabelled sample), load n1+n2 = 50, 60, 70: load-driven 48, 58, 68, mean 58,
		// s = 10, CI 58 ± 4.302653·10/√3 = 58 ± 24.841377; per krps at 1000 rps the same figures. sidecar-mode
		// istiod: 10 idle and under load, so all of it is fixed; per krps 0 whatever the rate.
		var got []string
		for _, c := range sum.Shared {
			got = append(got, fmt.Sprintf("%s/%s/%s", c.Mode, c.Component, c.Metric))
		}
		if want := []string{"sidecar/istiod/cpu", "ambient/ztunnel/cpu", "ambient/istiod/cpu"}; !slices.Equal(got, want) {
			t.Fatalf("shared = %q, want %q", got, want)
		}
		zt := sum.Shared[1]
		if zt.Unit != "millicores" || zt.Load != "1000" || zt.Topology != "single" || !strings.Contains(zt.Serves, "node") {
			t.Errorf("ztunnel key %+v", zt)
		}
		if !slices.Equal(zt.Fixed.Values, []float64{2, 2, 2}) || !near(zt.Fixed.Mean, 2) || zt.Fixed.StdDev != 0 {
			t.Errorf("ztunnel fixed %+v", zt.Fixed)
		}
		inc := zt.Incremental
		if !slices.Equal(inc.Values, []float64{48, 58, 68}) || !near(inc.Mean, 58) || !near(inc.StdDev, 10) || inc.CI == nil ||
			!near(inc.CI.Low, 58-24.841377) || !near(inc.CI.High, 58+24.841377) {
			t.Errorf("ztunnel load-driven %+v", inc)
		}
		if pk := zt.IncrementalPerKRPS; pk == nil || pk.Unit != "millicores/krps" || !slices.Equal(pk.Values, []float64{48, 58, 68}) {
			t.Errorf("ztunnel load-driven per krps %+v", pk)
		}
		is := sum.Shared[0]
		if !slices.Equal(is.Fixed.Values, []float64{10, 10, 10}) || !slices.Equal(is.Incremental.Values, []float64{0, 0, 0}) ||
			is.IncrementalPerKRPS == nil || !slices.Equal(is.IncrementalPerKRPS.Values, []float64{0, 0, 0}) {
			t.Errorf("istiod %+v", is)
		}
	})
	t.Run("cases and warnings", func(t *testing.T) {
		var ids []string
		for _, c := range sum.Cases {
			ids = append(ids, c.CaseID+":"+string(c.Status))
		}
		want := []string{"single/sidecar/1000/r1:ok", "single/ambient/1000/r1:ok", "single/sidecar/1000/r2:ok",
			"single/ambient/1000/r2:ok", "single/sidecar/1000/r3:ok", "single/ambient/1000/r3:ok", "single/ambient/1000/r4:failed"}
		if !slices.Equal(ids, want) {
			t.Errorf("cases = %q, want %q", ids, want)
		}
		// The fixture measures memory only under load: the shared components' memory cannot be split, and says so.
		if !slices.Equal(sum.Warnings, []string{`case "single/ambient/1000/r4" is failed: its 13 samples are left out`,
			"shared istiod memory of single/sidecar/1000: no split into a fixed and a load-driven part for r1: no idle average, r2: no idle average, r3: no idle average",
			"shared ztunnel memory of single/ambient/1000: no split into a fixed and a load-driven part for r1: no idle average, r2: no idle average, r3: no idle average",
			"shared istiod memory of single/ambient/1000: no split into a fixed and a load-driven part for r1: no idle average, r2: no idle average, r3: no idle average"}) {
			t.Errorf("warnings = %q", sum.Warnings)
		}
	})
	t.Run("order", func(t *testing.T) {
		// Modes in first-seen order, idle before load, components in constant order with mesh last.
		var got []string
		for _, s := range sum.Series {
			if s.Metric == "cpu" && s.Stat == "avg" {
				got = append(got, fmt.Sprintf("%s/%s/%s/%s", s.Mode, s.Window, s.Component, s.Labels))
			}
		}
		want := []string{
			"sidecar/idle/sidecar/", "sidecar/idle/istiod/", "sidecar/idle/mesh/",
			"sidecar/load/app/", "sidecar/load/sidecar/", "sidecar/load/istiod/", "sidecar/load/mesh/",
			"ambient/idle/ztunnel/", "ambient/idle/istiod/", "ambient/idle/mesh/",
			"ambient/load/app/", "ambient/load/ztunnel/node=n1", "ambient/load/ztunnel/node=n2", "ambient/load/istiod/",
			"ambient/load/mesh/",
		}
		if !slices.Equal(got, want) {
			t.Errorf("cpu avg series order:\n got %q\nwant %q", got, want)
		}
	})
}

// TestSummarizeWorkloads: the per-workload samples repeat the app and sidecar totals split up, so they must change
// nothing the summary derived before them (Series, Deltas, PerKRPS, Shared), and come out apart, with their own
// total, intervals and deltas.
func TestSummarizeWorkloads(t *testing.T) {
	t.Parallel()
	meta, samples, cases := summarizeFixture()
	with := Summarize(meta, samples, cases, SummaryOptions{})
	var without []Sample
	for _, s := range samples {
		if !IsWorkloadComponent(s.Component) {
			without = append(without, s)
		}
	}
	if len(without) == len(samples) {
		t.Fatal("the fixture has no per-workload samples")
	}
	base := Summarize(meta, without, cases, SummaryOptions{})
	if mustJSON(t, with.Series) != mustJSON(t, base.Series) || mustJSON(t, with.Deltas) != mustJSON(t, base.Deltas) ||
		mustJSON(t, with.PerKRPS) != mustJSON(t, base.PerKRPS) || mustJSON(t, with.Shared) != mustJSON(t, base.Shared) {
		t.Error("per-workload samples changed the component figures")
	}
	if len(base.Workloads) != 0 || len(base.WorkloadDeltas) != 0 {
		t.Errorf("no per-workload samples, got workloads %d, deltas %d", len(base.Workloads), len(base.WorkloadDeltas))
	}
	wkey := func(mode Mode, component Component, metric Metric, workload string) Key {
		return Key{Topology: "single", Mode: mode, Load: "1000", Window: WindowLoad, Component: component, Metric: metric,
			Stat: "avg", Unit: map[Metric]Unit{"cpu": "millicores", "memory": "MiB"}[metric], Labels: LabelWorkload + "=" + workload}
	}
	const fe, db = "Deployment/bank/frontend", "StatefulSet/bank/db"
	// frontend in sidecar mode: app 60, 66, 72 + sidecar 120, 132, 144 = 180, 198, 216; mean 198, s = 18.
	tot := findSeries(t, with.Workloads, wkey("sidecar", ComponentWorkloadTotal, "cpu", fe))
	if !slices.Equal(tot.Values, []float64{180, 198, 216}) || !near(tot.Mean, 198) || !near(tot.StdDev, 18) || tot.CI == nil {
		t.Errorf("frontend cpu total = %+v", tot)
	}
	// Memory: only the sidecar measured it, so the total is the sidecar's.
	if m := findSeries(t, with.Workloads, wkey("sidecar", ComponentWorkloadTotal, "memory", fe)); !slices.Equal(m.Values, []float64{30, 30, 30}) {
		t.Errorf("frontend memory total = %v", m.Values)
	}
	// In ambient the workload has no sidecar: its total is its app (the failed r4 left out).
	if a := findSeries(t, with.Workloads, wkey("ambient", ComponentWorkloadTotal, "cpu", db)); !slices.Equal(a.Values, []float64{40, 44, 48}) {
		t.Errorf("db ambient total = %v", a.Values)
	}
	// ambient - sidecar of db's total: means 44 (app only) - 132 (40+80, 44+88, 48+96) = -88.
	k := wkey("", ComponentWorkloadTotal, "cpu", db)
	d := findDelta(t, with.WorkloadDeltas, k, "sidecar", "ambient")
	if !near(d.Diff, -88) || d.Percent == nil || !near(*d.Percent, -100*88.0/132) {
		t.Errorf("db total delta = %+v", d)
	}
	// The app part has a delta too (same values in both modes here), the sidecar part none (no ambient series).
	findDelta(t, with.WorkloadDeltas, wkey("", ComponentAppByWorkload, "cpu", db), "sidecar", "ambient")
	for _, d := range with.WorkloadDeltas {
		if d.Component == ComponentSidecarByWorkload {
			t.Errorf("sidecar-by-workload delta without an ambient series: %+v", d)
		}
	}
	for _, s := range with.Series {
		if IsWorkloadComponent(s.Component) {
			t.Errorf("per-workload series in Series: %+v", s.Key)
		}
	}
	// Order: workloads in first-seen order within each component.
	var got []string
	for _, s := range with.Workloads {
		if s.Mode == "sidecar" && s.Metric == "cpu" {
			got = append(got, string(s.Component)+"/"+s.Labels)
		}
	}
	want := []string{"app-by-workload/workload=" + fe, "app-by-workload/workload=" + db, "sidecar-by-workload/workload=" + fe,
		"sidecar-by-workload/workload=" + db, "workload-total/workload=" + fe, "workload-total/workload=" + db}
	if !slices.Equal(got, want) {
		t.Errorf("order:\n got %q\nwant %q", got, want)
	}
	// An input workload-total is derived, not read.
	bogus := append(slices.Clone(samples), Sample{RunID: "run-golden", CaseID: samples[0].CaseID, Mode: "sidecar", Topology: "single",
		Load: "1000", Window: samples[0].Window, Component: ComponentWorkloadTotal, Metric: "cpu", Stat: "avg", Value: 1, Unit: "millicores"})
	if sum := Summarize(meta, bogus, cases, SummaryOptions{}); !hasWarning(sum, `ignored input samples of component "workload-total"`) ||
		mustJSON(t, sum.Workloads) != mustJSON(t, with.Workloads) {
		t.Error("input workload-total samples were not ignored")
	}
}

func hasWarning(sum Summary, substr string) bool {
	return slices.ContainsFunc(sum.Warnings, func(w string) bool { return strings.Contains(w, substr) })
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSummarizeDeterministic(t *testing.T) {
	t.Parallel()
	meta, samples, cases := summarizeFixture()
	first := mustJSON(t, Summarize(meta, samples, cases, SummaryOptions{}))
	for range 20 { // map iteration order differs between calls
		if got := mustJSON(t, Summarize(meta, samples, cases, SummaryOptions{})); got != first {
			t.Fatal("Summarize is not deterministic")
		}
	}
	before := mustJSON(t, samples)
	Summarize(meta, samples, cases, SummaryOptions{})
	if mustJSON(t, samples) != before {
		t.Error("Summarize modified its input samples")
	}
}

func TestSummarizeOptions(t *testing.T) {
	t.Parallel()
	meta, samples, cases := summarizeFixture()
	tests := []struct {
		name         string
		opts         SummaryOptions
		wantConf     float64
		wantDeltas   int
		wantWarnings int
	}{
		{name: "defaults", opts: SummaryOptions{}, wantConf: 0.95, wantDeltas: 9, wantWarnings: 4},
		{name: "explicit confidence", opts: SummaryOptions{Confidence: 0.9}, wantConf: 0.9, wantDeltas: 9, wantWarnings: 4},
		{name: "invalid confidence", opts: SummaryOptions{Confidence: 95}, wantConf: 0.95, wantDeltas: 9, wantWarnings: 5},
		{name: "reversed pair", opts: SummaryOptions{Pairs: []ModePair{{"ambient", "sidecar"}}}, wantConf: 0.95, wantDeltas: 9, wantWarnings: 4},
		{name: "no pairs", opts: SummaryOptions{Pairs: []ModePair{}}, wantConf: 0.95, wantDeltas: 0, wantWarnings: 4},
		{name: "absent modes", opts: SummaryOptions{Pairs: []ModePair{{"none", "ambient"}}}, wantConf: 0.95, wantDeltas: 0, wantWarnings: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sum := Summarize(meta, samples, cases, tt.opts)
			if sum.Confidence != tt.wantConf || len(sum.Deltas) != tt.wantDeltas || len(sum.Warnings) != tt.wantWarnings {
				t.Errorf("confidence %v, %d deltas, warnings %q; want %v, %d, %d warnings",
					sum.Confidence, len(sum.Deltas), sum.Warnings, tt.wantConf, tt.wantDeltas, tt.wantWarnings)
			}
		})
	}
}

func TestSummarizeEdgeCases(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	load := func(i int) Window {
		start := t0.Add(time.Duration(i) * time.Hour)
		return Window{Kind: WindowLoad, Start: start, End: start.Add(time.Minute)}
	}
	smp := func(caseID string, rep int, w Window, component Component, metric Metric, stat Stat, unit Unit, v float64, labels ...string) Sample {
		s := Sample{CaseID: caseID, Mode: "sidecar", Repetition: rep, Window: w, Component: component, Metric: metric,
			Stat: stat, Unit: unit, Value: v}
		if len(labels) == 2 {
			s.Labels = map[string]string{labels[0]: labels[1]}
		}
		return s
	}
	tests := []struct {
		name    string
		samples []Sample
		check   func(t *testing.T, sum Summary)
	}{
		{
			name: "per krps sums load clients in the window",
			samples: []Sample{
				smp("c1", 1, load(0), "loadgen", "qps", "value", "rps", 300, "client", "a"),
				smp("c1", 1, load(0), "loadgen", "qps", "value", "rps", 200, "client", "b"),
				smp("c1", 1, load(0), "sidecar", "cpu", "avg", "millicores", 100),
			},
			check: func(t *testing.T, sum Summary) {
				if len(sum.PerKRPS) != 2 || sum.PerKRPS[0].Component != "sidecar" || sum.PerKRPS[0].Mean != 200 ||
					sum.PerKRPS[1].Component != "mesh" || sum.PerKRPS[1].Mean != 200 {
					t.Errorf("perKRPS = %s; want sidecar and mesh at 100/(500/1000) = 200", mustJSON(t, sum.PerKRPS))
				}
			},
		},
		{
			// A run with several load targets has the run's qps and each target's part (label target): only the
			// run's counts, or the rate would be doubled.
			name: "per krps skips load target parts",
			samples: []Sample{
				smp("c1", 1, load(0), "loadgen", "qps", "value", "rps", 500),
				smp("c1", 1, load(0), "loadgen", "qps", "value", "rps", 375, "target", "web"),
				smp("c1", 1, load(0), "loadgen", "qps", "value", "rps", 125, "target", "api"),
				smp("c1", 1, load(0), "sidecar", "cpu", "avg", "millicores", 100),
			},
			check: func(t *testing.T, sum Summary) {
				if len(sum.PerKRPS) != 2 || sum.PerKRPS[0].Mean != 200 {
					t.Errorf("perKRPS = %s; want sidecar at 100/(500/1000) = 200", mustJSON(t, sum.PerKRPS))
				}
			},
		},
		{
			name: "per krps falls back to the case's only qps window",
			samples: []Sample{
				smp("c1", 1, load(0), "loadgen", "qps", "value", "rps", 2000),
				smp("c1", 1, load(1), "app", "memory", "avg", "MiB", 64),
			},
			check: func(t *testing.T, sum Summary) {
				if len(sum.PerKRPS) != 1 || sum.PerKRPS[0].Mean != 32 || sum.PerKRPS[0].Unit != "MiB/krps" {
					t.Errorf("perKRPS = %s; want app 64/2 = 32 MiB/krps", mustJSON(t, sum.PerKRPS))
				}
			},
		},
		{
			name: "per krps is skipped with a warning when the rate is unknown or zero",
			samples: []Sample{
				smp("c1", 1, load(0), "app", "cpu", "avg", "millicores", 5),
				smp("c2", 2, load(1), "loadgen", "qps", "value", "rps", 0),
				smp("c2", 2, load(1), "app", "cpu", "avg", "millicores", 5),
			},
			check: func(t *testing.T, sum Summary) {
				if len(sum.PerKRPS) != 0 || len(sum.Warnings) != 2 {
					t.Errorf("perKRPS = %s, warnings %q; want none and 2 warnings", mustJSON(t, sum.PerKRPS), sum.Warnings)
				}
			},
		},
		{
			name: "mesh total needs one unit",
			samples: []Sample{
				smp("c1", 1, load(0), "sidecar", "memory", "avg", "MiB", 5),
				smp("c1", 1, load(0), "istiod", "memory", "avg", "bytes", 5e6),
			},
			check: func(t *testing.T, sum Summary) {
				for _, s := range sum.Series {
					if s.Component == ComponentMesh {
						t.Errorf("mesh series from mixed units: %+v", s.Key)
					}
				}
				if !hasWarning(sum, "different units") {
					t.Errorf("warnings = %q", sum.Warnings)
				}
			},
		},
		{
			name: "mesh parts that differ between repetitions are flagged",
			samples: []Sample{
				smp("c1", 1, load(0), "sidecar", "cpu", "avg", "millicores", 5),
				smp("c1", 1, load(0), "istiod", "cpu", "avg", "millicores", 1),
				smp("c2", 2, load(1), "sidecar", "cpu", "avg", "millicores", 6),
			},
			check: func(t *testing.T, sum Summary) {
				if !hasWarning(sum, "(sidecar+istiod vs sidecar)") {
					t.Errorf("warnings = %q", sum.Warnings)
				}
			},
		},
		{
			name: "input mesh samples are ignored",
			samples: []Sample{
				smp("c1", 1, load(0), "mesh", "cpu", "avg", "millicores", 5),
				smp("c1", 1, load(0), "ztunnel", "cpu", "avg", "millicores", 3),
			},
			check: func(t *testing.T, sum Summary) {
				mesh := findSeries(t, sum.Series, Key{Mode: "sidecar", Window: "load", Component: "mesh", Metric: "cpu", Stat: "avg", Unit: "millicores"})
				if mesh.Mean != 3 || !hasWarning(sum, `ignored input samples of component "mesh"`) {
					t.Errorf("mesh = %v, warnings %q; want 3 (derived) and one warning", mesh.Mean, sum.Warnings)
				}
			},
		},
		{
			name: "several observations per repetition are ordered by repetition then window",
			samples: []Sample{
				smp("c2", 2, load(3), "cni-test", "throughput", "value", "Gbit/s", 4),
				smp("c1", 1, load(1), "cni-test", "throughput", "value", "Gbit/s", 2),
				smp("c1", 1, load(0), "cni-test", "throughput", "value", "Gbit/s", 1),
				smp("c2", 2, load(2), "cni-test", "throughput", "value", "Gbit/s", 3),
			},
			check: func(t *testing.T, sum Summary) {
				if len(sum.Series) != 1 || !slices.Equal(sum.Series[0].Values, []float64{1, 2, 3, 4}) {
					t.Errorf("series = %s", mustJSON(t, sum.Series))
				}
			},
		},
		{
			name:    "labels are canonical and escaped",
			samples: []Sample{{Component: "app", Metric: "m", Stat: "value", Labels: map[string]string{"b": "x,y=z", "a": `1\`}}},
			check: func(t *testing.T, sum Summary) {
				if want := `a=1\\,b=x\,y\=z`; sum.Series[0].Labels != want {
					t.Errorf("labels = %q, want %q", sum.Series[0].Labels, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, Summarize(RunMeta{RunID: "r"}, tt.samples, nil, SummaryOptions{}))
		})
	}
}

// BenchmarkSummarize summarises ~100k samples: 4 modes x 3 loads x 10 repetitions, with per-pod and per-node
// labelled resource samples in idle and load windows.
func BenchmarkSummarize(b *testing.B) {
	meta, samples, cases := largeFixture()
	b.ReportMetric(float64(len(samples)), "samples")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Summarize(meta, samples, cases, SummaryOptions{})
	}
}

func largeFixture() (RunMeta, []Sample, []CaseResult) {
	meta := RunMeta{RunID: "run-bench", Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	b := &fixtureBuilder{t0: meta.Start}
	v := 1.0
	next := func() float64 { v = v*1.000173 + 0.37; return v }
	for rep := 1; rep <= 10; rep++ {
		for _, mode := range Modes {
			for _, load := range []string{"100", "1000", "max"} {
				c := b.newCase("multi", mode, load, rep, 1, StatusOK)
				for _, w := range []Window{c.idle, c.load} {
					for _, metric := range []Metric{"cpu", "memory"} {
						for _, stat := range []Stat{"avg", "min", "max"} {
							for pod := range 50 {
								p := fmt.Sprintf("frontend-%d", pod)
								c.add(w, "prometheus", ComponentApp, metric, stat, "u", next(), "pod", p)
								if mode == "sidecar" {
									c.add(w, "prometheus", ComponentSidecar, metric, stat, "u", next(), "pod", p)
								}
							}
							for node := range 3 {
								if mode == "ambient" || mode == "waypoint" {
									c.add(w, "prometheus", ComponentZtunnel, metric, stat, "u", next(), "node", fmt.Sprint(node))
								}
							}
							if mode == "waypoint" {
								c.add(w, "prometheus", ComponentWaypoint, metric, stat, "u", next())
							}
							c.add(w, "prometheus", ComponentIstiod, metric, stat, "u", next())
						}
					}
				}
				c.add(c.load, "fortio", ComponentLoadgen, "qps", "value", "rps", 900+next())
				for _, p := range []Stat{"p50", "p90", "p99", "p99.9"} {
					c.add(c.load, "fortio", ComponentLoadgen, "latency", p, "ms", next())
				}
				c.done()
			}
		}
	}
	return meta, b.samples, b.cases
}

// A delta is significant only from MinIntervalN observations a side: from 2 its (wide) interval may well exclude 0,
// and summary.json keeps that interval as data, but calling the change significant would be luck.
func TestSummarizeSignificanceNeedsMinIntervalN(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{2, MinIntervalN} {
		var samples []Sample
		for rep := 1; rep <= n; rep++ {
			start := t0.Add(time.Duration(rep) * time.Hour)
			w := Window{Kind: WindowLoad, Start: start, End: start.Add(time.Minute)}
			for mode, v := range map[Mode]float64{"none": 100, "sidecar": 200} {
				samples = append(samples, Sample{CaseID: fmt.Sprintf("c-%s-%d", mode, rep), Mode: mode, Repetition: rep,
					Window: w, Component: ComponentApp, Metric: MetricCPU, Stat: "avg", Unit: "millicores", Value: v + float64(rep)})
			}
		}
		sum := Summarize(RunMeta{}, samples, nil, SummaryOptions{Pairs: []ModePair{{"none", "sidecar"}}})
		if len(sum.Deltas) != 1 {
			t.Fatalf("n=%d: deltas %s, want one", n, mustJSON(t, sum.Deltas))
		}
		d := sum.Deltas[0]
		if d.DiffCI == nil || d.DiffCI.Low <= 0 {
			t.Fatalf("n=%d: the interval %s should exclude 0 (diff 100, sd 1)", n, mustJSON(t, d.DiffCI))
		}
		if want := n >= MinIntervalN; d.Significant != want {
			t.Errorf("n=%d: significant = %v, want %v", n, d.Significant, want)
		}
	}
}

// TestSummarizeSharedLoadLevels: the runner measures the idle window once per topology, mode and repetition (before
// the first load level), so every load level of the repetition is split against it; allocation samples become
// Series of their own and never enter the mesh total, the per-krps figures or the split.
func TestSummarizeSharedLoadLevels(t *testing.T) {
	t.Parallel()
	b := &fixtureBuilder{t0: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	const mc = "millicores"
	for r := 1; r <= 2; r++ {
		low := b.newCase("single", "ambient", "1000", r, 1, StatusOK)
		low.add(low.idle, "prometheus", ComponentZtunnel, "cpu", "avg", mc, 4)
		low.add(low.idle, "pod-spec", ComponentZtunnel, "cpu", StatRequest, mc, 200)
		low.add(low.load, "prometheus", ComponentZtunnel, "cpu", "avg", mc, []float64{24, 26}[r-1])
		low.add(low.load, "pod-spec", ComponentZtunnel, "cpu", StatRequest, mc, 200)
		low.add(low.load, "fortio", ComponentLoadgen, "qps", "value", "rps", 1000)
		low.done()
		high := b.newCase("single", "ambient", "2000", r, 1, StatusOK)
		high.res.Windows = []Window{high.load} // no idle window of its own
		high.add(high.load, "prometheus", ComponentZtunnel, "cpu", "avg", mc, []float64{44, 48}[r-1])
		high.add(high.load, "pod-spec", ComponentZtunnel, "cpu", StatNoLimit, UnitContainers, 1)
		high.add(high.load, "fortio", ComponentLoadgen, "qps", "value", "rps", 2000)
		high.done()
	}
	for i := range b.samples {
		if b.samples[i].Window.Kind == WindowIdle {
			b.samples[i].Load = "" // as the runner records idle samples
		}
	}
	sum := Summarize(RunMeta{RunID: "run"}, b.samples, b.cases, SummaryOptions{})
	if len(sum.Warnings) != 0 {
		t.Errorf("warnings %q", sum.Warnings)
	}
	var got []string
	for _, c := range sum.Shared {
		got = append(got, fmt.Sprintf("%s %s fixed %v load-driven %v per krps %v %s", c.Load, c.Component, c.Fixed.Values, c.Incremental.Values,
			c.IncrementalPerKRPS.Values, c.IncrementalPerKRPS.Unit))
	}
	want := []string{"1000 ztunnel fixed [4 4] load-driven [20 22] per krps [20 22] millicores/krps",
		"2000 ztunnel fixed [4 4] load-driven [40 44] per krps [20 22] millicores/krps"}
	if !slices.Equal(got, want) {
		t.Errorf("shared:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range sum.Series {
		if s.Component == ComponentMesh && s.Mean > 50 {
			t.Errorf("mesh total includes the allocation: %+v", s)
		}
	}
	for _, s := range sum.PerKRPS {
		if s.Stat != "avg" {
			t.Errorf("per krps of %s", s.Stat)
		}
	}
	findSeries(t, sum.Series, Key{Topology: "single", Mode: "ambient", Load: "1000", Window: WindowLoad, Component: ComponentZtunnel,
		Metric: "cpu", Stat: StatRequest, Unit: mc})
	findSeries(t, sum.Series, Key{Topology: "single", Mode: "ambient", Load: "2000", Window: WindowLoad, Component: ComponentZtunnel,
		Metric: "cpu", Stat: StatNoLimit, Unit: UnitContainers})
}

func TestSidecarCosts(t *testing.T) {
	t.Parallel()
	meta, samples, cases := summarizeFixture()
	got := SidecarCosts(Summarize(meta, samples, cases, SummaryOptions{}))
	// frontend's sidecars: 120, 132, 144 (mean 132); db's: 80, 88, 96 (88). No mode none in the fixture: no delta.
	if len(got) != 2 || got[0].Workload != "Deployment/bank/frontend" || !near(got[0].SidecarCPU, 132) || got[0].AppCPU == nil ||
		!near(*got[0].AppCPU, 66) || got[0].SidecarMemory == nil || *got[0].SidecarMemory != 30 || got[0].MemoryUnit != "MiB" ||
		got[0].TotalCPUDelta != nil || got[1].Workload != "StatefulSet/bank/db" || !near(got[1].SidecarCPU, 88) || got[1].SidecarMemory != nil {
		t.Errorf("costs = %s", mustJSON(t, got))
	}

	// With mode none: the delta of the workload's total, app + sidecar in sidecar mode (111+41, 112+42, 113+43: mean 154)
	// minus the app alone in none (101, 102, 103: 102) = 52.
	b := &fixtureBuilder{t0: meta.Start}
	for r := 1; r <= 3; r++ {
		n := b.newCase("single", "none", "1000", r, 1, StatusOK)
		n.add(n.load, "prometheus", ComponentAppByWorkload, "cpu", "avg", "millicores", float64(100+r), LabelWorkload, "Deployment/a/x")
		n.done()
		s := b.newCase("single", "sidecar", "1000", r, 1, StatusOK)
		s.add(s.load, "prometheus", ComponentAppByWorkload, "cpu", "avg", "millicores", float64(110+r), LabelWorkload, "Deployment/a/x")
		s.add(s.load, "prometheus", ComponentSidecarByWorkload, "cpu", "avg", "millicores", float64(40+r), LabelWorkload, "Deployment/a/x")
		s.done()
	}
	got = SidecarCosts(Summarize(meta, b.samples, b.cases, SummaryOptions{}))
	if len(got) != 1 || got[0].TotalCPUDelta == nil || !near(got[0].TotalCPUDelta.Diff, 52) || got[0].TotalCPUDelta.Base != "none" {
		t.Errorf("costs with none = %s", mustJSON(t, got))
	}
	if got := SidecarCosts(Summary{}); len(got) != 0 {
		t.Errorf("empty summary: %v", got)
	}
}

// The load clients' proxies are the benchmark's (issue 29 section 2b): a loadgen-proxy figure is its own series,
// never part of the mesh total or the per-1000-rps figures, and the vocabulary marks it as the benchmark's.
func TestSummarizeLeavesTheLoadClientsProxiesOut(t *testing.T) {
	t.Parallel()
	w := Window{Kind: WindowLoad, Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC)}
	var samples []Sample
	for _, c := range []struct {
		component Component
		v         float64
	}{{ComponentSidecar, 30}, {ComponentIstiod, 5}, {ComponentLoadgenProxy, 12}} {
		samples = append(samples, Sample{CaseID: "c1", Mode: "sidecar", Load: "100", Repetition: 1, Window: w, Component: c.component,
			Metric: MetricCPU, Stat: "avg", Unit: "millicores", Value: c.v})
	}
	samples = append(samples, Sample{CaseID: "c1", Mode: "sidecar", Load: "100", Repetition: 1, Window: w, Component: ComponentLoadgen,
		Metric: MetricQPS, Stat: StatValue, Unit: UnitRPS, Value: 100})
	sum := Summarize(RunMeta{}, samples, nil, SummaryOptions{})
	k := Key{Mode: "sidecar", Load: "100", Window: WindowLoad, Component: ComponentMesh, Metric: MetricCPU, Stat: "avg", Unit: "millicores"}
	if s := findSeries(t, sum.Series, k); !near(s.Mean, 35) {
		t.Errorf("mesh total %g, want sidecar 30 + istiod 5 (the client's proxy left out)", s.Mean)
	}
	k.Component = ComponentLoadgenProxy
	if s := findSeries(t, sum.Series, k); !near(s.Mean, 12) {
		t.Errorf("loadgen-proxy %g, want its own series", s.Mean)
	}
	for _, s := range sum.PerKRPS {
		if s.Component == ComponentLoadgenProxy {
			t.Errorf("per-1000-rps figure of the load clients' proxies: %+v", s.Key)
		}
	}
	if !IsBenchmarkComponent(ComponentLoadgenProxy) || !IsBenchmarkComponent(ComponentLoadgen) || IsBenchmarkComponent(ComponentSidecar) {
		t.Error("IsBenchmarkComponent: want the load clients and their proxies, not the app's sidecars")
	}
}

// TestSummarizeNeverInfinite: figures that are finite but near float64's limits (a base mean of 5e-324, an achieved
// rate of 1e-300 rps) gave a percentage and per-krps figures of +Inf, which summary.json and `compare -o json` cannot
// encode ("json: unsupported value: +Inf"); now they give no percentage and no per-krps figure, with warnings.
func TestSummarizeNeverInfinite(t *testing.T) {
	t.Parallel()
	meta, samples, cases := summarizeFixture()
	for i := range samples {
		s := &samples[i]
		switch {
		case s.Mode == "sidecar" && s.Component == ComponentApp && s.Window.Kind == WindowLoad:
			s.Value = 5e-324
		case s.Mode == "ambient" && s.Component == ComponentLoadgen && s.Metric == "qps":
			s.Value = 1e-300
		}
	}
	sum := Summarize(meta, samples, cases, SummaryOptions{})
	if _, err := json.Marshal(sum); err != nil {
		t.Fatalf("summary JSON: %v", err)
	}
	for _, d := range sum.Deltas {
		if d.Component == ComponentApp && d.Window == WindowLoad && d.Metric == MetricCPU && d.Stat == StatAvg && d.Percent != nil {
			t.Errorf("app cpu delta: percent %v from a base mean of %v", *d.Percent, d.BaseMean)
		}
	}
	for _, s := range sum.PerKRPS {
		if s.Mode == "ambient" {
			t.Errorf("per-krps figure of ambient from 1e-300 rps: %+v", s)
		}
	}
	if w := strings.Join(sum.Warnings, "\n"); !strings.Contains(w, "achieved rate is 1e-300 rps") {
		t.Errorf("warnings %q", w)
	}
}
