package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/results"
)

// curveFixture is a synthetic istiod curve in hack/istiodscale's v2 layout (go test ./capacity -run
// TestIstiodCurveFixture -update regenerates it): sizes 0, 250, 500, 1000, 2000 pods x 3 windows, memory 59 MiB +
// 38 MiB per 1000 pods and CPU a flat 4 millicores, with noise, as the real istiod measured on kwok nodes
// (hack/istiodscale/README.md, "Measured").
const curveFixture = "testdata/istiod-curve.json"

// curveTruth is the fixture's line: memory fixed MiB and MiB per pod, CPU fixed millicores and per pod.
var curveTruth = struct{ memA, memB, cpuA, cpuB float64 }{59, 0.038, 4, 0}

// The v2 layout as hack/istiodscale writes it (the fields the fixture fills).
type (
	fxStat3 struct {
		Min float64 `json:"min"`
		Avg float64 `json:"avg"`
		Max float64 `json:"max"`
	}
	fxRep struct {
		Repetition    int            `json:"repetition"`
		Window        results.Window `json:"window"`
		CPUMillicores fxStat3        `json:"cpuMillicores"`
		MemoryMiB     fxStat3        `json:"memoryMiB"`
	}
	fxPoint struct {
		Pods          int     `json:"pods"`
		Services      int     `json:"services"`
		Namespaces    int     `json:"namespaces"`
		Endpoints     int     `json:"endpoints"`
		Injected      int     `json:"injected"`
		CPUMillicores fxStat3 `json:"cpuMillicores"`
		MemoryMiB     fxStat3 `json:"memoryMiB"`
		Repetitions   []fxRep `json:"repetitions"`
	}
	fxCurve struct {
		Schema   string         `json:"schema"`
		Started  time.Time      `json:"started"`
		Finished time.Time      `json:"finished"`
		RunID    string         `json:"runID"`
		Complete bool           `json:"complete"`
		Method   map[string]any `json:"method"`
		Points   []fxPoint      `json:"points"`
	}
)

// synthCurve is a v2 curve of sizes x reps windows whose window averages are mem(pods) and cpu(pods) plus gaussian
// noise of sd memSD and cpuSD (deterministic in seed).
func synthCurve(seed string, sizes []int, reps int, mem, cpu func(float64) float64, memSD, cpuSD float64) fxCurve {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	c := fxCurve{Schema: istiodCurveV2, Started: t0, RunID: "20261202-060000-" + seed, Complete: true,
		Method: map[string]any{"steps": sizes, "repetitions": reps, "settleSeconds": 60, "windowSeconds": 60, "spacingSeconds": 20}}
	clock := t0
	for _, pods := range sizes {
		services := (pods + 9) / 10
		p := fxPoint{Pods: pods, Services: services, Namespaces: max(1, min(20, (services+9)/10)), Endpoints: pods, Injected: pods}
		clock = clock.Add(2 * time.Minute)
		for r := 1; r <= reps; r++ {
			key := fmt.Sprintf("%s/%d/%d", seed, pods, r)
			ca := math.Max(0.5, cpu(float64(pods))+cpuSD*gauss(key+"/cpu"))
			ma := mem(float64(pods)) + memSD*gauss(key+"/mem")
			rep := fxRep{Repetition: r, Window: results.Window{Kind: results.WindowLoad, Start: clock, End: clock.Add(time.Minute)},
				CPUMillicores: fxStat3{round4(0.6 * ca), round4(ca), round4(1.8 * ca)},
				MemoryMiB:     fxStat3{round4(ma - 0.6), round4(ma), round4(ma + 0.4)}}
			clock = clock.Add(80 * time.Second)
			p.Repetitions = append(p.Repetitions, rep)
		}
		p.CPUMillicores, p.MemoryMiB = fxSummary(p.Repetitions)
		c.Points = append(c.Points, p)
	}
	c.Finished = clock.Add(time.Minute)
	return c
}

// fxSummary is the size's summary as hack/istiodscale writes it: min of minima, mean of averages, max of maxima.
func fxSummary(reps []fxRep) (cpu, mem fxStat3) {
	cpu, mem = reps[0].CPUMillicores, reps[0].MemoryMiB
	var ca, ma float64
	for _, r := range reps {
		cpu.Min, cpu.Max = min(cpu.Min, r.CPUMillicores.Min), max(cpu.Max, r.CPUMillicores.Max)
		mem.Min, mem.Max = min(mem.Min, r.MemoryMiB.Min), max(mem.Max, r.MemoryMiB.Max)
		ca += r.CPUMillicores.Avg
		ma += r.MemoryMiB.Avg
	}
	cpu.Avg, mem.Avg = round4(ca/float64(len(reps))), round4(ma/float64(len(reps)))
	return cpu, mem
}

