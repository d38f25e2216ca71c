package orchestrate

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

func TestNewRunIDFormat(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 15, 0, 0, time.FixedZone("CET", 3600))
	id, err := newRunID("quickstart", start, bytes.NewReader([]byte{0x3f, 0xa2}))
	if err != nil {
		t.Fatal(err)
	}
	if id != "quickstart-20261201-091500-3fa2" { // UTC
		t.Errorf("id %q", id)
	}
	if _, err := newRunID("x", start, bytes.NewReader(nil)); err == nil {
		t.Error("no error without randomness")
	}
}

// TestRunIDsInOneSecondDiffer: three runs started in the same second get three IDs and three directories.
func TestRunIDsInOneSecondDiffer(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)
	ids := map[string]bool{}
	for range 3 {
		id, err := newRunID("quickstart", start, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^quickstart-20261201-101500-[0-9a-f]{4}$`).MatchString(id) {
			t.Errorf("id %q", id)
		}
		ids[id] = true
	}
	if len(ids) != 3 {
		t.Errorf("ids collide: %v", ids) // 3 draws of 16 bits: a false failure about once in 20000 runs
	}
	dir := t.TempDir()
	dirs := map[string]bool{}
	for range 3 {
		st, meta, err := CreateRun(dir, "quickstart", results.RunMeta{Command: "run", Start: start})
		if err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
		dirs[st.Dir()] = true
		if filepath.Base(st.Dir()) != meta.RunID {
			t.Errorf("dir %s, run id %s", st.Dir(), meta.RunID)
		}
	}
	if len(dirs) != 3 {
		t.Errorf("run directories: %v", dirs)
	}
}

// TestCreateRunNeverReusesADirectory: a drawn ID whose directory exists is skipped; when every attempt collides the
// error says to start again, never to resume (the directory is another run's).
func TestCreateRunNeverReusesADirectory(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)
	dir := t.TempDir()
	taken := filepath.Join(dir, "q-20261201-101500-0000")
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	// The first draw collides, the second does not.
	st, meta, err := createRun(dir, "q", results.RunMeta{Start: start}, bytes.NewReader([]byte{0, 0, 0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	if meta.RunID != "q-20261201-101500-0001" {
		t.Errorf("run id %s", meta.RunID)
	}
	if entries, _ := os.ReadDir(taken); len(entries) != 0 {
		t.Errorf("the other run's directory was written: %v", entries)
	}
	_, _, err = createRun(dir, "q", results.RunMeta{Start: start}, bytes.NewReader(make([]byte, 2*runIDAttempts)))
	if err == nil || strings.Contains(err.Error(), "resume") || !strings.Contains(err.Error(), "start the run again") {
		t.Errorf("all attempts collide: %v", err)
	}
}

func TestCheckOutputDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
	}{
		{"existing", dir, ""},
		{"to be created", filepath.Join(dir, "a", "b"), ""},
		{"under a file", filepath.Join(file, "runs"), "not a directory"},
		{"a file", file, "is not a directory"},
		{"empty", "", "output directory is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOutputDir(tc.dir)
			var ie *InputError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err %v", err)
			case tc.want != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err %v, want an InputError with %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("CheckOutputDir created something: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("probe left behind: %v", entries)
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckOutputDir(filepath.Join(ro, "runs")); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("read-only parent: %v", err)
		}
	}
}

// TestCheckRunID: every ID newRunID draws passes (the longest prefix a scenario name may be, and cni's), and what is
// not a DNS label is refused before it selects anything.
func TestCheckRunID(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)
	for _, prefix := range []string{"cni", "quickstart", strings.Repeat("a", 40)} {
		id, err := newRunID(prefix, start, bytes.NewReader([]byte{0xff, 0x01}))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckRunID(id); err != nil {
			t.Errorf("generated ID %q refused: %v", id, err)
		}
	}
	for _, bad := range []string{"", "../x", "Run_1", "a b", "x/y", "-x", "x-", strings.Repeat("a", 64), "run\n1", "*"} {
		if err := CheckRunID(bad); err == nil || !strings.Contains(err.Error(), "not a run ID") {
			t.Errorf("CheckRunID(%q) = %v", bad, err)
		}
	}
}
