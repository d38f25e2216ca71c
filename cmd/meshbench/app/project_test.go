package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goldenArgs is the shape of capacity's golden outputs (capacity/testdata/project.*): the command must print them.
var goldenArgs = []string{"project", fixtureRun("capacity"), "--pods", "500", "--nodes", "20", "--namespaces", "10",
	"--rps", "5000", "--price-cpu", "25", "--price-memory", "3.5"}

func TestProjectGolden(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ format, golden string }{{"table", "project.txt"}, {"json", "project.json"}} {
		code, out, errOut := run(t, append(goldenArgs, "-o", c.format)...)
		if code != exitOK {
			t.Fatalf("-o %s: exit %d\n%s", c.format, code, errOut)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "capacity", "testdata", c.golden))
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("-o %s differs from capacity/testdata/%s (go test ./capacity -update, then review)", c.format, c.golden)
		}
	}
}

// TestProjectShapeFile: -f gives the same projection as the flags; a flag overrides the file's field.
func TestProjectShapeFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "shape.yaml")
	if err := os.WriteFile(file, []byte("pods: 500\nnodes: 7\nnamespaces: 10\nrps: 5000\npriceCPU: 25\npriceMemory: 3.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "project", fixtureRun("capacity"), "-f", file, "--nodes", "20")
	want, _ := os.ReadFile(filepath.Join("..", "..", "..", "capacity", "testdata", "project.txt"))
	if code != exitOK || out != string(want) {
		t.Errorf("exit %d, output differs from the flags' projection\n%s", code, errOut)
	}
	perPod := filepath.Join(dir, "pods.txt")
	if err := os.WriteFile(perPod, []byte("# pod rps\nfrontend-0 3000\nledger-0 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "project", fixtureRun("capacity"), "--rps-per-pod", perPod, "--nodes", "2", "--namespaces", "1")
	if code != exitOK || !strings.Contains(out, "Shape: 2 pods, 2 nodes, 1 namespaces, 5000 rps (per pod from --rps-per-pod)") ||
		!strings.Contains(out, "the pods' rates (2..3 krps per pod) leave the measured") {
		t.Errorf("--rps-per-pod: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestProjectBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("pods: 5\npodz: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--nodes", "0", "--namespaces", "1", "--rps", "10"}, []string{"pods (--pods): 0: must be a whole number >= 1", "nodes (--nodes): 0"}},
		{[]string{"--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "-3"}, []string{"rps (--rps): -3: must be a number > 0"}},
		{[]string{"--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "3", "--price-cpu", "2"}, []string{"priceMemory (--price-memory): missing"}},
		{[]string{"-f", bad}, []string{"line 2: podz: unknown field"}},
		// The input that panicked (index out of range in capacity.ParseRPSPerPod): a line holding only ",".
		{[]string{"--rps-per-pod", filepath.Join("..", "..", "..", "capacity", "testdata", "invalid-rps-per-pod-comma.txt")}, []string{`line 3 ",": no rate`}},
		{[]string{"--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "3", "-o", "csv"}, []string{"--output"}},
	} {
		code, _, errOut := run(t, append([]string{"project", fixtureRun("capacity")}, c.args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, exitBadInput, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
	if code, _, errOut := run(t, "project", t.TempDir(), "--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "3"); code != exitBadInput {
		t.Errorf("a directory without a run: exit %d\n%s", code, errOut)
	}
}

// TestProjectHoldout: --holdout prints capacity's golden holdout check of the fixture (no shape flags needed), and
// a level the run lacks is bad input naming the levels it has.
func TestProjectHoldout(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "project", fixtureRun("capacity"), "--holdout", "500")
	want, err := os.ReadFile(filepath.Join("..", "..", "..", "capacity", "testdata", "holdout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if code != exitOK || out != string(want) {
		t.Errorf("exit %d, output differs from capacity/testdata/holdout.txt\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "project", fixtureRun("capacity"), "--holdout", "500", "-o", "json")
	if code != exitOK || !strings.Contains(out, `"level": "500"`) || !strings.Contains(out, `"inside": true`) {
		t.Errorf("-o json: exit %d\n%s", code, out)
	}
	code, _, errOut = run(t, "project", fixtureRun("capacity"), "--holdout", "700")
	if code != exitBadInput || !strings.Contains(errOut, "its levels: 250, 500, 1000") {
		t.Errorf("unknown level: exit %d\n%s", code, errOut)
	}
}

// curveFixture is capacity's synthetic istiod curve (capacity/testdata/istiod-curve.json).
var curveFixture = filepath.Join("..", "..", "..", "capacity", "testdata", "istiod-curve.json")

// TestProjectIstiodCurve: --istiod-curve prints capacity's golden projection with the curve, and a shape file's
// istiodCurve (relative to the file) gives the same.
func TestProjectIstiodCurve(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ format, golden string }{{"table", "project-curve.txt"}, {"json", "project-curve.json"}} {
		code, out, errOut := run(t, append(goldenArgs, "--istiod-curve", curveFixture, "-o", c.format)...)
		if code != exitOK {
			t.Fatalf("-o %s: exit %d\n%s", c.format, code, errOut)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "capacity", "testdata", c.golden))
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("-o %s differs from capacity/testdata/%s (go test ./capacity -update, then review)", c.format, c.golden)
		}
	}
	dir := t.TempDir()
	data, err := os.ReadFile(curveFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "curves"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "curves", "istiod-curve.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "shape.yaml")
	if err := os.WriteFile(file, []byte("pods: 500\nnodes: 20\nnamespaces: 10\nrps: 5000\npriceCPU: 25\npriceMemory: 3.5\nistiodCurve: curves/istiod-curve.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "project", fixtureRun("capacity"), "-f", file)
	want, _ := os.ReadFile(filepath.Join("..", "..", "..", "capacity", "testdata", "project-curve.txt"))
	if code != exitOK || out != string(want) {
		t.Errorf("istiodCurve in the shape file: exit %d, output differs from project-curve.txt\n%s", code, errOut)
	}
}

func TestProjectIstiodCurveBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"schema": "meshbench.dev/istiod-curve/v2", "points": [{"pods": 0, "services": 0, "namespaces": 1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	shape := filepath.Join(dir, "shape.yaml")
	if err := os.WriteFile(shape, []byte("pods: 5\nnodes: 1\nnamespaces: 1\nrps: 3\nistiodCurve: broken.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shapeArgs := []string{"--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "3"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{append(shapeArgs, "--istiod-curve", filepath.Join(dir, "absent.json")), []string{"--istiod-curve: istiod curve ", "absent.json: no such file or directory"}},
		{append(shapeArgs, "--istiod-curve", broken), []string{"--istiod-curve " + broken, "points[0].repetitions: missing or empty"}},
		{[]string{"-f", shape}, []string{"istiodCurve (in --file " + shape + ") " + broken, "points[0].repetitions"}},
		{[]string{"--holdout", "500", "--istiod-curve", curveFixture}, []string{"--istiod-curve: --holdout"}},
	} {
		code, _, errOut := run(t, append([]string{"project", fixtureRun("capacity")}, c.args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, exitBadInput, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
	// The flag overrides the file's field (the broken one is never read).
	if code, _, errOut := run(t, "project", fixtureRun("capacity"), "-f", shape, "--istiod-curve", curveFixture); code != exitOK {
		t.Errorf("--istiod-curve over a broken istiodCurve: exit %d\n%s", code, errOut)
	}
}

// TestProjectChainDepth: on a run of several chain depths the command prints capacity's golden projection with the
// added latency per hop (table and JSON "hops"); a run of one depth has neither.
func TestProjectChainDepth(t *testing.T) {
	t.Parallel()
	args := append([]string{"project", fixtureRun("chain-depth")}, goldenArgs[2:]...)
	for _, c := range []struct{ format, golden string }{{"table", "project-chain-depth.txt"}, {"json", "project-chain-depth.json"}} {
		code, out, errOut := run(t, append(args, "-o", c.format)...)
		if code != exitOK {
			t.Fatalf("-o %s: exit %d\n%s", c.format, code, errOut)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "capacity", "testdata", c.golden))
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("-o %s differs from capacity/testdata/%s (go test ./capacity -update, then review)", c.format, c.golden)
		}
	}
	code, out, _ := run(t, append(goldenArgs, "-o", "json")...)
	if code != exitOK || strings.Contains(out, `"hops"`) {
		t.Errorf("a run without chain depths: exit %d, hops in the JSON: %v", code, strings.Contains(out, `"hops"`))
	}
}

// TestProjectSyntheticGaps: `meshbench project` on capacity's synthetic run capacity-gaps (testdata/runs; no
// ztunnel in mode waypoint, no ztunnel memory in mode ambient, a null value, a NaN last line, a level at 60 % of its
// rate) marks the sums that lack a part, names the parts, shows the reader's warnings and the shortfall, and reads
// the null as no sample (issue 29 §2.1, 2.2, 2.3, 2.6).
func TestProjectSyntheticGaps(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, append([]string{"project", fixtureRun("capacity-gaps")}, goldenArgs[2:]...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"waypoint: ztunnel: not measured in this mode",
		"ambient: ztunnel: no memory usage figures",
		"(i,s)",
		`samples.jsonl:159: case "single/sidecar/500/r2" sidecar cpu avg: "value" is null`,
		"ignored truncated or corrupt last line",
		"sidecar: load level 1000 achieved 600 rps",
		"no break-even for memory usage: mode ambient's ztunnel memory was not measured",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "project", fixtureRun("capacity-gaps"), "--pods", "10", "--nodes", "3", "--namespaces", "1", "--rps", "1000", "-o", "json")
	if code != exitOK {
		t.Fatalf("-o json: exit %d\n%s", code, errOut)
	}
	var p struct {
		Modes []struct {
			Mode    string
			Missing []struct{ Component, Metric, Kind string }
			Mesh    struct{ CPU, Memory *struct{ Caveats []string } }
		}
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	for _, mp := range p.Modes {
		if mp.Mode != "waypoint" {
			continue
		}
		if len(mp.Missing) == 0 || mp.Missing[0].Component != "ztunnel" || mp.Mesh.CPU == nil || !slices.Contains(mp.Mesh.CPU.Caveats, "incomplete") {
			t.Errorf("waypoint: missing %+v, mesh cpu %+v: want ztunnel missing and the mesh incomplete", mp.Missing, mp.Mesh.CPU)
		}
	}
}

// TestProjectSyntheticNarrow: on capacity-narrow (levels 1000, 1005, 1010 qps) at 10 times the load, no figure
// rests on a slope through levels 1 % apart: the fits are constants "(levels too close)", the figures have no
// interval and are not negative (issue 29 §2.3).
func TestProjectSyntheticNarrow(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "project", fixtureRun("capacity-narrow"), "--pods", "10", "--nodes", "3", "--namespaces", "1", "--rps", "10000")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"sidecar  usage  0.913 [no interval] (s)", "constant (levels too close)", "a span of 1.01x"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "sidecar  usage") && strings.Contains(line, " -") {
			t.Errorf("a negative sidecar figure: %s", line)
		}
		if strings.HasSuffix(line, " linear") {
			t.Errorf("a fit judged linear through levels 1 %% apart: %s", line)
		}
	}
}

// TestProjectStatesNoiseAssumption: the projection says its intervals assume constant noise, and the holdout of
// the top level checks it: its output compares the scatter there with the other levels' (issue 29 §2.5).
func TestProjectStatesNoiseAssumption(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, goldenArgs...)
	if code != exitOK || !strings.Contains(out, "intervals assume the scatter between repetitions is the same at every load") ||
		!strings.Contains(out, "meshbench project RUN_DIR --holdout 1000") {
		t.Errorf("exit %d: the assumption or the check is missing\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "project", fixtureRun("capacity"), "--holdout", "1000")
	if code != exitOK || !strings.Contains(out, "Scatter between repetitions at 1000:") {
		t.Errorf("--holdout 1000: exit %d\n%s\n%s", code, out, errOut)
	}
}
