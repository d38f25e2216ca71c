package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// File names inside a run directory.
const (
	RunFile     = "run.json"
	SamplesFile = "samples.jsonl"
	CasesFile   = "cases.jsonl"
	SummaryFile = "summary.json"
)

// SchemaMajor is the schema major version this package reads and writes (the "1" of SchemaVersion).
const SchemaMajor = 1

const schemaPrefix = "meshbench.dev/results/v"

// tempPattern names the temporary files of atomic writes; Resume removes leftovers of a crash.
const tempPattern = ".tmp-*"

// Store appends the results of one run to its directory; it is the only writer of a run directory at a time and safe
// for concurrent use. A case is one durable unit: its samples are written and fsynced before its case line, the commit
// record readers go by.
type Store struct {
	dir string

	mu       sync.Mutex
	meta     RunMeta
	samples  *os.File
	cases    *os.File
	sizes    map[*os.File]int64 // bytes known to be valid, to roll back a failed write
	attempts map[string]int     // case ID -> highest attempt number used so far
	err      error              // sticky: the files may be inconsistent, Resume to continue
	closed   bool
}

// Create starts a new run in dir: it creates dir (and parents) if needed, fails (wrapping fs.ErrExist) if dir already
// holds run.json, samples.jsonl or cases.jsonl, writes run.json atomically with meta.SchemaVersion set to
// SchemaVersion, and creates empty samples.jsonl and cases.jsonl.
func Create(dir string, meta RunMeta) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	for _, name := range []string{RunFile, SamplesFile, CasesFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return nil, fmt.Errorf("create run in %s: %s: %w (resume the run to continue it)", dir, name, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("create run in %s: %w", dir, err)
		}
	}
	meta.SchemaVersion = SchemaVersion
	// run.json first: after a crash before the logs exist, Resume creates them.
	if err := writeJSONAtomic(dir, RunFile, meta); err != nil {
		return nil, fmt.Errorf("create run in %s: %w", dir, err)
	}
	s := &Store{dir: dir, meta: meta, sizes: map[*os.File]int64{}, attempts: map[string]int{}}
	var err error
	if s.samples, err = openLog(dir, SamplesFile, os.O_EXCL); err != nil {
		return nil, fmt.Errorf("create run in %s: %w", dir, err)
	}
	if s.cases, err = openLog(dir, CasesFile, os.O_EXCL); err != nil {
		_ = s.samples.Close()
		return nil, fmt.Errorf("create run in %s: %w", dir, err)
	}
	s.sizes[s.samples], s.sizes[s.cases] = 0, 0
	return s, nil
}

// Resume opens an existing run for appending and returns what it holds (as Read). Before anything is appended it
// repairs what a crash leaves (a torn last line cut back, temporary files of atomic writes removed), each repair in
// Run.Warnings; a re-run case gets a new Attempt, so an interrupted attempt's samples are never taken for its own.
func Resume(dir string) (*Store, *Run, error) {
	rr, err := readRun(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("resume run: %w", err)
	}
	run := rr.run
	if leftovers, _ := filepath.Glob(filepath.Join(dir, tempPattern)); len(leftovers) > 0 {
		for _, p := range leftovers {
			if err := os.Remove(p); err != nil {
				return nil, nil, fmt.Errorf("resume run: remove leftover temporary file: %w", err)
			}
			run.Warnings = append(run.Warnings, ReadWarning{Kind: WarnTempFileRemoved, File: p,
				Message: fmt.Sprintf("removed leftover temporary file %s", p)})
		}
	}
	for _, l := range []struct {
		name string
		info logInfo
	}{{SamplesFile, rr.samples}, {CasesFile, rr.cases}} {
		w, repaired, err := repairLog(filepath.Join(dir, l.name), l.info)
		if err != nil {
			return nil, nil, fmt.Errorf("resume run: %w", err)
		}
		if repaired {
			run.Warnings = append(run.Warnings, w)
		}
	}
	s := &Store{dir: dir, meta: run.Meta, sizes: map[*os.File]int64{}, attempts: rr.attempts}
	if s.samples, err = openLog(dir, SamplesFile, 0); err != nil {
		return nil, nil, fmt.Errorf("resume run: %w", err)
	}
	if s.cases, err = openLog(dir, CasesFile, 0); err != nil {
		_ = s.samples.Close()
		return nil, nil, fmt.Errorf("resume run: %w", err)
	}
	for _, f := range []*os.File{s.samples, s.cases} {
		st, err := f.Stat()
		if err != nil {
			_ = s.samples.Close()
			_ = s.cases.Close()
			return nil, nil, fmt.Errorf("resume run: %w", err)
		}
		s.sizes[f] = st.Size()
	}
	return s, run, nil
}

// Dir is the run directory.
func (s *Store) Dir() string { return s.dir }

// UpdateMeta rewrites run.json atomically (e.g. to record the end time or late cluster facts). SchemaVersion is set.
func (s *Store) UpdateMeta(meta RunMeta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("update run metadata: store is closed")
	}
	meta.SchemaVersion = SchemaVersion
	if err := writeJSONAtomic(s.dir, RunFile, meta); err != nil {
		return fmt.Errorf("update run metadata: %w", err)
	}
	s.meta = meta
	return nil
}