func fixtureCurveJSON() []byte {
	c := synthCurve("fixture", []int{0, 250, 500, 1000, 2000}, 3,
		func(p float64) float64 { return curveTruth.memA + curveTruth.memB*p },
		func(p float64) float64 { return curveTruth.cpuA + curveTruth.cpuB*p }, 0.8, 0.6)
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

func parseCurve(t *testing.T, b []byte) *IstiodCurve {
	t.Helper()
	c, err := ParseIstiodCurve(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIstiodCurveFixture: the committed fixture is what the generator writes (-update rewrites it).
func TestIstiodCurveFixture(t *testing.T) {
	goldenfile.Check(t, curveFixture, fixtureCurveJSON())
}

func readTestdata(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseIstiodCurveFiles reads both schemas as hack/istiodscale writes them (its own golden files) and the
// fixture.
func TestParseIstiodCurveFiles(t *testing.T) {
	tests := []struct {
		file    string
		schema  string
		pods    []int
		reps    int
		last    CurveRepetition
		largest [3]int
	}{
		// v1: the point's own window is its one repetition.
		{"testdata/istiod-curve-v1.json", istiodCurveV1, []int{0, 250}, 1, CurveRepetition{1, Stat3{5, 7.5, 12}, Stat3{90, 95.25, 99}}, [3]int{250, 25, 3}},
		{"../hack/istiodscale/testdata/curve.golden.json", istiodCurveV2, []int{0, 250}, 2, CurveRepetition{2, Stat3{6, 8, 11}, Stat3{94, 96.5, 99}}, [3]int{250, 25, 3}},
		{curveFixture, istiodCurveV2, []int{0, 250, 500, 1000, 2000}, 3, CurveRepetition{}, [3]int{2000, 200, 20}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := parseCurve(t, readTestdata(t, tt.file))
			if c.Schema != tt.schema || len(c.Sizes) != len(tt.pods) || !c.Complete {
				t.Fatalf("schema %s, %d sizes, complete %v; want %s, %d, true", c.Schema, len(c.Sizes), c.Complete, tt.schema, len(tt.pods))
			}
			for i, s := range c.Sizes {
				if s.Pods != tt.pods[i] || len(s.Repetitions) != tt.reps {
					t.Errorf("size %d: %d pods, %d repetitions; want %d, %d", i, s.Pods, len(s.Repetitions), tt.pods[i], tt.reps)
				}
			}
			l := c.Sizes[len(c.Sizes)-1]
			if got := [3]int{l.Pods, l.Services, l.Namespaces}; got != tt.largest {
				t.Errorf("largest size %v, want %v", got, tt.largest)
			}
			if tt.last != (CurveRepetition{}) {
				if got := l.Repetitions[len(l.Repetitions)-1]; got != tt.last {
					t.Errorf("last repetition %+v, want %+v", got, tt.last)
				}
			}
		})
	}
}

func TestParseIstiodCurveErrors(t *testing.T) {
	v2 := func(points string) string {
		return `{"schema": "meshbench.dev/istiod-curve/v2", "complete": true, "points": [` + points + `]}`
	}
	const s = `{"min": 1, "avg": 2, "max": 3}`
	rep := func(n int) string {
		return fmt.Sprintf(`{"repetition": %d, "cpuMillicores": %s, "memoryMiB": %s}`, n, s, s)
	}
	point := func(pods int, reps ...string) string {
		return fmt.Sprintf(`{"pods": %d, "services": 1, "namespaces": 1, "repetitions": [%s]}`, pods, strings.Join(reps, ","))
	}
	tests := []struct {
		name, in string
		want     []string
	}{
		{"not JSON", `{"schema": `, []string{"not JSON"}},
		{"unknown schema", `{"schema": "meshbench.dev/istiod-curve/v9", "points": []}`, []string{`schema "meshbench.dev/istiod-curve/v9"`, istiodCurveV2}},
		{"no points", v2(""), []string{"points: no sizes measured"}},
		{"missing pods", v2(`{"services": 1, "namespaces": 1, "repetitions": [` + rep(1) + `]}`), []string{"points[0].pods: missing"}},
		{"negative services", v2(`{"pods": 1, "services": -1, "namespaces": 1, "repetitions": [` + rep(1) + `]}`), []string{"points[0].services: -1: not a count"}},
		{"v2 without repetitions", v2(point(0)), []string{"points[0].repetitions: missing or empty"}},
		{"missing memory avg", v2(point(0, rep(1)) + "," + point(10, rep(1), `{"repetition": 2, "cpuMillicores": `+s+`, "memoryMiB": {"min": 1, "max": 3}}`)),
			[]string{"points[1].repetitions[1].memoryMiB.avg: missing"}},
		{"min above avg", v2(point(0, `{"repetition": 1, "cpuMillicores": {"min": 5, "avg": 2, "max": 6}, "memoryMiB": `+s+`}`)),
			[]string{"points[0].repetitions[0].cpuMillicores: min 5, avg 2, max 6"}},
		{"negative figure", v2(point(0, `{"repetition": 1, "cpuMillicores": {"min": -1, "avg": 2, "max": 6}, "memoryMiB": `+s+`}`)),
			[]string{"points[0].repetitions[0].cpuMillicores.min: -1"}},
		{"a size twice", v2(point(10, rep(1)) + "," + point(10, rep(1))), []string{"points[1].pods: 10 pods again (also points[0])"}},
		{"v1 point without memory", `{"schema": "meshbench.dev/istiod-curve/v1", "points": [{"pods": 0, "services": 0, "namespaces": 1, "cpuMillicores": ` + s + `}]}`,
			[]string{"points[0].memoryMiB: missing"}},
		// Values of the wrong type: every one with its path (encoding/json named the first, without its index).
		{"mistyped values", v2(point(0, rep(1)) + `,{"pods": "many", "services": 1.5, "namespaces": 1, "repetitions": [{"repetition": 1, "cpuMillicores": {"min": "1", "avg": 2, "max": 3}, "memoryMiB": ` + s + `}]}`),
			[]string{`points[1].pods: "many" is not a whole number`, "points[1].services: 1.5 is not a whole number", `points[1].repetitions[0].cpuMillicores.min: "1" is not a number`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIstiodCurve(strings.NewReader(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestFitIstiodCurveRecoversTruth: the fixture's memory slope and fixed cost lie in their intervals and the slope
// within 10 % of the truth; CPU stays flat (under 2 millicores over the 2000 pods, the truth inside the prediction
// interval at both ends; one seeded draw, so its slope's own interval is left to the coverage test), and with
// repetitions at 5 sizes the lines are tested and not rejected.
func TestFitIstiodCurveRecoversTruth(t *testing.T) {
	f := fitIstiodCurve(parseCurve(t, readTestdata(t, curveFixture)), "istiod-curve.json", 0.95)
	in := func(name string, c *Coef, v float64) {
		t.Helper()
		if c == nil || c.CI == nil || v < c.CI.Low || v > c.CI.High {
			t.Errorf("%s: %+v does not hold the truth %g", name, c, v)
		}
	}
	if f.Memory.Slope == nil || f.CPU.Slope == nil {
		t.Fatalf("no slopes: %+v", f)
	}
	in("memory slope", f.Memory.Slope, curveTruth.memB)
	in("memory fixed", &f.Memory.Fixed, curveTruth.memA)
	if d := math.Abs(f.CPU.Slope.Value * 2000); d > 2 {
		t.Errorf("cpu slope %g: %g millicores over 2000 pods, want a flat line", f.CPU.Slope.Value, d)
	}
	for _, pods := range []float64{0, 2000} {
		if _, pi := f.CPU.Predict(pods); pi == nil || curveTruth.cpuA < pi.Low || curveTruth.cpuA > pi.High {
			t.Errorf("cpu at %g pods: prediction interval %+v does not hold %g", pods, pi, curveTruth.cpuA)
		}
	}
	if math.Abs(f.Memory.Slope.Value-curveTruth.memB) > 0.1*curveTruth.memB {
		t.Errorf("memory slope %g, more than 10 %% from %g", f.Memory.Slope.Value, curveTruth.memB)
	}
	if f.Memory.Trust != TrustLinear || f.CPU.Trust != TrustLinear || f.Memory.N != 15 || f.Memory.Levels != 5 {
		t.Errorf("trust %s/%s, n %d, levels %d; want linear/linear, 15, 5", f.Memory.Trust, f.CPU.Trust, f.Memory.N, f.Memory.Levels)
	}
	if f.Largest.Pods != 2000 || f.Largest.Services != 200 || f.Largest.Namespaces != 20 {
		t.Errorf("largest %+v", f.Largest)
	}
	if len(f.Notes) != 0 {
		t.Errorf("notes on a complete curve with repetitions: %v", f.Notes)
	}
}

// TestIstiodCurveSlopeCoverage: over many seeded curves the slopes' 95 % intervals hold the truth about 95 % of the
// time (the interval's width is right, not just its centre): memory's 0.038 MiB per pod and CPU's 0.
func TestIstiodCurveSlopeCoverage(t *testing.T) {
	const n = 400
	memHit, cpuHit := 0, 0
	for i := range n {
		c := synthCurve(fmt.Sprint("cov", i), []int{0, 250, 500, 1000, 2000}, 3,
			func(p float64) float64 { return 59 + 0.038*p }, func(float64) float64 { return 4 }, 2, 0.5)
		b, _ := json.Marshal(c)
		f := fitIstiodCurve(parseCurve(t, b), "x", 0.95)
		if ci := f.Memory.Slope.CI; ci.Low <= 0.038 && 0.038 <= ci.High {
			memHit++
		}
		if ci := f.CPU.Slope.CI; ci.Low <= 0 && 0 <= ci.High {
			cpuHit++
		}
	}
	// Binomial(400, 0.95): sd 4.4 hits; 3.5 sd either side.
	for name, hit := range map[string]int{"memory": memHit, "cpu": cpuHit} {
		if hit < 365 || hit > 395 {
			t.Errorf("the %s slope's 95 %% interval held the truth in %d of %d curves", name, hit, n)
		}
	}
}

// TestFitIstiodCurveTrust: the linearity check and the few-sizes cases.
func TestFitIstiodCurveTrust(t *testing.T) {
	lin := func(p float64) float64 { return 59 + 0.038*p }
	flat := func(float64) float64 { return 4 }
	tests := []struct {
		name  string
		sizes []int
		reps  int
		mem   func(float64) float64
		trust Trust
		note  string // in the memory line's or the fit's notes
	}{
		{"curved memory is rejected", []int{0, 250, 500, 1000, 2000}, 3, func(p float64) float64 { return 59 + 30*math.Sqrt(p) }, TrustNotLinear, ""},
		{"two sizes: untested", []int{0, 1000}, 3, lin, TrustUntested, "linearity is not tested"},
		{"one size: a constant", []int{500}, 3, lin, TrustConstant, "no slope"},
		{"one window per size: untested", []int{0, 250, 500, 1000}, 1, lin, TrustUntested, "one window per size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := json.Marshal(synthCurve("trust", tt.sizes, tt.reps, tt.mem, flat, 0.8, 0.5))
			f := fitIstiodCurve(parseCurve(t, b), "x", 0.95)
			if f.Memory.Trust != tt.trust {
				t.Errorf("memory trust %s, want %s (%v)", f.Memory.Trust, tt.trust, f.Memory.Notes)
			}
			if all := strings.Join(append(f.Memory.Notes, f.Notes...), "; "); !strings.Contains(all, tt.note) {
				t.Errorf("notes %q lack %q", all, tt.note)
			}
		})
	}
}

func curveModel(t *testing.T) *Model {
	t.Helper()
	m := fixtureModel(t)
	if err := m.UseIstiodCurve(parseCurve(t, readTestdata(t, curveFixture)), "istiod-curve.json"); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUseIstiodCurve: every mode's istiod usage fits become the curve's; the reservations and the other
// components stay the run's.
func TestUseIstiodCurve(t *testing.T) {
	run, m := fixtureModel(t), curveModel(t)
	for i, f := range m.Fits {
		was := run.Fits[i]
		switch {
		case f.Component == string(results.ComponentIstiod) && f.Kind == KindUsage:
			if f.Source != SourceIstiodCurve || f.N != 15 || f.Slope == nil || f.LoadMax != 2000 {
				t.Errorf("%s %s %s: source %q, n %d, slope %v, range to %g; want the curve's", f.Mode, f.Component, f.Metric, f.Source, f.N, f.Slope, f.LoadMax)
			}
		default:
			if f.Source != "" || f.N != was.N || f.Fixed.Value != was.Fixed.Value {
				t.Errorf("%s %s %s %s changed: %+v", f.Mode, f.Component, f.Metric, f.Kind, f.Line)
			}
		}
	}
	p := Project(m, goldenShape())
	var sidecarIstiod *ComponentProjection
	for _, c := range p.Modes[1].Components {
		if c.Component == string(results.ComponentIstiod) {
			sidecarIstiod = &c
		}
	}
	// 59 + 0.038 x 500 MiB = 78 MiB = 0.0762 GiB.
	if sidecarIstiod == nil || math.Abs(sidecarIstiod.Usage.Memory.Value-78.0/1024) > 0.02*78/1024 || sidecarIstiod.Usage.Memory.PI == nil {
		t.Errorf("sidecar istiod at 500 pods: %+v, want about 0.0762 GiB with an interval", sidecarIstiod)
	}
	if !strings.Contains(strings.Join(p.Assumptions, "\n"), "istiod: from the curve istiod-curve.json") {
		t.Errorf("assumptions do not name the curve:\n%s", strings.Join(p.Assumptions, "\n"))
	}
	bare := &Model{Confidence: 0.95, Fits: []Fit{{Mode: "none", Component: string(results.ComponentApp), Metric: string(results.MetricCPU), Kind: KindUsage}}}
	if err := bare.UseIstiodCurve(parseCurve(t, readTestdata(t, curveFixture)), "c.json"); err == nil || !strings.Contains(err.Error(), "no istiod usage") {
		t.Errorf("a run without istiod: %v", err)
	}
}

// TestIstiodCurveRunCheck: the run's own istiod (at its 10 app pods, fixture: 8.6 millicores and 88 MiB with proxies
// connected) is compared with the curve there; the fixture curve (4 millicores, 59 MiB empty) misses it and says
// so, a curve that agrees with the run does not.
func TestIstiodCurveRunCheck(t *testing.T) {
	m := curveModel(t)
	ck := m.IstiodCurve.RunCheck
	if len(ck) != 3 {
		t.Fatalf("run checks %+v, want one per mode with istiod (sidecar, ambient, waypoint)", ck)
	}
	for _, c := range ck {
		if c.AppPods != 10 || c.CPU.Inside || c.Memory.Inside || math.Abs(c.Memory.Measured-88) > 2 || c.Memory.Predicted.PI == nil {
			t.Errorf("%+v: want the run's 88 MiB at 10 pods outside the curve's interval", c)
		}
	}
	if notes := strings.Join(m.IstiodCurve.Notes, "\n"); strings.Count(notes, "outside its interval") != 3 {
		t.Errorf("notes:\n%s", notes)
	}
	agree, _ := json.Marshal(synthCurve("agree", []int{0, 250, 500, 1000}, 3,
		func(p float64) float64 { return 88 + 0.03*p }, func(float64) float64 { return 8.6 }, 0.8, 0.4))
	m = fixtureModel(t)
	if err := m.UseIstiodCurve(parseCurve(t, agree), "agree.json"); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.IstiodCurve.RunCheck {
		if !c.CPU.Inside || !c.Memory.Inside {
			t.Errorf("a curve that agrees with the run: %+v", c)
		}
	}
	if len(m.IstiodCurve.Notes) != 0 {
		t.Errorf("notes on an agreeing curve: %v", m.IstiodCurve.Notes)
	}
}

// TestIstiodCurveExtrapolation: a shape beyond the curve's largest size warns; one inside does not.
func TestIstiodCurveExtrapolation(t *testing.T) {
	m := curveModel(t)
	for _, c := range []struct {
		pods int
		want bool
	}{{500, false}, {2000, false}, {5000, true}} {
		sh := goldenShape()
		sh.Pods = c.pods
		p := Project(m, sh)
		var all []string
		for _, mp := range p.Modes {
			all = append(all, messages(mp.Warnings)...)
		}
		got := strings.Contains(strings.Join(all, "\n"), "outside the istiod curve's measured 0..2000 pods: extrapolated")
		if got != c.want {
			t.Errorf("%d pods: extrapolation warning %v, want %v\n%s", c.pods, got, c.want, strings.Join(all, "\n"))
		}
	}
}

func TestProjectCurveGolden(t *testing.T) {
	p := Project(curveModel(t), goldenShape())
	goldenfile.Check(t, "testdata/project-curve.txt", []byte(Text(p)))
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/project-curve.json", append(b, '\n'))
}

// An empty curve (never from ParseIstiodCurve, which rejects it) fits to nothing without panicking.
func TestFitIstiodCurveEmpty(t *testing.T) {
	f := fitIstiodCurve(&IstiodCurve{Schema: istiodCurveV2, Complete: true}, "x", 0.95)
	if f.CPU.N != 0 || f.Memory.N != 0 || len(f.Sizes) != 0 {
		t.Errorf("%+v", f)
	}
}
