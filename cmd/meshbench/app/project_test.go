package app

import (
	"os"
	"path/filepath"
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
		if code != ExitOK {
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
	if code != ExitOK || out != string(want) {
		t.Errorf("exit %d, output differs from the flags' projection\n%s", code, errOut)
	}
	perPod := filepath.Join(dir, "pods.txt")
	if err := os.WriteFile(perPod, []byte("# pod rps\nfrontend-0 3000\nledger-0 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "project", fixtureRun("capacity"), "--rps-per-pod", perPod, "--nodes", "2", "--namespaces", "1")
	if code != ExitOK || !strings.Contains(out, "Shape: 2 pods, 2 nodes, 1 namespaces, 5000 rps (per pod from --rps-per-pod)") ||
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
		{[]string{"-f", bad}, []string{`unknown field "podz"`}},
		{[]string{"--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "3", "-o", "csv"}, []string{"--output"}},
	} {
		code, _, errOut := run(t, append([]string{"project", fixtureRun("capacity")}, c.args...)...)
		if code != ExitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, ExitBadInput, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
	if code, _, errOut := run(t, "project", t.TempDir(), "--pods", "5", "--nodes", "1", "--namespaces", "1", "--rps", "3"); code != ExitBadInput {
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
	if code != ExitOK || out != string(want) {
		t.Errorf("exit %d, output differs from capacity/testdata/holdout.txt\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "project", fixtureRun("capacity"), "--holdout", "500", "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"level": "500"`) || !strings.Contains(out, `"inside": true`) {
		t.Errorf("-o json: exit %d\n%s", code, out)
	}
	code, _, errOut = run(t, "project", fixtureRun("capacity"), "--holdout", "700")
	if code != ExitBadInput || !strings.Contains(errOut, "its levels: 250, 500, 1000") {
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
		if code != ExitOK {
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
	if code != ExitOK || out != string(want) {
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
		{append(shapeArgs, "--istiod-curve", filepath.Join(dir, "absent.json")), []string{"--istiod-curve: open", "absent.json"}},
		{append(shapeArgs, "--istiod-curve", broken), []string{"--istiod-curve " + broken, "points[0].repetitions: missing or empty"}},
		{[]string{"-f", shape}, []string{"istiodCurve (in --file " + shape + ") " + broken, "points[0].repetitions"}},
		{[]string{"--holdout", "500", "--istiod-curve", curveFixture}, []string{"--istiod-curve: --holdout"}},
	} {
		code, _, errOut := run(t, append([]string{"project", fixtureRun("capacity")}, c.args...)...)
		if code != ExitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, ExitBadInput, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
	// The flag overrides the file's field (the broken one is never read).
	if code, _, errOut := run(t, "project", fixtureRun("capacity"), "-f", shape, "--istiod-curve", curveFixture); code != ExitOK {
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
		if code != ExitOK {
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
	if code != ExitOK || strings.Contains(out, `"hops"`) {
		t.Errorf("a run without chain depths: exit %d, hops in the JSON: %v", code, strings.Contains(out, `"hops"`))
	}
}