// AppendCase durably records one finished case: samples to samples.jsonl, fsync, then res to cases.jsonl, fsync. It
// fills empty RunID and CaseID fields, sets Attempt (on copies), and refuses samples of another run or case and an
// unknown status. A failed write is rolled back to the last complete line, or else the store refuses further appends.
func (s *Store) AppendCase(res CaseResult, samples []Sample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return fmt.Errorf("append case %q: %w", res.CaseID, err)
	}
	if res.CaseID == "" {
		return errors.New("append case: empty case ID")
	}
	switch res.Status {
	case StatusOK, StatusFailed, StatusSkipped:
	default:
		return fmt.Errorf("append case %q: unknown status %q", res.CaseID, res.Status)
	}
	if res.RunID == "" {
		res.RunID = s.meta.RunID
	}
	// Reserve the attempt number first: even if only the samples make it to disk, the next attempt must differ.
	s.attempts[res.CaseID]++
	res.Attempt = s.attempts[res.CaseID]

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, smp := range samples {
		if smp.RunID == "" {
			smp.RunID = res.RunID
		}
		if smp.CaseID == "" {
			smp.CaseID = res.CaseID
		}
		if smp.RunID != res.RunID || smp.CaseID != res.CaseID {
			return fmt.Errorf("append case %q: sample %d belongs to run %q case %q", res.CaseID, i, smp.RunID, smp.CaseID)
		}
		smp.Attempt = res.Attempt
		if err := enc.Encode(smp); err != nil {
			return fmt.Errorf("append case %q: encode sample %d (%s %s %s): %w", res.CaseID, i, smp.Component, smp.Metric, smp.Stat, err)
		}
	}
	if buf.Len() > 0 {
		if err := s.appendDurable(s.samples, buf.Bytes()); err != nil {
			return fmt.Errorf("append case %q: %s: %w", res.CaseID, SamplesFile, err)
		}
	}
	buf.Reset()
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("append case %q: encode case result: %w", res.CaseID, err)
	}
	if err := s.appendDurable(s.cases, buf.Bytes()); err != nil {
		return fmt.Errorf("append case %q: %s: %w", res.CaseID, CasesFile, err)
	}
	return nil
}

// WriteSummary writes summary.json atomically, with SchemaVersion set.
func (s *Store) WriteSummary(sum Summary) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("write summary: store is closed")
	}
	sum.SchemaVersion = SchemaVersion
	if err := writeJSONAtomic(s.dir, SummaryFile, sum); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// Close closes the store's files. Calling it again is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.samples.Close(), s.cases.Close())
}

func (s *Store) usable() error {
	if s.closed {
		return errors.New("store is closed")
	}
	if s.err != nil {
		return fmt.Errorf("store unusable after an earlier write error (resume the run to continue): %w", s.err)
	}
	return nil
}

// appendDurable writes b at the end of f and fsyncs. On a write error it truncates f back to its last known size so
// the file stays valid JSONL; if that fails too, or fsync fails (the kernel may have dropped the data), the store
// becomes unusable.
func (s *Store) appendDurable(f *os.File, b []byte) error {
	size := s.sizes[f]
	if _, err := f.Write(b); err != nil {
		if terr := f.Truncate(size); terr != nil {
			s.err = errors.Join(err, terr)
		}
		return err
	}
	if err := f.Sync(); err != nil {
		s.err = err
		return err
	}
	s.sizes[f] = size + int64(len(b))
	return nil
}

// readJSONFile decodes a whole-file JSON document after checking its schemaVersion. The file follows inputfile's
// rule for kind (an *inputfile.Error, wrapping fs.ErrNotExist when it is missing).
func readJSONFile(path string, kind inputfile.Kind, v any) error {
	b, err := inputfile.ReadFile(path, kind)
	if err != nil {
		return err
	}
	var head struct {
		SchemaVersion string `json:"schemaVersion"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkSchema(head.SchemaVersion); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkSchema accepts "meshbench.dev/results/v<major>[suffix]" with major == SchemaMajor; newer minors of the same
// major only add fields, which encoding/json ignores.
func checkSchema(v string) error {
	rest, ok := strings.CutPrefix(v, schemaPrefix)
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if !ok || digits == 0 {
		return fmt.Errorf("schema version %q is not a meshbench results schema (want %s)", v, SchemaVersion)
	}
	major, err := strconv.Atoi(rest[:digits])
	if err != nil || major != SchemaMajor {
		return fmt.Errorf("unsupported schema version %q: this meshbench reads major %d (%s)", v, SchemaMajor, SchemaVersion)
	}
	return nil
}

// writeJSONAtomic writes v as indented JSON to dir/name via a temporary file, fsync, rename and fsync of dir.
func writeJSONAtomic(dir, name string, v any) (err error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(dir, strings.Replace(tempPattern, "*", name+".*", 1))
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// openLog opens dir/name for appending, creating it (exclusively with os.O_EXCL) and fsyncing dir when it is new.
func openLog(dir, name string, extra int) (*os.File, error) {
	path := filepath.Join(dir, name)
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|extra, 0o644)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return d.Close()
}
