package capacity

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// tinyRun builds a run in memory: per mode and level, reps cases whose components cost exactly
// units x (fixed + slope x krps per unit) (no noise unless noise is set: then +-noise per repetition).
type tinyCase struct {
	mode   string
	qps    int
	rep    int
	status string
	facts  map[results.FactKey]string
	noRate bool
}

func tinyRun(cases []tinyCase, comps map[string][2]float64, requests bool, noise float64) *results.Run {
	run := &results.Run{Meta: results.RunMeta{RunID: "tiny", Cluster: results.ClusterFacts{Nodes: []results.NodeFacts{{Name: "a"}, {Name: "b"}}}}}
	w := results.Window{Kind: results.WindowLoad, Start: time.Unix(0, 0).UTC(), End: time.Unix(300, 0).UTC()}
	for _, c := range cases {
		id := fmt.Sprintf("%s/%d/r%d", c.mode, c.qps, c.rep)
		st := c.status
		if st == "" {
			st = string(results.StatusOK)
		}
		facts := c.facts
		if facts == nil {
			facts = map[results.FactKey]string{results.FactAppPods: "4", results.FactWaypoints: "1"}
		}
		run.Cases = append(run.Cases, results.CaseResult{CaseID: id, Mode: results.Mode(c.mode), Load: fmt.Sprint(c.qps), Repetition: c.rep, Status: results.Status(st), Facts: facts})
		sample := func(comp, metric, stat string, v float64) {
			unit := "millicores"
			if metric == "memory" {
				unit = "MiB"
			}
			run.Samples = append(run.Samples, results.Sample{CaseID: id, Mode: results.Mode(c.mode), Load: fmt.Sprint(c.qps), Repetition: c.rep, Window: w,
				Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit), Value: v})
		}
		krps := float64(c.qps) / 1000
		if !c.noRate {
			run.Samples = append(run.Samples, results.Sample{CaseID: id, Mode: results.Mode(c.mode), Load: fmt.Sprint(c.qps), Repetition: c.rep, Window: w,
				Component: "loadgen", Metric: "qps", Stat: "value", Unit: "rps", Value: float64(c.qps)})
		}
		for comp, ab := range comps {
			units := map[string]float64{"app": 4, "sidecar": 4, "ztunnel": 2, "waypoint": 1, "istiod": 1}[comp]
			x := krps / units
			e := noise * float64([]int{-1, 0, 1}[(c.rep-1)%3])
			for _, metric := range []string{"cpu", "memory"} {
				sample(comp, metric, "avg", units*(ab[0]+ab[1]*x)+e)
				if requests {
					sample(comp, metric, string(results.StatRequest), units*100)
				}
			}
		}
	}
	return run
}

func levels(mode string, qps []int, reps int) []tinyCase {
	var out []tinyCase
	for _, q := range qps {
		for r := 1; r <= reps; r++ {
			out = append(out, tinyCase{mode: mode, qps: q, rep: r})
		}
	}
	return out
}

