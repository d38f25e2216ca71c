package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/results"
)

// LatestRun returns the run directory under parent whose run.json started last (ties: the larger name), skipping
// exclude, so scheduled runs find the run that just finished without knowing its ID. A run.json that breaks
// inputfile's rule (a FIFO, a directory, above its cap) is an error, never read.
func LatestRun(parent string, exclude ...string) (string, error) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return "", fmt.Errorf("find the latest run in %s: %w", parent, err)
	}
	skip := map[string]bool{}
	for _, e := range exclude {
		if abs, err := filepath.Abs(e); err == nil {
			skip[abs] = true
		}
	}
	best, bestMeta := "", results.RunMeta{}
	for _, e := range entries { // os.ReadDir sorts by name, so ties resolve deterministically
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if abs, err := filepath.Abs(dir); err == nil && skip[abs] {
			continue
		}
		b, err := inputfile.ReadFile(filepath.Join(dir, results.RunFile), inputfile.RunMeta)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a run directory
		}
		if err != nil {
			return "", fmt.Errorf("find the latest run in %s: %w", parent, err)
		}
		var m results.RunMeta
		if err := json.Unmarshal(b, &m); err != nil {
			continue
		}
		if best == "" || !m.Start.Before(bestMeta.Start) {
			best, bestMeta = dir, m
		}
	}
	if best == "" {
		return "", fmt.Errorf("find the latest run in %s: no run directory (with %s) found", parent, results.RunFile)
	}
	return best, nil
}
