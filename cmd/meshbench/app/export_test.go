package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// export writes the runs' OpenMetrics to --to (whole, then renamed) or standard output; a bad format or a run given
// twice is bad input (exit 2) and writes nothing.
func TestExport(t *testing.T) {
	t.Parallel()
	to := filepath.Join(t.TempDir(), "runs.om")
	code, _, errOut := run(t, "export", fixtureRun("aa-1"), fixtureRun("aa-2"), "--to", to)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(to)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasSuffix(text, "# EOF\n") || !strings.Contains(text, `run_id="20261130-030000-aa1"`) || !strings.Contains(text, `run_id="20261201-030000-aa2"`) {
		t.Errorf("export lacks a run or the end:\n%s", text[:min(len(text), 600)])
	}
	code, out, _ := run(t, "export", fixtureRun("aa-1"))
	if code != 0 || !strings.Contains(out, "# TYPE meshbench_resource_mean gauge") {
		t.Errorf("stdout export: exit %d\n%s", code, out[:min(len(out), 300)])
	}
	for _, args := range [][]string{
		{"export", fixtureRun("aa-1"), "--format", "csv"},
		{"export", fixtureRun("aa-1"), fixtureRun("aa-1")},
	} {
		if code, out, errOut := run(t, args...); code != exitBadInput || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %s; want %d and nothing written", args, code, out, errOut, exitBadInput)
		}
	}
}
