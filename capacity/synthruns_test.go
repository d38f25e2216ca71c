package capacity

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/results"
)

// The synthetic runs below are written through the real results.Store by their spec (synthSpec, seeded, known
// truth) into ../testdata/runs/<name> (go test ./capacity -run TestSynthRuns -update regenerates them); the tests
// here, `meshbench project` (cmd/meshbench/app) and the report read them as a user's run directory.

// gapsSpec (run capacity-gaps, seed 29) is the fixture's shape with what real runs lose: no ztunnel samples at all
// in mode waypoint, no ztunnel memory in mode ambient, the 1000-qps level of mode sidecar achieving 60 % of its rate,
// one sidecar CPU sample whose value is null, and a last line with a NaN (not JSON) that a crash or a foreign
// writer left.
func gapsSpec() synthSpec {
	return synthSpec{runID: "20261201-040000-gaps", seed: 29, modes: []string{"none", "sidecar", "ambient", "waypoint"},
		levels: []float64{250, 500, 1000}, reps: 3, pods: 10, nodes: 3, waypoints: 1, truth: synthFixtureTruth(),
		noise: noiseConstant, cpuSD: 0.03, memSD: 0.01, refKRPS: 0.5, requests: true,
		achieved: func(mode string, qps float64) float64 {
			if mode == "sidecar" && qps == 1000 {
				return 0.6
			}
			return 0.999
		},
		skip: func(mode, comp, metric string) bool {
			return comp == string(results.ComponentZtunnel) && (mode == "waypoint" || mode == "ambient" && metric == string(results.MetricMemory))
		}}
}

// gapsNullCase is the case whose sidecar CPU sample gapsEdit writes as null.
const gapsNullCase = "single/sidecar/500/r2"

// gapsEdit writes gapsNullCase's sidecar "avg" CPU value as null and appends a NaN line.
func gapsEdit(lines []string) []string {
	for i, l := range lines {
		if strings.Contains(l, `"caseID":"`+gapsNullCase+`"`) && strings.Contains(l, `"component":"sidecar","metric":"cpu","stat":"avg"`) {
			lines[i] = jsonLine(l, func(m map[string]any) { m["value"] = nil })
			break
		}
	}
	last := strings.Replace(lines[len(lines)-1], `"value":`, `"value":NaN,"was":`, 1)
	return append(lines, last)
}

// narrowSpec (run capacity-narrow, seed 29) measures 1000, 1005 and 1010 qps: levels 1 % apart, whose slope is the
// repetitions' scatter, not the cost's growth (at this seed the sidecar's CPU slope came out -2200 millicores per
// krps, "linear", and its projection at 10 times the load -1911 millicores per pod).
func narrowSpec(seed int) synthSpec {
	return synthSpec{runID: "20261201-030000-narr", seed: seed, modes: []string{"none", "sidecar", "ambient"},
		levels: []float64{1000, 1005, 1010}, reps: 3, pods: 10, nodes: 3, waypoints: 1, truth: synthFixtureTruth(),
		noise: noiseConstant, cpuSD: 0.03, memSD: 0.01, refKRPS: 1}
}

var synthRuns = []struct {
	name string
	spec synthSpec
	edit func([]string) []string
}{
	{"capacity-gaps", gapsSpec(), gapsEdit},
	{"capacity-narrow", narrowSpec(29), nil},
}

// TestSynthRuns regenerates the synthetic runs and fails when a committed file differs (-update rewrites them).
func TestSynthRuns(t *testing.T) {
	for _, r := range synthRuns {
		dir := filepath.Join("..", "testdata", "runs", r.name)
		if goldenfile.Update() {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := r.spec.write(dir, r.edit); err != nil {
				t.Fatal(err)
			}
			continue
		}
		tmp := filepath.Join(t.TempDir(), r.name)
		if err := r.spec.write(tmp, r.edit); err != nil {
			t.Fatal(err)
		}
		checkRegenerated(t, tmp, dir, "TestSynthRuns", results.RunFile, results.SamplesFile, results.CasesFile)
	}
}

