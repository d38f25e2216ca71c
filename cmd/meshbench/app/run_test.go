package app

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// runScenarioYAML is a valid run (and cni) scenario; its output dir is replaced per test with --output-dir.
const runScenarioYAML = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: flags}
spec:
  workload: {app: fortio-chain}
  modes: [none]
  windows: {idle: 1s, load: 1s, repetitions: 1}
  cni: {tests: [tcp], paths: [same-node]}
`

// unreachableKubeconfig is a kubeconfig whose API server refuses connections.
func unreachableKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	kc := filepath.Join(dir, "kubeconfig")
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	return kc
}

// scenarioFixture is a temporary directory holding runScenarioYAML (scn) and a kubeconfig whose API server refuses
// connections (kc): what the flag and resume tests vary.
func scenarioFixture(t *testing.T) (dir, scn, kc string) {
	t.Helper()
	dir = t.TempDir()
	scn = filepath.Join(dir, "s.yaml")
	writeFile(t, scn, runScenarioYAML)
	return dir, scn, unreachableKubeconfig(t, dir)
}

// scenarioVariant writes runScenarioYAML with old replaced by new to dir/name and returns its path.
func scenarioVariant(t *testing.T, dir, name, old, new string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, strings.Replace(runScenarioYAML, old, new, 1))
	return p
}

// TestRunBadFlagsExit2: flags are checked like the file, before anything is written or contacted: exit 2, the
// message names the flag and the fix, and no run directory exists afterwards.
func TestRunBadFlagsExit2(t *testing.T) {
	t.Parallel()
	dir, scn, kc := scenarioFixture(t)
	file := filepath.Join(dir, "a-file")
	writeFile(t, file, "")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"negative ready timeout", []string{"run", "--ready-timeout=-5m"}, []string{"--ready-timeout -5m0s", "positive duration", "e.g. --ready-timeout 10m"}},
		{"zero verify timeout", []string{"run", "--verify-timeout", "0"}, []string{"--verify-timeout 0s", "positive"}},
		{"zero delete timeout", []string{"run", "--delete-timeout", "0s"}, []string{"--delete-timeout"}},
		{"zero finalize timeout (old name)", []string{"run", "--finalize-timeout", "0s"}, []string{"--delete-timeout 0s"}},
		{"prometheus url", []string{"run", "--prometheus-url", "not a url"}, []string{`--prometheus-url "not a url"`, "http:// or https://", "spec.prometheus.url"}},
		{"every bad flag at once", []string{"run", "--ready-timeout=-5m", "--verify-timeout", "0", "--prometheus-url", "ftp://x"},
			[]string{"--ready-timeout -5m0s", "--verify-timeout 0s", `--prometheus-url "ftp://x"`}},
		{"prometheus url without host", []string{"run", "--prometheus-url", "http://"}, []string{"--prometheus-url"}},
		{"output dir under a file", []string{"run", "--output-dir", filepath.Join(file, "runs")}, []string{"not a directory", "--output-dir"}},
		{"output dir is a file", []string{"run", "--output-dir", file}, []string{"not a directory", "--output-dir"}},
		{"output dir with resume", []string{"run", "--resume", dir, "--output-dir", filepath.Join(dir, "elsewhere")},
			[]string{"with --resume " + dir + ": a resumed run stays in its directory; drop --output-dir"}},
		{"cni ready timeout", []string{"cni", "--ready-timeout", "0"}, []string{"--ready-timeout 0s"}},
		{"cni finalize timeout (old name)", []string{"cni", "--finalize-timeout", "-1s"}, []string{"--delete-timeout -1s"}},
		{"cni output dir is a file", []string{"cni", "--output-dir", file}, []string{"not a directory"}},
		{"cleanup timeout", []string{"cleanup", "--all", "--timeout", "0"}, []string{"--timeout 0s"}},
		{"schedule timeout", []string{"schedule", "--pvc", "r", "--timeout", "-1h"}, []string{"--timeout -1h0m0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runs := filepath.Join(t.TempDir(), "runs")
			args := append([]string{}, tc.args...)
			joined := strings.Join(args, " ")
			switch args[0] {
			case "run", "cni":
				if !strings.Contains(joined, "--resume") {
					args = append(args, "-f", scn)
				}
				if !strings.Contains(joined, "--output-dir") {
					args = append(args, "--output-dir", runs)
				}
				args = append(args, "--kubeconfig", kc, "--skip-image-check")
			case "cleanup":
				args = append(args, "--kubeconfig", kc, "--output-dir", runs)
			case "schedule":
				args = append(args, "-f", scn)
			}
			code, _, stderr := run(t, args...)
			if code != exitBadInput {
				t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
				}
			}
			if _, err := os.Stat(runs); !os.IsNotExist(err) {
				t.Errorf("%s exists after bad input", runs)
			}
		})
	}
}

// TestRunResume: run --resume follows cni --resume's rule (TestCNIResume): the recorded scenario runs; -f,
// --image-registry and --output-dir may repeat the recorded run's command line, and a scenario or flag that would
// change its plan is refused with exit 2 naming the fields, before any cluster is contacted (the kubeconfig's API
// server refuses connections: a resume that passes the checks stops there, "nothing was changed"). --prometheus-url
// may differ (a Prometheus that moved). The run directory is left byte for byte as it was.
func TestRunResume(t *testing.T) {
	t.Parallel()
	dir, scn, kc := scenarioFixture(t)
	more := scenarioVariant(t, dir, "more.yaml", "modes: [none]", "modes: [none, sidecar]")
	otherCNI := scenarioVariant(t, dir, "other-cni.yaml", "paths: [same-node]", "paths: [host]")
	renamed := scenarioVariant(t, dir, "renamed.yaml", "metadata: {name: flags}", "metadata: {name: other}")
	runResumeCases(t, "run", scn, kc, []resumeCase{
		{name: "recorded scenario", command: "run", want: []string{"nothing was changed"}},
		{name: "same file", command: "run", args: []string{"-f", scn}, want: []string{"nothing was changed"}},
		{name: "file differing outside the plan", command: "run", args: []string{"-f", otherCNI}, want: []string{"nothing was changed"}},
		{name: "same output dir", command: "run", args: []string{"-f", scn, "--output-dir", "PARENT"}, want: []string{"nothing was changed"}},
		{name: "prometheus moved", command: "run", args: []string{"-f", scn, "--prometheus-url", "http://127.0.0.1:9"}, want: []string{"nothing was changed"}},
		{name: "file changes the plan", command: "run", args: []string{"-f", more}, refused: true, want: []string{
			"--resume RUN_DIR with -f " + more, "would change the recorded run's plan", `spec.modes: recorded ["none"], given ["none","sidecar"]`,
			"drop -f (and --image-registry) to resume with the recorded scenario, or start a new run without --resume"}},
		// The name seeds the random interleave (spec.windows.seed defaults from it): another name, another order.
		{name: "another name changes the seed", command: "run", args: []string{"-f", renamed}, refused: true, want: []string{"spec.windows.seed: recorded "}},
		{name: "image registry changes the images", command: "run", args: []string{"-f", scn, "--image-registry", "registry.example/mb"}, refused: true,
			want: []string{"spec.images.agent: recorded", `given "registry.example/mb/meshbench-agent:`}},
		{name: "image registry without the file", command: "run", args: []string{"--image-registry", "registry.example/mb"}, refused: true,
			want: []string{"--image-registry with --resume RUN_DIR", "drop --image-registry"}},
		{name: "another output dir", command: "run", args: []string{"--output-dir", filepath.Join(dir, "elsewhere")}, refused: true,
			want: []string{"--output-dir " + filepath.Join(dir, "elsewhere") + " with --resume RUN_DIR", "drop --output-dir"}},
		{name: "a cni run", command: "cni", args: []string{"-f", scn}, refused: true,
			want: []string{`the directory holds a "cni" run, not a mesh run: continue it with meshbench cni --resume RUN_DIR`}},
	})
}

