package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/results"
)

func TestLatestRun(t *testing.T) {
	t.Parallel()
	got, err := LatestRun(fixturesDir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(got) != "regression" { // started 2026-12-02, the latest fixture
		t.Errorf("LatestRun = %s, want regression", got)
	}
	got, err = LatestRun(fixturesDir, filepath.Join(fixturesDir, "regression"))
	if err != nil || filepath.Base(got) != "aa-2" {
		t.Errorf("LatestRun excluding regression = %s, %v; want aa-2", got, err)
	}
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, "not-a-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LatestRun(empty); err == nil || !strings.Contains(err.Error(), "no run directory") {
		t.Errorf("empty parent: %v", err)
	}
	if _, err := LatestRun(filepath.Join(empty, "missing")); err == nil {
		t.Error("missing parent: want an error")
	}
}

// TestLatestRunRefusesHostileRunJSON: a run.json among the runs that is a FIFO (the test would hang reading it) or
// a link to /dev/zero is refused naming it and the cap, never read.
func TestLatestRunRefusesHostileRunJSON(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(string) error{
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"/dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			run := filepath.Join(parent, "r1")
			if err := os.Mkdir(run, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(run, results.RunFile)
			if err := mk(path); err != nil {
				t.Fatal(err)
			}
			_, err := LatestRun(parent)
			var fe *inputfile.Error
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "64 MiB") {
				t.Errorf("got %v; want an *inputfile.Error naming %s and the cap", err, path)
			}
		})
	}
}

// TestReportOfAClockRunBackwards: a run.json whose end is before its start said "took -2562047h"; the report now
// says the duration is unknown and shows Read's warning.
func TestReportOfAClockRunBackwards(t *testing.T) {
	t.Parallel()
	run, err := results.Read(filepath.Join("..", "results", "testdata", "invalid-clock"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(Build(run).Markdown())
	if !strings.Contains(md, "(took: unknown, see the warnings)") || strings.Contains(md, "took -") ||
		!strings.Contains(md, "run.json: the run ends (0001-01-01T00:00:00Z) before it starts") {
		t.Errorf("report:\n%s", md)
	}
}
