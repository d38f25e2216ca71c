// Package goldenfile is the one golden-file helper the test packages share: compare output with a file under
// testdata/, or rewrite the file when the test binary runs with -update (then review the diff before committing).
package goldenfile

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update is registered once per test binary that imports this package (the usual golden-test flag).
var update = flag.Bool("update", false, "rewrite golden files under testdata/ instead of comparing")

// Update reports whether -update was given.
func Update() bool { return *update }

// Check compares got with the file at path; with -update it writes got there first (creating directories).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file %s (run the test with -update to create it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run the test with -update, then review the diff):\n%s", path, firstDiff(want, got))
	}
}

// firstDiff describes the first line where want and got differ.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(no line differs: trailing bytes)"
}