// TestRunUnreachableClusterLeavesNothing: a kubeconfig that does not exist, or whose API server does not answer, is
// bad input (exit 2, "nothing was changed") and no run directory is created.
func TestRunUnreachableClusterLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scn := filepath.Join(dir, "s.yaml")
	writeFile(t, scn, runScenarioYAML)
	for _, kc := range []string{"/nonexistent", unreachableKubeconfig(t, dir)} {
		for _, verb := range []string{"run", "cni"} {
			out := t.TempDir()
			code, _, stderr := run(t, verb, "-f", scn, "--kubeconfig", kc, "--output-dir", out, "--skip-image-check")
			if code != exitBadInput || !strings.Contains(stderr, "nothing was changed") {
				t.Errorf("%s --kubeconfig %s: exit %d\n%s", verb, kc, code, stderr)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("%s --kubeconfig %s left %v in the output directory", verb, kc, entries)
			}
		}
	}
}

// TestOfflineVerbsHaveNoClusterFlags: plan, report, compare, version and images never contact a cluster, so they do
// not offer --kubeconfig; the cluster verbs do.
func TestOfflineVerbsHaveNoClusterFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"plan", "-f", "../../../examples/quickstart.yaml"},
		{"report", "x"},
		{"compare", "a", "b"},
		{"version"},
		{"images", "build"},
	} {
		code, _, stderr := run(t, append(args, "--kubeconfig", "k")...)
		if code != exitBadInput || !strings.Contains(stderr, "unknown flag: --kubeconfig") {
			t.Errorf("%v --kubeconfig: exit %d %s", args, code, stderr)
		}
	}
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, verb := range []string{"run", "cni", "preflight", "cleanup", "schedule"} {
		c, _, err := root.Find([]string{verb})
		if err != nil || c.Flags().Lookup("kubeconfig") == nil || c.Flags().Lookup("context") == nil {
			t.Errorf("%s: no --kubeconfig/--context (%v)", verb, err)
		}
	}
}

