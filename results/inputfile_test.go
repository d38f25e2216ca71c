package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// TestReadRefusesHostileFiles: each file of a run directory follows inputfile's rule in Read and Resume: a FIFO
// (the test would hang reading it), a directory, a link to /dev/zero and a sparse file above the kind's cap are an
// *inputfile.Error naming the file and the cap, never read.
func TestReadRefusesHostileFiles(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name string
		kind inputfile.Kind
	}{{RunFile, inputfile.RunMeta}, {SamplesFile, inputfile.Samples}, {CasesFile, inputfile.Cases}, {SummaryFile, inputfile.Summary}} {
		for _, hostile := range []string{"fifo", "directory", "/dev/zero", "over the cap"} {
			t.Run(f.name+"/"+hostile, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				s := mustCreate(t, dir)
				mustAppend(t, s, "c1", StatusOK, 2)
				if err := s.WriteSummary(Summary{RunID: "run-1"}); err != nil {
					t.Fatal(err)
				}
				_ = s.Close()
				path := filepath.Join(dir, f.name)
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				var err error
				switch hostile {
				case "fifo":
					err = syscall.Mkfifo(path, 0o644)
				case "directory":
					err = os.Mkdir(path, 0o755)
				case "/dev/zero":
					err = os.Symlink("/dev/zero", path)
				case "over the cap":
					if err = os.WriteFile(path, nil, 0o644); err == nil {
						err = os.Truncate(path, f.kind.Max()+1)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				_, rerr := Read(dir)
				_, _, serr := Resume(dir)
				for op, err := range map[string]error{"Read": rerr, "Resume": serr} {
					var fe *inputfile.Error
					if !errors.As(err, &fe) || fe.Kind != f.kind || !strings.Contains(err.Error(), path) ||
						!strings.Contains(err.Error(), inputfile.Bytes(f.kind.Max())) {
						t.Errorf("%s: %v; want an *inputfile.Error of %s naming %s and its cap", op, err, f.kind, path)
					}
				}
			})
		}
	}
}

// TestReadRefusesOverlongLines: a line of samples.jsonl or cases.jsonl above its line cap is refused naming
// file:line, having read at most one buffer past the cap (a line of /dev/zero's bytes would never end).
func TestReadRefusesOverlongLines(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name string
		kind inputfile.Kind
	}{{SamplesFile, inputfile.Samples}, {CasesFile, inputfile.Cases}} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := mustCreate(t, dir)
			mustAppend(t, s, "c1", StatusOK, 2)
			_ = s.Close()
			appendRaw(t, dir, f.name, `{"caseID":"`+strings.Repeat("x", int(f.kind.MaxLine()))+`"}`+"\n")
			_, err := Read(dir)
			var fe *inputfile.Error
			path := filepath.Join(dir, f.name)
			if !errors.As(err, &fe) || fe.Reason != inputfile.LineTooLong || fe.Kind != f.kind || fe.Line < 2 ||
				!strings.Contains(err.Error(), path+":") || !strings.Contains(err.Error(), inputfile.Bytes(f.kind.MaxLine())) {
				t.Errorf("got %v; want a line-too-long *inputfile.Error naming %s and the line cap", err, path)
			}
		})
	}
}

// TestInputKindsNameTheFiles: inputfile cannot import results, so its kinds spell the file names again; they must
// stay the same.
func TestInputKindsNameTheFiles(t *testing.T) {
	t.Parallel()
	for k, name := range map[inputfile.Kind]string{inputfile.RunMeta: RunFile, inputfile.Summary: SummaryFile,
		inputfile.Samples: SamplesFile, inputfile.Cases: CasesFile} {
		if k.String() != name {
			t.Errorf("inputfile kind %q, results file %q", k, name)
		}
	}
}
