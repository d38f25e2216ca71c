package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