// TestDeprecatedAliases: the old flag names still parse (scripts keep working) and say the new name on stderr.
func TestDeprecatedAliases(t *testing.T) {
	t.Parallel()
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, tc := range []struct{ verb, old, new string }{
		{"run", "retain", "keep"},
		{"run", "finalize-timeout", "delete-timeout"},
		{"cni", "retain", "keep"},
		{"cni", "finalize-timeout", "delete-timeout"},
		{"cleanup", "runs-dir", "output-dir"},
		{"report", "out", "output-dir"},
		{"plan", "dry-run", "show-objects"},
	} {
		c, _, err := root.Find([]string{tc.verb})
		if err != nil {
			t.Fatal(err)
		}
		old, nw := c.Flags().Lookup(tc.old), c.Flags().Lookup(tc.new)
		if old == nil || nw == nil || !old.Hidden || !strings.Contains(old.Usage, "deprecated: use --"+tc.new) || old.Value.Type() != nw.Value.Type() {
			t.Errorf("%s --%s: not a deprecated alias of --%s", tc.verb, tc.old, tc.new)
		}
	}
	// The bool alias needs no value, as before; the notice goes to stderr, stdout stays the objects alone.
	code, out, stderr := run(t, "plan", "-f", "../../../examples/quickstart.yaml", "--dry-run")
	_, want, _ := run(t, "plan", "-f", "../../../examples/quickstart.yaml", "--show-objects")
	if code != exitOK || out != want || !strings.Contains(out, "kind: Namespace") || !strings.Contains(stderr, "--dry-run has been deprecated, use --show-objects") {
		t.Errorf("plan --dry-run: exit %d, same output as --show-objects %v, stderr %q", code, out == want, stderr)
	}
	// The old value flag sets the new one: cni --finalize-timeout 0 is refused as --delete-timeout 0s.
	code, _, stderr = run(t, "cni", "-f", "x.yaml", "--finalize-timeout", "0")
	if code != exitBadInput || !strings.Contains(stderr, "--delete-timeout 0s") || !strings.Contains(stderr, "--finalize-timeout has been deprecated") {
		t.Errorf("cni --finalize-timeout 0: exit %d, %s", code, stderr)
	}
}

