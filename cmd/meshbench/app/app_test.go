package app

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.HasPrefix(out, "meshbench ") || !strings.Contains(out, "go1.") {
			t.Errorf("%v: code %d, out %q", args, code, out)
		}
	}
	code, out, _ := run(t, "version", "-o", "json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["goVersion"] == "" || v["version"] == "" || v["commit"] == "" {
		t.Errorf("version -o json: code %d, out %q", code, out)
	}
}

// TestHelpEverywhere: every verb answers --help with exit 0 and a usage line (the `[ --version` trap of studies.md §D
// is about tools that treat help/version flags as arguments).
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	root.InitDefaultCompletionCmd() // cobra adds it lazily at Execute
	var paths [][]string
	var visit func(c *cobra.Command, prefix []string)
	visit = func(c *cobra.Command, prefix []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string{}, prefix...), sub.Name())
			paths = append(paths, p)
			visit(sub, p)
		}
	}
	visit(root, nil)
	if len(paths) < 3 {
		t.Fatalf("too few commands: %v", paths)
	}
	for _, p := range paths {
		code, out, errOut := run(t, append(p, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v --help: code %d, stdout %q, stderr %q", p, code, out, errOut)
		}
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"invalid config lists every problem", []string{"plan", "-f", "../../../testdata/invalid-values.yaml"}, exitBadInput, "spec.load.qps[1]: must be > 0 or \"max\""},
		{"unknown fields", []string{"plan", "-f", "../../../testdata/invalid-unknown-fields.yaml"}, exitBadInput, "spec.load.qpss: unknown field"},
		{"missing file", []string{"plan", "-f", "does-not-exist.yaml"}, exitBadInput, "read scenario"},
		{"bad output format", []string{"plan", "-f", "../../../examples/quickstart.yaml", "-o", "xml"}, exitBadInput, "--output"},
		{"unknown flag", []string{"plan", "--frobnicate"}, exitBadInput, "unknown flag"},
		{"missing required flag", []string{"plan"}, exitBadInput, "required flag"},
		{"unknown command", []string{"frobnicate"}, exitBadInput, "unknown command"},
		{"extra argument", []string{"version", "x"}, exitBadInput, "unknown command"},
		{"valid plan", []string{"plan", "-f", "../../../examples/study-a-multi.yaml"}, exitOK, ""},
		{"negative and inverted resources", []string{"plan", "-f", "../../../testdata/invalid-resources.yaml"}, exitBadInput,
			"spec.workload.resources.memoryRequest: is 512Mi, above memoryLimit 256Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := run(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("code %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.want)
			}
		})
	}
}

func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"table", "json", "yaml"} {
		_, a, _ := run(t, "plan", "-f", "../../../examples/study-a-multi.yaml", "-o", format)
		_, b, _ := run(t, "plan", "-f", "../../../examples/study-a-multi.yaml", "-o", format)
		if a == "" || a != b {
			t.Errorf("-o %s: output empty or not byte-identical", format)
		}
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, _ := run(t, "completion", sh)
		if code != 0 || len(out) < 100 {
			t.Errorf("completion %s: code %d, %d bytes", sh, code, len(out))
		}
	}
	// An unknown shell is bad input (it printed the help and exited 0); no shell prints the help.
	for _, args := range [][]string{{"completion", "bogus-shell"}, {"completion", "bash", "extra"}, {"completion", "BASH"}} {
		code, out, errOut := run(t, args...)
		if code != exitBadInput || !strings.Contains(errOut, "unknown command") || strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, want %d\nstdout %.200q\nstderr %q", args, code, exitBadInput, out, errOut)
		}
	}
	if code, out, _ := run(t, "completion"); code != exitOK || !strings.Contains(out, "Usage:") {
		t.Errorf("completion without a shell: exit %d, %.200q", code, out)
	}
}

// TestPlanRefusesRequestAboveCatalogLimit: a request the scenario sets above the limit the catalog gives a container
// (or a limit below its catalog request) is refused by plan (and so by run, before the namespaces exist), naming the
// field, the containers and the field to set too.
func TestPlanRefusesRequestAboveCatalogLimit(t *testing.T) {
	t.Parallel()
	scn := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, scn, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: r}\nspec:\n  workload:\n    app: bank-of-anthos\n"+
		"    resources: {memoryRequest: 300Mi}\n")
	code, _, errOut := run(t, "plan", "-f", scn)
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d\n%s", code, exitBadInput, errOut)
	}
	for _, want := range []string{"spec.workload.resources.memoryRequest: is 300Mi, above the memory limit", "frontend (128Mi)", "set memoryLimit too"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