func TestBuild(t *testing.T) {
	t.Parallel()
	sidecar := map[string][2]float64{"sidecar": {5, 800}, "app": {4, 400}}
	for _, tc := range []struct {
		name     string
		cases    []tinyCase
		requests bool
		check    func(t *testing.T, m *Model)
		warn     string
		err      string
	}{
		{name: "exact line recovered", cases: levels("sidecar", []int{100, 200, 400}, 3), check: func(t *testing.T, m *Model) {
			f := m.Find("sidecar", "sidecar", "cpu", KindUsage)
			if math.Abs(f.Fixed.Value-5) > 1e-9 || math.Abs(f.Slope.Value-800) > 1e-6 || f.Trust != TrustLinear || f.Per != PerPod {
				t.Errorf("%+v", f.Line)
			}
			if m.Find("sidecar", "sidecar", "cpu", KindReserved) != nil {
				t.Error("reserved fit without request samples")
			}
		}},
		{name: "requests give reserved fits", cases: levels("sidecar", []int{100, 200}, 3), requests: true, check: func(t *testing.T, m *Model) {
			f := m.Find("sidecar", "sidecar", "memory", KindReserved)
			if f == nil || f.Fixed.Value != 100 || f.Slope.Value != 0 || f.Trust != TrustUntested {
				t.Errorf("%+v", f)
			}
		}},
		{name: "one level: constant", cases: levels("sidecar", []int{100}, 3), check: func(t *testing.T, m *Model) {
			if f := m.Find("sidecar", "sidecar", "cpu", KindUsage); f.Slope != nil || f.Trust != TrustConstant {
				t.Errorf("%+v", f.Line)
			}
		}},
		{name: "failed case left out", cases: append(levels("sidecar", []int{100, 200}, 2), tinyCase{mode: "sidecar", qps: 400, rep: 1, status: string(results.StatusFailed)}), check: func(t *testing.T, m *Model) {
			if f := m.Find("sidecar", "sidecar", "cpu", KindUsage); f.N != 4 || f.Levels != 2 {
				t.Errorf("n %d levels %d", f.N, f.Levels)
			}
		}},
		{name: "no achieved rate", cases: append(levels("sidecar", []int{100, 200}, 2), tinyCase{mode: "sidecar", qps: 400, rep: 1, noRate: true}), warn: `case "sidecar/400/r1": no achieved rate`},
		{name: "no pod count", cases: append(levels("sidecar", []int{100, 200}, 2), tinyCase{mode: "sidecar", qps: 400, rep: 1, facts: map[results.FactKey]string{}}), warn: `no "app-pods" fact`},
		{name: "nothing to fit", cases: []tinyCase{{mode: "sidecar", qps: 100, rep: 1, noRate: true}}, err: "nothing to fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Build(tinyRun(tc.cases, sidecar, tc.requests, 0), 0.95)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(messages(m.Warnings), "\n"), tc.warn) {
				t.Errorf("warnings %q lack %q", m.Warnings, tc.warn)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
	if _, err := Build(tinyRun(levels("sidecar", []int{1}, 1), sidecar, false, 0), 1.5); err == nil {
		t.Error("confidence 1.5 accepted")
	}
}

// TestProjectExact: with exact lines the projection is arithmetic: sidecar 500 pods x (5 + 800 x 0.01) m, ztunnel
// 20 nodes x (3 + 100 x 0.25) m, istiod constant, vs none the mesh plus the app's change; and the break-even pods
// per node is (a_z + (b_z - b_s) r) / a_s.
func TestProjectExact(t *testing.T) {
	t.Parallel()
	var cases []tinyCase
	for _, mode := range []string{"none", "sidecar", "ambient"} {
		cases = append(cases, levels(mode, []int{100, 200, 400}, 3)...)
	}
	run := tinyRun(cases, nil, false, 0)
	// Different components per mode: rebuild the samples by mode.
	run.Samples = nil
	for _, part := range []struct {
		mode  string
		comps map[string][2]float64
	}{
		{"none", map[string][2]float64{"app": {4, 400}}},
		{"sidecar", map[string][2]float64{"app": {4, 410}, "sidecar": {5, 800}, "istiod": {9, 0}}},
		{"ambient", map[string][2]float64{"app": {4, 400}, "ztunnel": {3, 100}, "istiod": {9, 0}}},
	} {
		r := tinyRun(levels(part.mode, []int{100, 200, 400}, 3), part.comps, true, 0.2)
		run.Samples = append(run.Samples, r.Samples...)
	}
	m, err := Build(run, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := 20.0, 2.0
	sh := Shape{Pods: 500, Nodes: 20, Namespaces: 5, RPS: 5000, PriceCPU: &cpu, PriceMemory: &mem}
	p := Project(m, sh)
	mode := func(name string) ModeProjection {
		for _, mp := range p.Modes {
			if mp.Mode == name {
				return mp
			}
		}
		t.Fatalf("no mode %s", name)
		return ModeProjection{}
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	sc, amb, none := mode("sidecar"), mode("ambient"), mode("none")
	// The noise is zero-mean per level, so the fit recovers the lines exactly.
	near("sidecar mesh cpu", sc.Mesh.CPU.Value, (500*(5+800*0.01)+9)/1000)
	near("ambient mesh cpu", amb.Mesh.CPU.Value, (20*(3+100*0.25)+9)/1000)
	near("none mesh", none.Mesh.CPU.Value, 0)
	near("sidecar vs none cpu", sc.VsNone.CPU.Value, sc.Mesh.CPU.Value+500*10*0.01/1000)
	near("sidecar reserved cpu", sc.MeshReserved.CPU.Value, (500*100+100)/1000.0)
	near("cost", sc.Cost.Mesh.Value, cpu*sc.Mesh.CPU.Value+mem*sc.Mesh.Memory.Value)
	// istiod measured at one mesh size (4 app pods) has no interval at 500: nor has the mesh it is part of.
	if sc.Mesh.CPU.PI != nil || !slices.Equal(sc.Mesh.CPU.Caveats, []Caveat{CaveatNoSlope, CaveatExtrapolated}) {
		t.Errorf("sidecar mesh cpu %+v, want no interval, caveats no-slope (istiod) and extrapolated (sidecar)", sc.Mesh.CPU)
	}
	if c := sc.Components[1]; c.Component != "sidecar" || c.Usage.CPU.PI == nil || !(c.Usage.CPU.PI.Low < c.Usage.CPU.Value && c.Usage.CPU.Value < c.Usage.CPU.PI.High) {
		t.Errorf("sidecar cpu interval %+v", c.Usage.CPU)
	}
	if none.VsNone != nil {
		t.Error("none compared with itself")
	}
	var be *BreakEven
	for i := range p.BreakEven {
		if p.BreakEven[i].Metric == "cpu" && p.BreakEven[i].Kind == KindReserved {
			be = &p.BreakEven[i]
		}
	}
	if be == nil || be.PodsPerNode == nil {
		t.Fatalf("no cpu reserved break-even: %+v", p.BreakEven)
	}
	near("reserved break-even", be.PodsPerNode.Value, 100.0/100) // ztunnel 100m per node vs 100m per pod
	for _, b := range p.BreakEven {
		if b.Metric == "cpu" && b.Kind == KindUsage {
			near("usage break-even", b.PodsPerNode.Value, (3+(100-800)*0.25)/5)
			if !strings.Contains(b.Statement, "at any pods per node") {
				t.Errorf("statement %q", b.Statement)
			}
		}
	}
	warnings := strings.Join(messages(sc.Warnings), "\n")
	for _, w := range []string{"sidecar: 0.01 krps per pod is outside the measured 0.025..0.1: extrapolated", "istiod: one mesh size measured (4 app pods): its figure there stands in for 500 app pods, with no interval"} {
		if !strings.Contains(warnings, w) {
			t.Errorf("sidecar warnings lack %q:\n%s", w, warnings)
		}
	}
	// measured 0.05..0.2 krps per node (100..400 rps over 2 nodes); the shape has 0.25
	if !strings.Contains(strings.Join(messages(amb.Warnings), "\n"), "ztunnel: 0.25 krps per node is outside the measured 0.05..0.2: extrapolated") {
		t.Errorf("ambient warnings %q", amb.Warnings)
	}
}

// messages are the warnings' messages, for tests that look for a sentence.
func messages(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Message
	}
	return out
}

// TestProjectDegenerateLoads (issue 29 §2.3, 2.6): what the loads of a run allow at 10 times the measured load. No
// slope (one level, levels achieving the same rate, levels 1 % apart): the measured mean, no interval, marked
// no-slope. A slope through 2 levels or unrepeated levels: an interval, marked untested and extrapolated.
func TestProjectDegenerateLoads(t *testing.T) {
	t.Parallel()
	comps := map[string][2]float64{"sidecar": {5, 800}, "app": {4, 400}}
	sameRate := func(r *results.Run) { // the 200-qps level achieved 100 rps: two levels, one rate
		for i := range r.Samples {
			if r.Samples[i].Component == "loadgen" && r.Samples[i].Load == "200" {
				r.Samples[i].Value = 100
			}
		}
	}
	for _, tc := range []struct {
		name     string
		qps      []int
		reps     int
		edit     func(*results.Run)
		trust    Trust
		narrow   bool
		interval bool
		caveats  []Caveat
		warning  WarningCode
	}{
		{"one level", []int{100}, 3, nil, TrustConstant, false, false, []Caveat{CaveatNoSlope}, WarnNoSlope},
		{"two levels, one rate", []int{100, 200}, 3, sameRate, TrustConstant, true, false, []Caveat{CaveatNoSlope}, WarnNoSlope},
		{"levels 1 % apart", []int{100, 101}, 3, nil, TrustConstant, true, false, []Caveat{CaveatNoSlope}, WarnNoSlope},
		{"levels 1.5x apart", []int{100, 150}, 3, nil, TrustUntested, false, true, []Caveat{CaveatExtrapolated, CaveatUntested}, WarnUntested},
		{"three levels, one repetition", []int{100, 200, 400}, 1, nil, TrustUntested, false, true, []Caveat{CaveatExtrapolated, CaveatUntested}, WarnUntested},
		{"three levels, repeated", []int{100, 200, 400}, 3, nil, TrustLinear, false, true, []Caveat{CaveatExtrapolated}, WarnExtrapolated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tinyRun(levels("sidecar", tc.qps, tc.reps), comps, false, 0.5)
			if tc.edit != nil {
				tc.edit(run)
			}
			m, err := Build(run, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			f := m.Find("sidecar", "sidecar", "cpu", KindUsage)
			if f.Trust != tc.trust || f.NarrowSpan != tc.narrow || (f.Slope != nil) != tc.interval {
				t.Errorf("fit: trust %s narrow %v slope %v; want %s, %v, slope %v", f.Trust, f.NarrowSpan, f.Slope, tc.trust, tc.narrow, tc.interval)
			}
			top := float64(slices.Max(tc.qps))
			p := Project(m, Shape{Pods: 4, Nodes: 2, Namespaces: 1, RPS: 10 * top})
			e := p.Modes[0].Components[1].Usage.CPU
			if (e.PI != nil) != tc.interval || !slices.Equal(e.Caveats, tc.caveats) {
				t.Errorf("sidecar cpu at 10x: %+v; want interval %v, caveats %v", e, tc.interval, tc.caveats)
			}
			if !slices.ContainsFunc(p.Modes[0].Warnings, func(w Warning) bool { return w.Code == tc.warning && w.Component == "sidecar" }) {
				t.Errorf("no %s warning for the sidecar: %+v", tc.warning, p.Modes[0].Warnings)
			}
		})
	}
}

// TestBuildPerPodOverTheCountedPods (issue 29 section 2b): a run recorded before the load clients' proxies had a
// component of their own summed five proxies into sidecar for four app pods; the reserved sidecar figure per pod
// was 500/4 = 125 m where each proxy asks 100 m. Per pod is over the pods the figure sums, with a warning; a run
// whose figures sum the app's pods only is divided by them, without one.
func TestBuildPerPodOverTheCountedPods(t *testing.T) {
	t.Parallel()
	comps := map[string][2]float64{"sidecar": {5, 800}, "app": {4, 400}}
	for _, tc := range []struct {
		name    string
		proxies int
		warn    bool
	}{{"old run: the client's proxy in sidecar", 5, true}, {"the app's proxies only", 4, false}} {
		t.Run(tc.name, func(t *testing.T) {
			run := tinyRun(levels("sidecar", []int{100, 200}, 3), comps, true, 0)
			for i, s := range run.Samples {
				if s.Component == results.ComponentSidecar && s.Stat == results.StatRequest {
					run.Samples[i].Value = float64(tc.proxies) * 100
				}
			}
			for _, c := range run.Cases {
				run.Samples = append(run.Samples, results.Sample{CaseID: c.CaseID, Mode: c.Mode, Load: c.Load, Repetition: c.Repetition,
					Window: run.Samples[0].Window, Source: results.SourcePodSpec, Component: results.ComponentSidecar,
					Metric: results.MetricPods, Stat: results.StatCount, Unit: results.UnitPods, Value: float64(tc.proxies)})
			}
			m, err := Build(run, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if f := m.Find("sidecar", "sidecar", "cpu", KindReserved); f == nil || math.Abs(f.Fixed.Value-100) > 1e-9 {
				t.Errorf("reserved sidecar cpu per pod %+v, want 100 m (each proxy's request)", f)
			}
			warned := strings.Contains(strings.Join(messages(m.Warnings), "\n"), "sidecar figures sum 5 pods where the app has 4")
			if warned != tc.warn {
				t.Errorf("warnings %q: want the old run's warning %v", m.Warnings, tc.warn)
			}
		})
	}
}

// TestWaypointCountsCarryToTheCasesAfterTheSwitch: the runner records the waypoint count on the case that switched
// to waypoint mode only (bench-waypoint-20261206-153216-bb0d: 7 of 9 waypoint cases were left out of the fits, so the
// waypoint had one load level and no slope); the cases after it in the same topology and mode take that count, a
// later verification replaces it, and a case before any verification has none.
func TestWaypointCountsCarryToTheCasesAfterTheSwitch(t *testing.T) {
	t.Parallel()
	c := func(id, topo, mode, waypoints string) results.CaseResult {
		cr := results.CaseResult{CaseID: id, Topology: topo, Mode: results.Mode(mode), Facts: map[results.FactKey]string{}}
		if waypoints != "" {
			cr.Facts[results.FactWaypoints] = waypoints
		}
		return cr
	}
	got := waypointCounts([]results.CaseResult{
		c("multi.waypoint.q1", "multi", "waypoint", ""), // before any verification of its topology: no count
		c("single.waypoint.q1", "single", "waypoint", "1"),
		c("single.waypoint.q2", "single", "waypoint", ""),
		c("single.none.q1", "single", "none", ""),
		c("single.waypoint.q3", "single", "waypoint", ""),
		c("multi.waypoint.q2", "multi", "waypoint", "8"),
		c("multi.waypoint.q3", "multi", "waypoint", ""),
		c("single.waypoint.q4", "single", "waypoint", "2"),
		c("single.waypoint.q5", "single", "waypoint", ""),
	})
	want := map[string]int{"single.waypoint.q1": 1, "single.waypoint.q2": 1, "single.waypoint.q3": 1, "multi.waypoint.q2": 8,
		"multi.waypoint.q3": 8, "single.waypoint.q4": 2, "single.waypoint.q5": 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waypointCounts = %v, want %v", got, want)
	}
}
