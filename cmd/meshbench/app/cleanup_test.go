package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCleanupBadFlagsExit2: cleanup checks --run's syntax and that --run-dir is that run's directory before it
// connects (the API server here refuses connections, and no problem may come from it): exit 2 naming the flag. A
// mistyped --run-dir used to restore no namespace labels, silently.
func TestCleanupBadFlagsExit2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kc := unreachableKubeconfig(t, dir)
	file := filepath.Join(dir, "a-file")
	writeFile(t, file, "")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	sample := fixtureRun("sample") // run 20261129-220000-sample
	corrupt := filepath.Join(dir, "corrupt")
	writeFile(t, filepath.Join(corrupt, "namespace-labels.json"), "{not json")
	recordOnly := filepath.Join(dir, "record-only") // what the e2e test's run of mesh.Switcher leaves: the record alone
	writeFile(t, filepath.Join(recordOnly, "namespace-labels.json"), `{"schemaVersion": "meshbench.dev/namespace-labels/v1", "namespaces": []}`)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"run ID with a path", []string{"--run", "../x"}, []string{`--run: "../x" is not a run ID`}},
		{"run ID upper case", []string{"--run", "Quickstart_1"}, []string{`--run: "Quickstart_1" is not a run ID`}},
		{"run ID too long", []string{"--run", strings.Repeat("a", 64)}, []string{"is not a run ID"}},
		{"run dir missing", []string{"--run", "quickstart-20261201-101500-3fa2", "--run-dir", filepath.Join(dir, "runs", "quickstart-2026")},
			[]string{"--run-dir " + filepath.Join(dir, "runs", "quickstart-2026") + ": not a directory"}},
		{"run dir is a file", []string{"--run", "x-1", "--run-dir", file}, []string{"--run-dir " + file + ": not a directory"}},
		{"run dir without run.json or record", []string{"--run", "x-1", "--run-dir", empty}, []string{"--run-dir " + empty + ": holds neither run.json nor namespace-labels.json"}},
		{"run dir with a corrupt record", []string{"--run", "x-1", "--run-dir", corrupt}, []string{"--run-dir " + corrupt + ": decode namespace label record"}},
		{"run dir of another run", []string{"--run", "x-1", "--run-dir", sample}, []string{"--run-dir " + sample + " holds run ", "not --run x-1"}},
		{"output dir missing", []string{"--all", "--output-dir", filepath.Join(dir, "nowhere")}, []string{"--output-dir " + filepath.Join(dir, "nowhere") + ": not a directory"}},
		{"every problem at once", []string{"--run", "A", "--all", "--timeout", "0", "--run-dir", empty},
			[]string{"exactly one of --run ID or --all", "--timeout 0s", `--run: "A"`, "--run-dir " + empty}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(t, append(append([]string{"cleanup"}, tc.args...), "--kubeconfig", kc)...)
			if code != exitBadInput {
				t.Errorf("exit %d, want %d\n%s", code, exitBadInput, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "127.0.0.1:1") || strings.Contains(stderr, "nothing was changed") {
				t.Errorf("cleanup connected before its flags were checked:\n%s", stderr)
			}
		})
	}
	// The run's own directory, and a directory holding its label record alone, pass the checks: cleanup goes on to
	// connect (and fails there, exit 2 too).
	for _, args := range [][]string{{"--run", "20261129-220000-sample", "--run-dir", sample}, {"--run", "x-1", "--run-dir", recordOnly}} {
		code, _, stderr := run(t, append(append([]string{"cleanup"}, args...), "--kubeconfig", kc)...)
		if strings.Contains(stderr, "--run-dir") || !strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("%v refused before connecting (exit %d):\n%s", args, code, stderr)
		}
	}
}

// TestRunResumeRefusesCNIRun: run --resume of a cni run directory is refused before anything connects, pointing at
// cni --resume, as cni --resume refuses a mesh run's directory.
func TestRunResumeRefusesCNIRun(t *testing.T) {
	t.Parallel()
	kc := unreachableKubeconfig(t, t.TempDir())
	code, _, stderr := run(t, "run", "--resume", fixtureRun("cni-local"), "--kubeconfig", kc, "--skip-image-check")
	if code != exitBadInput || !strings.Contains(stderr, `holds a "cni" run, not a mesh run: continue it with meshbench cni --resume`) {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	code, _, stderr = run(t, "cni", "--resume", fixtureRun("sample"), "--kubeconfig", kc, "--skip-image-check")
	if code != exitBadInput || !strings.Contains(stderr, "not a cni run: continue it with meshbench run --resume") {
		t.Errorf("cni --resume of a mesh run: exit %d:\n%s", code, stderr)
	}
}