// TestPlanJSON: -o json gives the estimate in seconds and as text; --show-objects -o json is JSON, not YAML.
func TestPlanJSON(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, "plan", "-f", "../../../examples/quickstart.yaml", "-o", "json")
	var p struct {
		EstimateSeconds float64 `json:"estimateSeconds"`
		Estimate        string  `json:"estimate"`
		Cases           []any   `json:"cases"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("exit %d, %s\n%.300s", code, stderr, out)
	}
	d, err := time.ParseDuration(p.Estimate)
	if err != nil || p.EstimateSeconds <= 0 || d.Seconds() != p.EstimateSeconds || len(p.Cases) == 0 {
		t.Errorf("estimate %q, estimateSeconds %v, %d cases", p.Estimate, p.EstimateSeconds, len(p.Cases))
	}
	code, out, stderr = run(t, "plan", "-f", "../../../examples/quickstart.yaml", "--show-objects", "-o", "json")
	var objs []struct {
		Case    string           `json:"case"`
		Objects []map[string]any `json:"objects"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &objs) != nil || len(objs) == 0 || len(objs[0].Objects) == 0 {
		t.Errorf("--show-objects -o json: exit %d, %s\n%.300s", code, stderr, out)
	}
}

// TestProgressWriter: on a terminal the stream itself (bars); anything else gets timestamped lines in which a
// redrawn bar leaves nothing; -q gets nothing.
func TestProgressWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if w := progressWriter(&globalFlags{Quiet: true}, &buf); w != nil {
		t.Errorf("-q: %T", w)
	}
	w := progressWriter(&globalFlags{}, &buf)
	lw, ok := w.(*lineWriter)
	if !ok {
		t.Fatalf("non-terminal: %T", w)
	}
	if p, ok := w.(interface{ PlainProgress() bool }); !ok || !p.PlainProgress() {
		t.Error("line writer does not announce line mode")
	}
	lw.now = func() time.Time { return time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC) }
	_, _ = io.WriteString(w, "case 1 idle window: started (1m0s)\n")
	_, _ = io.WriteString(w, "\rpods ready  20% |██      | (1/5)\rpods ready  40% |████    | (2/5)")
	_, _ = io.WriteString(w, "\r                                   \r")
	_, _ = io.WriteString(w, "case 1 idle window: done")
	_, _ = io.WriteString(w, " after 1m0s\n")
	want := "2026-12-01T10:15:00Z case 1 idle window: started (1m0s)\n2026-12-01T10:15:00Z case 1 idle window: done after 1m0s\n"
	if buf.String() != want {
		t.Errorf("lines:\n%q\nwant\n%q", buf.String(), want)
	}

	// A terminal: the pseudo-terminal's controlling side answers TCGETS like a tty.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to test the terminal case: %v", err)
	}
	defer ptmx.Close()
	if w := progressWriter(&globalFlags{}, ptmx); w != ptmx {
		t.Errorf("terminal: got %T, want the terminal itself", w)
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := progressWriter(&globalFlags{}, f).(*lineWriter); !ok {
		t.Error("a log file is not a terminal")
	}
}

// TestSidecarCostBrief: the end-of-run note names the top workloads by sidecar CPU from the sample run's summary
// (the report's Per workload section ranks them the same way), and nothing for a run without per-workload figures.
func TestSidecarCostBrief(t *testing.T) {
	t.Parallel()
	run, err := results.Read(filepath.Join("..", "..", "..", "testdata", "runs", "sample"))
	if err != nil {
		t.Fatal(err)
	}
	got := sidecarCostBrief(*run.Summary, 2)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "top workloads by sidecar CPU in sidecar mode (single, load 1000 qps):" ||
		!strings.HasPrefix(lines[1], "  Deployment/mb-single/frontend: sidecar ") || !strings.Contains(lines[1], " millicores, app ") ||
		!strings.Contains(lines[1], "% vs none") || !strings.HasPrefix(lines[2], "  Deployment/mb-single/balancereader: ") {
		t.Errorf("brief:\n%s", got)
	}
	if got := sidecarCostBrief(results.Summary{Series: run.Summary.Series}, 3); got != "" {
		t.Errorf("without per-workload figures: %q", got)
	}
}
