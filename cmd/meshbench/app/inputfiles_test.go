package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/results"
)

// hostileFiles are the ways a file can break inputfile's rule: each replaces the file at a path.
var hostileFiles = []struct {
	name  string
	place func(t *testing.T, path string, k inputfile.Kind)
}{
	{"fifo", func(t *testing.T, path string, _ inputfile.Kind) { must(t, syscall.Mkfifo(path, 0o644)) }},
	{"directory", func(t *testing.T, path string, _ inputfile.Kind) { must(t, os.Mkdir(path, 0o755)) }},
	{"dev-zero", func(t *testing.T, path string, _ inputfile.Kind) { must(t, os.Symlink("/dev/zero", path)) }},
	{"over-the-cap", func(t *testing.T, path string, k inputfile.Kind) { // sparse: no disk used
		must(t, os.WriteFile(path, nil, 0o644))
		must(t, os.Truncate(path, k.Max()+1))
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyRun copies the fixture run directory name into a new temporary directory and returns the copy.
func copyFixtureRun(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	must(t, os.MkdirAll(dst, 0o755))
	entries, err := os.ReadDir(fixtureRun(name))
	must(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixtureRun(name), e.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// runWithin is run failing the test when the command takes longer than d: a FIFO read would block for ever.
func runWithin(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := run(t, args...)
		done <- result{code, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr
	case <-time.After(d):
		t.Fatalf("%v still running after %s (blocked on a file?)", args, d)
		return 0, ""
	}
}

// TestHostileInputFilesExit2: every kind of file the CLI reads, in every verb that reads it, is refused with exit 2
// when it is a FIFO, a directory, /dev/zero or above its cap, within seconds (a FIFO used to hang every file input,
// /dev/zero to end in Go's out-of-memory crash, which also exits 2), with a message naming the file and the cap.
// Nothing contacts a cluster: the kubeconfigs are refused before client-go reads them, and every other case passes
// --kubeconfig of a file that does not exist.
func TestHostileInputFilesExit2(t *testing.T) {
	t.Parallel()
	scenarioWithManifests := func(t *testing.T, manifest string) string {
		scn := filepath.Join(t.TempDir(), "s.yaml")
		writeFile(t, scn, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: hostile}\nspec:\n"+
			"  workload: {app: manifests, manifests: {paths: ["+manifest+"]}}\n  modes: [none]\n  load: {targets: [{service: web}]}\n")
		return scn
	}
	scenarioFile := func(t *testing.T) string {
		scn := filepath.Join(t.TempDir(), "s.yaml")
		writeFile(t, scn, runScenarioYAML)
		return scn
	}
	noCluster := []string{"--kubeconfig", "/nonexistent/kubeconfig"}
	type input struct {
		kind inputfile.Kind
		verb string
		// args places the hostile file (through place) and returns the command line.
		args func(t *testing.T, place func(string) string) []string
	}
	runFile := func(k inputfile.Kind, verb string, extra ...string) input {
		return input{k, verb, func(t *testing.T, place func(string) string) []string {
			dir := copyFixtureRun(t, "aa-1")
			path := filepath.Join(dir, map[inputfile.Kind]string{inputfile.RunMeta: results.RunFile, inputfile.Samples: results.SamplesFile,
				inputfile.Cases: results.CasesFile, inputfile.Summary: results.SummaryFile}[k])
			must(t, os.Remove(path))
			place(path)
			switch verb {
			case "report":
				return []string{"report", dir, "--output-dir", t.TempDir()}
			case "report --latest":
				return []string{"report", "--latest", filepath.Dir(dir), "--output-dir", t.TempDir()}
			case "compare":
				return []string{"compare", fixtureRun("aa-2"), dir}
			case "project":
				return append([]string{"project", dir}, goldenArgs[2:]...)
			case "run --resume":
				return append([]string{"run", "--resume", dir, "--skip-image-check"}, noCluster...)
			}
			t.Fatalf("verb %s", verb)
			return nil
		}}
	}
	var inputs []input
	for _, verb := range []string{"plan", "run", "cni", "preflight", "schedule"} {
		inputs = append(inputs, input{inputfile.Scenario, verb, func(t *testing.T, place func(string) string) []string {
			args := []string{verb, "-f", place(filepath.Join(t.TempDir(), "s.yaml"))}
			switch verb {
			case "run", "cni":
				args = append(append(args, "--skip-image-check"), noCluster...)
			case "preflight":
				args = append(args, noCluster...)
			}
			return args
		}})
	}
	for _, verb := range []string{"plan", "run", "schedule"} {
		inputs = append(inputs, input{inputfile.Manifest, verb, func(t *testing.T, place func(string) string) []string {
			args := []string{verb, "-f", scenarioWithManifests(t, place(filepath.Join(t.TempDir(), "app.yaml")))}
			if verb == "run" {
				args = append(append(args, "--skip-image-check"), noCluster...)
			}
			return args
		}})
	}
	for _, verb := range []string{"run", "cni", "run image check", "cni image check", "preflight", "cleanup", "schedule --apply"} {
		inputs = append(inputs, input{inputfile.Kubeconfig, verb, func(t *testing.T, place func(string) string) []string {
			kc := place(filepath.Join(t.TempDir(), "kubeconfig"))
			switch verb {
			case "run image check", "cni image check":
				// The kubeconfig, a local file, is refused before any registry is asked: a registry without the
				// images used to be reported alone, and the kubeconfig's problem only after it was mended.
				return []string{strings.Fields(verb)[0], "-f", scenarioFile(t), "--image-registry", emptyRegistry(t),
					"--output-dir", t.TempDir(), "--kubeconfig", kc}
			case "cleanup":
				return []string{"cleanup", "--run", "r1", "--kubeconfig", kc}
			case "preflight":
				return []string{"preflight", "-f", scenarioFile(t), "--kubeconfig", kc}
			case "schedule --apply":
				return []string{"schedule", "-f", scenarioFile(t), "--pvc", "runs", "--apply", "--kubeconfig", kc}
			}
			return []string{verb, "-f", scenarioFile(t), "--skip-image-check", "--output-dir", t.TempDir(), "--kubeconfig", kc}
		}})
	}
	for _, k := range []inputfile.Kind{inputfile.RunMeta, inputfile.Samples, inputfile.Cases} {
		for _, verb := range []string{"report", "report --latest", "compare", "project", "run --resume"} {
			inputs = append(inputs, runFile(k, verb))
		}
	}
	inputs = append(inputs, runFile(inputfile.Summary, "report"), runFile(inputfile.Summary, "compare"))
	for _, f := range []struct {
		kind inputfile.Kind
		flag string
	}{{inputfile.Shape, "-f"}, {inputfile.RPSPerPod, "--rps-per-pod"}, {inputfile.IstiodCurve, "--istiod-curve"}} {
		inputs = append(inputs, input{f.kind, "project " + f.flag, func(t *testing.T, place func(string) string) []string {
			return []string{"project", fixtureRun("capacity"), f.flag, place(filepath.Join(t.TempDir(), "input")), "--nodes", "20", "--namespaces", "10"}
		}})
	}
	inputs = append(inputs,
		input{inputfile.CABundle, "images --ca-certs", func(t *testing.T, place func(string) string) []string {
			return []string{"images", "build", "--source", fakeSource(t), "--ca-certs", place(filepath.Join(t.TempDir(), "ca.pem"))}
		}},
		input{inputfile.GoMod, "images --source", func(t *testing.T, place func(string) string) []string {
			src := fakeSource(t)
			must(t, os.Remove(filepath.Join(src, "go.mod")))
			place(filepath.Join(src, "go.mod"))
			return []string{"images", "build", "--source", src}
		}},
	)
	for _, in := range inputs {
		for _, h := range hostileFiles {
			if in.kind == inputfile.Manifest && h.name == "directory" {
				continue // a directory of manifests is read file by file (workloads TestManifestsFollowTheInputRule)
			}
			t.Run(in.kind.String()+"/"+in.verb+"/"+h.name, func(t *testing.T) {
				t.Parallel()
				var placed string
				args := in.args(t, func(path string) string {
					h.place(t, path, in.kind)
					placed = path
					return path
				})
				code, stderr := runWithin(t, 30*time.Second, args...)
				if code != exitBadInput {
					t.Fatalf("%v: exit %d, want 2\n%s", args, code, stderr)
				}
				for _, want := range []string{placed, inputfile.Bytes(in.kind.Max())} {
					if !strings.Contains(stderr, want) {
						t.Errorf("%v: stderr does not name %q:\n%s", args, want, stderr)
					}
				}
			})
		}
	}
}

// emptyRegistry is a loopback registry that has no image: every manifest is 404.
func emptyRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/meshbench"
}

// TestExitCodeOfInputFileErrors: an *inputfile.Error is bad input (exit 2) however deeply it is wrapped, even where a
// verb did not mark it (a library error on its way up).
func TestExitCodeOfInputFileErrors(t *testing.T) {
	t.Parallel()
	_, err := inputfile.Check("/dev/zero", inputfile.Kubeconfig)
	if err == nil {
		t.Skip("/dev/zero is not a device here")
	}
	if got := exitCode(fmt.Errorf("connect: %w", fmt.Errorf("load kubeconfig: %w", err))); got != exitBadInput {
		t.Errorf("exit code %d, want %d", got, exitBadInput)
	}
}

// TestInvalidRunDirectories: the reading verbs over results/testdata/invalid-*: a run directory with conflicting
// records or an unknown case status exits 2 naming the file and line; one with repeated lines, samples outside
// physics or a clock run backwards is read, with its warnings, and compare -o json stays valid JSON.
func TestInvalidRunDirectories(t *testing.T) {
	t.Parallel()
	dir := func(name string) string { return filepath.Join("..", "..", "..", "results", "testdata", name) }
	// compare's base: the repeated-lines run under another run ID (compare refuses a run with itself).
	base := filepath.Join(t.TempDir(), "base")
	must(t, os.MkdirAll(base, 0o755))
	entries, err := os.ReadDir(dir("invalid-duplicate-lines"))
	must(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir("invalid-duplicate-lines"), e.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(base, e.Name()), bytes.ReplaceAll(b, []byte(`"r1"`), []byte(`"r0"`)), 0o644))
	}
	for _, tc := range []struct {
		name string
		code int
		want string
	}{
		{"invalid-conflicting-sample", exitBadInput, "samples.jsonl:4: "},
		{"invalid-conflicting-case", exitBadInput, "cases.jsonl:4: "},
		{"invalid-status", exitBadInput, `cases.jsonl:2: case "single/sidecar/100/r2": unknown status "bogus"`},
		{"invalid-duplicate-lines", exitOK, "samples.jsonl:1,4: "},
		{"invalid-physics", exitOK, "value 1e+308 is beyond 1e+15"},
		{"invalid-clock", exitOK, "before it starts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			outDir := t.TempDir()
			code, _, stderr := run(t, "report", dir(tc.name), "--output-dir", outDir)
			md, _ := os.ReadFile(filepath.Join(outDir, "report.md"))
			if code != tc.code || !strings.Contains(stderr+string(md), tc.want) {
				t.Errorf("report: exit %d (want %d), neither stderr nor report.md has %q:\n%s", code, tc.code, tc.want, stderr)
			}
			code, out, stderr := run(t, "compare", base, dir(tc.name), "-o", "json")
			if code != tc.code {
				t.Errorf("compare: exit %d (want %d)\n%s", code, tc.code, stderr)
			}
			if code == exitOK && !json.Valid([]byte(out)) {
				t.Errorf("compare -o json: not JSON:\n%s", out)
			}
		})
	}
}
