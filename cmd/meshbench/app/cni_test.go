package app

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestCNIBadInputExits2 : a bad config exits 2 before any cluster is contacted (the kubeconfig points nowhere, so
// any contact would fail differently) and nothing is written.
func TestCNIBadInputExits2(t *testing.T) {
	t.Parallel()
	head := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: cni-bad\nspec:\n"
	tests := []struct {
		name, body string
		args       []string
		want       string
	}{
		{"no cni section", "  workload: {app: fortio-chain}\n", nil, "no spec.cni section"},
		{"udp without bitrate", "  cni:\n    tests: [udp]\n", nil, "udpBitrate"},
		{"unknown path and one node twice", "  cni:\n    paths: [same-node, moon]\n    placement: {clientNode: a, serverNode: a}\n", nil, "moon"},
		{"unknown field", "  cni:\n    tests: [tcp]\n    sampels: 3\n", nil, "sampels"},
		{"bad output format", "  cni:\n    tests: [tcp]\n", []string{"-o", "xml"}, "--output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(f, []byte(head+tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "runs")
			args := append([]string{"cni", "-f", f, "--output-dir", out, "--kubeconfig", filepath.Join(dir, "nope")}, tt.args...)
			code, stdout, stderr := run(t, args...)
			if code != exitBadInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("code %d, stderr %q, stdout %q; want exit 2 mentioning %q", code, stderr, stdout, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run directory created for bad input: %v", err)
			}
		})
	}
	if code, _, stderr := run(t, "cni"); code != exitBadInput || !strings.Contains(stderr, "file") {
		t.Errorf("cni without -f: code %d, %q", code, stderr)
	}
}

// recordRunDir writes the run directory a `meshbench <command> -f scn` run starts (run.json with the scenario as loaded,
// the logs) and one recorded case, and returns the directory.
func recordRunDir(t *testing.T, command, scn string) string {
	t.Helper()
	s, err := loadScenario(scn, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "runs", "cni-20261203-101500-3fa2")
	st, err := results.Create(dir, results.RunMeta{RunID: "cni-20261203-101500-3fa2", Command: command, Scenario: raw})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendCase(results.CaseResult{CaseID: "same-node/tcp", Status: results.StatusOK, Facts: map[results.FactKey]string{"node-a": "node1"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// dirBytes is every file of a run directory with its bytes.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCNIResume: --resume takes the recorded scenario; -f and --image-registry may repeat the recorded run, and a
// scenario or flag that would change its plan is refused with exit 2, naming the flag, what differs and the fix,
// before any cluster is contacted (the kubeconfig's API server refuses connections: a resume that passes the checks
// stops there, "nothing was changed"). The run directory is left byte for byte as it was.
func TestCNIResume(t *testing.T) {
	t.Parallel()
	dir, scn, kc := scenarioFixture(t)
	more := scenarioVariant(t, dir, "more.yaml", "cni: {tests: [tcp], paths: [same-node]}", "cni: {tests: [tcp], paths: [same-node, host], samples: 5}")
	renamed := scenarioVariant(t, dir, "renamed.yaml", "metadata: {name: flags}", "metadata: {name: other}")
	runResumeCases(t, "cni", scn, kc, []resumeCase{
		{name: "recorded scenario", command: "cni", want: []string{"nothing was changed"}},
		{name: "same file", command: "cni", args: []string{"-f", scn}, want: []string{"nothing was changed"}},
		{name: "file differing outside the plan", command: "cni", args: []string{"-f", renamed}, want: []string{"nothing was changed"}},
		{name: "same output dir", command: "cni", args: []string{"--output-dir", "PARENT"}, want: []string{"nothing was changed"}},
		{name: "file changes the plan", command: "cni", args: []string{"-f", more}, refused: true, want: []string{
			"--resume RUN_DIR with -f " + more, "would change the recorded run's plan",
			"spec.cni.paths: recorded [\"same-node\"], given [\"same-node\",\"host\"]", "spec.cni.samples: recorded 3, given 5",
			"drop -f (and --image-registry) to resume with the recorded scenario, or start a new run without --resume"}},
		{name: "image registry changes the images", command: "cni", args: []string{"-f", scn, "--image-registry", "registry.example/mb"}, refused: true,
			want: []string{"spec.images.agent: recorded", `given "registry.example/mb/meshbench-agent:`}},
		{name: "image registry without the file", command: "cni", args: []string{"--image-registry", "registry.example/mb"}, refused: true,
			want: []string{"--image-registry with --resume RUN_DIR", "drop --image-registry"}},
		{name: "another output dir", command: "cni", args: []string{"--output-dir", filepath.Join(dir, "elsewhere")}, refused: true,
			want: []string{"--output-dir " + filepath.Join(dir, "elsewhere") + " with --resume RUN_DIR", "drop --output-dir"}},
		{name: "a mesh run", command: "run", refused: true, want: []string{`the directory holds a "run" run, not a cni run: continue it with meshbench run --resume RUN_DIR`}},
	})
	if code, _, stderr := run(t, "cni", "--resume", filepath.Join(dir, "nope"), "--kubeconfig", kc); code != exitBadInput || !strings.Contains(stderr, "--resume "+filepath.Join(dir, "nope")) {
		t.Errorf("missing run directory: exit %d, %q", code, stderr)
	}
}

// resumeCase is one `<verb> --resume RUN_DIR ...` of runResumeCases.
type resumeCase struct {
	name    string
	command string // recorded run.json command
	args    []string
	want    []string // in stderr
	refused bool     // by the resume check (else it gets to the cluster)
}

// runResumeCases runs `verb --resume RUN_DIR` with each case's flags against a fresh run directory recording scn
// (the kubeconfig kc's API server refuses connections: a resume that passes the checks stops there, "nothing was
// changed"): exit 2, the wanted messages, refused by the resume check or not, the directory byte for byte as it was.
func runResumeCases(t *testing.T, verb, scn, kc string, tests []resumeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runDir := recordRunDir(t, tt.command, scn)
			before := dirBytes(t, runDir)
			args := []string{verb, "--resume", runDir, "--kubeconfig", kc, "--skip-image-check"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "PARENT", filepath.Dir(runDir)))
			}
			code, _, stderr := run(t, args...)
			stderr = strings.ReplaceAll(stderr, runDir, "RUN_DIR")
			if code != exitBadInput {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if got := strings.Contains(stderr, "nothing was changed"); got == tt.refused {
				t.Errorf("refused by the resume check: %v, want %v:\n%s", !got, tt.refused, stderr)
			}
			if after := dirBytes(t, runDir); !maps.Equal(before, after) {
				t.Errorf("the run directory changed")
			}
		})
	}
}
