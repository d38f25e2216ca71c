package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fixtureRun(name string) string { return filepath.Join("..", "..", "..", "testdata", "runs", name) }

// copyRun copies the files of fixture run name into a temporary directory, each through edit (nil: as they are).
func copyRun(t *testing.T, name string, edit func(file string, data []byte) []byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, file := range []string{"run.json", "samples.jsonl", "cases.jsonl", "summary.json"} {
		data, err := os.ReadFile(filepath.Join(fixtureRun(name), file))
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			data = edit(file, data)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCompareRegressionGateExits3(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "compare", fixtureRun("aa-1"), fixtureRun("regression"), "--fail-if", "cpu.sidecar > +10%")
	if code != exitGateFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitGateFailed, out, errOut)
	}
	if !strings.Contains(errOut, "cpu.sidecar > +10%") || !strings.Contains(errOut, "cpu avg of sidecar") {
		t.Errorf("stderr does not name the gate and metric:\n%s", errOut)
	}
	if !strings.Contains(out, "FAIL") {
		t.Errorf("stdout lacks the gate outcome:\n%s", out)
	}
}

func TestCompareAAPasses(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, "compare", fixtureRun("aa-1"), fixtureRun("aa-2"), "--fail-if", "cpu.sidecar > +10%",
		"--fail-if", "latency.p99.ambient > +1ms", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Comparison struct {
			Rows []struct {
				Verdict string `json:"verdict"`
			} `json:"rows"`
		} `json:"comparison"`
		Gates []struct {
			Gate    string `json:"gate"`
			Matched int    `json:"matched"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(doc.Comparison.Rows) == 0 || len(doc.Gates) != 2 || doc.Gates[0].Matched == 0 {
		t.Fatalf("unexpected document: %+v", doc)
	}
	for _, r := range doc.Comparison.Rows {
		if r.Verdict != "not significant" {
			t.Errorf("A/A verdict %q", r.Verdict)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"compare", fixtureRun("aa-1"), fixtureRun("aa-2"), "--fail-if", "cpu.sidecar >> 10%"},
		{"compare", fixtureRun("aa-1"), fixtureRun("aa-2"), "--fail-if", "cpu.sidecr > +10%"},
		{"compare", fixtureRun("aa-1"), fixtureRun("missing")},
		{"compare", fixtureRun("aa-1"), fixtureRun("aa-2"), "--confidence", "95"},
	} {
		code, _, errOut := run(t, args...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s", args[1:], code, exitBadInput, errOut)
		}
	}
}

func TestCompareLatest(t *testing.T) {
	t.Parallel()
	// The latest run under testdata/runs is the regression fixture.
	code, out, _ := run(t, "compare", fixtureRun("aa-1"), filepath.Join("..", "..", "..", "testdata", "runs"), "--latest",
		"--fail-if", "cpu.sidecar > +10%")
	if code != exitGateFailed || !strings.Contains(out, "20261202-030000-reg") {
		t.Errorf("exit %d, out:\n%s", code, out)
	}
}

// TestCompareRefusesMeaninglessPairs: a run with itself, a copy of itself, or a mesh run with a cni run exits 2 with
// the reason (it used to exit 0 without a word, every gate passing).
func TestCompareRefusesMeaninglessPairs(t *testing.T) {
	t.Parallel()
	copyDir := copyRun(t, "aa-1", nil)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"itself", []string{fixtureRun("aa-1"), fixtureRun("aa-1"), "--fail-if", "cpu.sidecar > +10%"}, "a run compared with itself"},
		{"a copy of itself", []string{fixtureRun("aa-1"), copyDir}, "both hold run 20261130-030000-aa1"},
		{"mesh with cni", []string{fixtureRun("aa-1"), fixtureRun("cni-local")}, "runs of different kinds"},
	} {
		code, out, errOut := run(t, append([]string{"compare"}, tc.args...)...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%s: exit %d, want 2 and %q\nstdout %q\nstderr %s", tc.name, code, tc.want, out, errOut)
		}
	}
}