func readSynth(t *testing.T, name string) *results.Run {
	t.Helper()
	run, err := results.Read(filepath.Join("..", "testdata", "runs", name))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func modeOf(t *testing.T, p Projection, mode string) ModeProjection {
	t.Helper()
	for _, mp := range p.Modes {
		if mp.Mode == mode {
			return mp
		}
	}
	t.Fatalf("no mode %s", mode)
	return ModeProjection{}
}

func hasCaveat(e *Estimate, c Caveat) bool { return e != nil && slices.Contains(e.Caveats, c) }

// TestGapsMissingComponents (item 1): mode waypoint measured no ztunnel and mode ambient no ztunnel memory. The
// projection lists what each mode lacks, its sums that lack a part are incomplete, the part a mode has stays (the
// ambient ztunnel's CPU is projected, its memory is absent, not 0), and a warning names each.
func TestGapsMissingComponents(t *testing.T) {
	t.Parallel()
	m, err := Build(readSynth(t, "capacity-gaps"), 0)
	if err != nil {
		t.Fatal(err)
	}
	p := Project(m, goldenShape())
	wp, amb, sc := modeOf(t, p, "waypoint"), modeOf(t, p, "ambient"), modeOf(t, p, "sidecar")
	wantWP := []Missing{{"ztunnel", "cpu", KindUsage}, {"ztunnel", "memory", KindUsage}, {"ztunnel", "cpu", KindReserved}, {"ztunnel", "memory", KindReserved}}
	if !slices.Equal(wp.Missing, wantWP) {
		t.Errorf("waypoint missing %+v, want %+v", wp.Missing, wantWP)
	}
	if want := []Missing{{"ztunnel", "memory", KindUsage}, {"ztunnel", "memory", KindReserved}}; !slices.Equal(amb.Missing, want) {
		t.Errorf("ambient missing %+v, want %+v", amb.Missing, want)
	}
	if len(sc.Missing) != 0 {
		t.Errorf("sidecar missing %+v", sc.Missing)
	}
	for what, e := range map[string]*Estimate{"waypoint mesh cpu": wp.Mesh.CPU, "waypoint mesh memory": wp.Mesh.Memory, "waypoint total cpu": wp.Total.CPU,
		"waypoint vs none cpu": wp.VsNone.CPU, "waypoint mesh reserved cpu": wp.MeshReserved.CPU, "waypoint cost": wp.Cost.Mesh,
		"ambient mesh memory": amb.Mesh.Memory, "ambient total memory": amb.Total.Memory, "ambient cost": amb.Cost.Mesh} {
		if !hasCaveat(e, CaveatIncomplete) {
			t.Errorf("%s %+v: not marked incomplete", what, e)
		}
	}
	for what, e := range map[string]*Estimate{"ambient mesh cpu": amb.Mesh.CPU, "sidecar mesh cpu": sc.Mesh.CPU} {
		if hasCaveat(e, CaveatIncomplete) {
			t.Errorf("%s %+v: marked incomplete, lacks nothing", what, e)
		}
	}
	i := slices.IndexFunc(amb.Components, func(c ComponentProjection) bool { return c.Component == "ztunnel" })
	if i < 0 || amb.Components[i].Usage.CPU == nil || amb.Components[i].Usage.Memory != nil {
		t.Fatalf("ambient ztunnel: %+v, want its CPU projected and no memory", amb.Components)
	}
	// The CPU that was measured is in the sum: the mesh CPU is ztunnel + istiod.
	zt := amb.Components[i].Usage.CPU.Value
	if math.Abs(amb.Mesh.CPU.Value-zt-amb.Components[i+1].Usage.CPU.Value) > 1e-9 {
		t.Errorf("ambient mesh cpu %v is not ztunnel %v + istiod", amb.Mesh.CPU.Value, zt)
	}
	var got []Warning
	for _, mp := range p.Modes {
		for _, w := range mp.Warnings {
			if w.Code == WarnMissing {
				got = append(got, Warning{Code: w.Code, Mode: w.Mode, Component: w.Component, Metric: w.Metric, Kind: w.Kind})
			}
		}
	}
	want := []Warning{{WarnMissing, "ambient", "ztunnel", "memory", KindUsage, ""}, {WarnMissing, "ambient", "ztunnel", "memory", KindReserved, ""},
		{WarnMissing, "waypoint", "ztunnel", "", KindUsage, ""}, {WarnMissing, "waypoint", "ztunnel", "", KindReserved, ""}}
	if !slices.Equal(got, want) {
		t.Errorf("missing warnings %+v, want %+v", got, want)
	}
}

// TestGapsReadWarnings (items 2 and 6): the null value is neither a point at 0 nor silent, and what results.Read
// tolerated (the null line, the NaN last line) is in the model's warnings, so project shows it.
func TestGapsReadWarnings(t *testing.T) {
	t.Parallel()
	m, err := Build(readSynth(t, "capacity-gaps"), 0)
	if err != nil {
		t.Fatal(err)
	}
	f := m.Find("sidecar", "sidecar", "cpu", KindUsage)
	if f.N != 8 || slices.ContainsFunc(f.Points, func(p Point) bool { return p.Y <= 0 }) {
		t.Errorf("sidecar cpu: %d points %+v, want 8 (the null sample left out), none at 0", f.N, f.Points)
	}
	var read []string
	for _, w := range m.Warnings {
		if w.Code == WarnRead {
			read = append(read, w.Message)
		}
	}
	all := strings.Join(read, "\n")
	for _, want := range []string{`samples.jsonl:`, `case "` + gapsNullCase + `" sidecar cpu avg: "value" is null`, "ignored truncated or corrupt last line"} {
		if !strings.Contains(all, want) {
			t.Errorf("read warnings lack %q:\n%s", want, all)
		}
	}
	if text := Text(Project(m, goldenShape())); !strings.Contains(text, `"value" is null`) || !strings.Contains(text, "ignored truncated or corrupt last line") {
		t.Errorf("project's text does not show the read warnings:\n%s", text)
	}
}

// TestGapsShortfall (item 3): mode sidecar's 1000-qps level achieved 600 rps: a typed shortfall and a warning;
// the other levels (99.9 %) are not flagged.
func TestGapsShortfall(t *testing.T) {
	t.Parallel()
	m, err := Build(readSynth(t, "capacity-gaps"), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []LoadShortfall{{Mode: "sidecar", Level: "1000", Asked: 1000, Achieved: 600, Cases: 3}}
	if !slices.Equal(m.Shortfalls, want) {
		t.Errorf("shortfalls %+v, want %+v", m.Shortfalls, want)
	}
	if !slices.ContainsFunc(m.Warnings, func(w Warning) bool {
		return w.Code == WarnLoadShortfall && w.Mode == "sidecar" && strings.Contains(w.Message, "load level 1000 achieved 600 rps")
	}) {
		t.Errorf("no shortfall warning: %+v", m.Warnings)
	}
}

// TestNarrowLoads (item 3): levels 1 % apart give no slope (a constant, marked), no "linear" verdict, and no
// interval at 10 times the load; the projected totals are the measured means, never negative.
func TestNarrowLoads(t *testing.T) {
	t.Parallel()
	m, err := Build(readSynth(t, "capacity-narrow"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Fits {
		if f.Per == PerMesh {
			continue
		}
		if f.Slope != nil || f.Trust != TrustConstant || !f.NarrowSpan {
			t.Errorf("%s %s %s %s: slope %v trust %s narrow %v", f.Mode, f.Component, f.Metric, f.Kind, f.Slope, f.Trust, f.NarrowSpan)
		}
	}
	p := Project(m, narrowShape())
	for _, mp := range p.Modes {
		for what, e := range map[string]*Estimate{"total cpu": mp.Total.CPU, "total memory": mp.Total.Memory} {
			if e.PI != nil || !hasCaveat(e, CaveatNoSlope) || e.Value <= 0 {
				t.Errorf("%s %s at 10x: %+v, want a positive value, no interval, caveat no-slope", mp.Mode, what, e)
			}
		}
	}
	if !slices.ContainsFunc(m.Warnings, func(w Warning) bool {
		return w.Code == WarnNarrowSpan && w.Mode == "sidecar" && w.Component == "sidecar" && strings.Contains(w.Message, "a span of 1.01x")
	}) {
		t.Errorf("no narrow-span warning for the sidecar: %+v", m.Warnings)
	}
}

// narrowShape is 10 times capacity-narrow's load on its own pods, nodes and waypoints.
func narrowShape() Shape { return Shape{Pods: 10, Nodes: 3, Namespaces: 1, RPS: 10000} }

func TestSynthGolden(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		run, golden string
		shape       Shape
	}{{"capacity-gaps", "project-gaps", goldenShape()}, {"capacity-narrow", "project-narrow", narrowShape()}} {
		m, err := Build(readSynth(t, c.run), 0)
		if err != nil {
			t.Fatal(err)
		}
		p := Project(m, c.shape)
		goldenfile.Check(t, "testdata/"+c.golden+".txt", []byte(Text(p)))
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		goldenfile.Check(t, "testdata/"+c.golden+".json", append(b, '\n'))
	}
}
