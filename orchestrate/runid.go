package orchestrate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshbench/meshbench/results"
)

// runIDAttempts is how many IDs CreateRun tries when the directory of one exists (two runs in the same second with
// the same random suffix): 4 hex digits make a collision 1 in 65536, three in a row practically impossible.
const runIDAttempts = 3

// newRunID is <prefix>-<UTC start as YYYYMMDD-HHMMSS>-<4 hex digits from rnd>. The random suffix keeps runs started in
// the same second apart (the scheduled CronJob and a manual run, or a script starting several). The ID is also a label
// value and, for cni, part of a namespace name: with a prefix of at most 40 characters it stays within 63.
func newRunID(prefix string, start time.Time, rnd io.Reader) (string, error) {
	b := make([]byte, 2)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", fmt.Errorf("run id: random suffix: %w", err)
	}
	return prefix + "-" + start.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b), nil
}

// CheckRunID refuses a text that cannot be a run ID before it selects anything: newRunID's IDs are DNS labels
// (lower-case letters, digits and '-', starting and ending alphanumeric, at most 63 characters), as the run label's
// value and a cni run's namespace name need.
func CheckRunID(id string) error {
	if len(validation.IsDNS1123Label(id)) > 0 {
		return fmt.Errorf("%q is not a run ID: run IDs are lower-case letters, digits and '-', at most 63, such as \"quickstart-20261201-101500-3fa2\" "+
			"(the run directory's name, and the meshbench.dev/run label of what the run created)", id)
	}
	return nil
}

// CreateRun creates a new run directory <outputDir>/<run ID> exclusively (a directory that exists is never reused:
// it belongs to another run) and writes run.json with meta, whose RunID it sets from prefix and meta.Start. An output
// directory that cannot be created or written is an *InputError.
func CreateRun(outputDir, prefix string, meta results.RunMeta) (*results.Store, results.RunMeta, error) {
	return createRun(outputDir, prefix, meta, rand.Reader)
}

func createRun(outputDir, prefix string, meta results.RunMeta, rnd io.Reader) (*results.Store, results.RunMeta, error) {
	if err := os.MkdirAll(outputDir, 0o755); err != nil {
		return nil, meta, outputDirError(outputDir, err, outputDirFix)
	}
	for range runIDAttempts {
		id, err := newRunID(prefix, meta.Start, rnd)
		if err != nil {
			return nil, meta, err
		}
		dir := filepath.Join(outputDir, id)
		err = os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue // another run took this ID in the same second: draw another suffix
		}
		if err != nil {
			return nil, meta, outputDirError(outputDir, err, outputDirFix)
		}
		meta.RunID = id
		store, err := results.Create(dir, meta)
		if err != nil {
			_ = os.Remove(dir) // empty unless Create wrote something, and then Remove fails and keeps it
			return nil, meta, err
		}
		return store, meta, nil
	}
	return nil, meta, fmt.Errorf("create run directory in %s: %d run IDs starting %s-%s were taken by other runs; start the run again",
		outputDir, runIDAttempts, prefix, meta.Start.UTC().Format("20060102-150405"))
}

// outputDirFix is what to change about a run's output directory.
const outputDirFix = "choose another spec.output.dir or --output-dir"

// CheckOutputDir reports, without creating anything, whether a run directory can be created under dir: the nearest
// existing ancestor must be a directory this process may write. Problems are an *InputError.
func CheckOutputDir(dir string) error {
	return CheckWritableDir(dir, outputDirFix)
}

// CheckWritableDir is CheckOutputDir for any directory meshbench writes into (report files, a run directory), with
// the fix the caller's user can apply in the message (which flag or field to change).
func CheckWritableDir(dir, fix string) error {
	if dir == "" {
		return inputError(fmt.Errorf("output directory is empty: %s", fix))
	}
	p := filepath.Clean(dir)
	for {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return inputError(fmt.Errorf("output directory %s: %s is not a directory; %s", dir, p, fix))
		case err == nil:
			// A probe file, removed at once: permission bits alone do not tell (root, ACLs, read-only mounts).
			f, err := os.CreateTemp(p, ".meshbench-write-check-*")
			if err != nil {
				return inputError(fmt.Errorf("output directory %s: %s is not writable (%w); %s", dir, p, err, fix))
			}
			_ = f.Close()
			_ = os.Remove(f.Name())
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return outputDirError(dir, err, fix)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

func outputDirError(dir string, err error, fix string) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrExist) {
		return inputError(fmt.Errorf("output directory %s cannot be created or written: %w; %s", dir, err, fix))
	}
	return fmt.Errorf("output directory %s: %w", dir, err)
}
