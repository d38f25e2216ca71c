package inputfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostile makes the inputs every kind must refuse: an over-cap sparse file, a FIFO (opening it for reading would
// block until a writer came), a directory and /dev/zero (a device that never ends).
func hostile(t *testing.T, k Kind) map[string]struct {
	path   string
	reason Reason
} {
	t.Helper()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, k.Max()+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		path   string
		reason Reason
	}{
		"over the cap": {big, TooLarge},
		"fifo":         {fifo, NotRegular},
		"directory":    {dir, NotRegular},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		out["/dev/zero"] = struct {
			path   string
			reason Reason
		}{"/dev/zero", NotRegular}
	}
	return out
}

// TestEveryKindRefusesHostileFiles: for every kind, Check, Open and ReadFile refuse an over-cap file, a FIFO (without
// blocking: the test would hang), a directory and /dev/zero with an *Error whose message names the file, the kind, the
// cap and the fix.
func TestEveryKindRefusesHostileFiles(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		for name, in := range hostile(t, k) {
			t.Run(k.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				for op, f := range map[string]func() error{
					"Check":    func() error { _, err := Check(in.path, k); return err },
					"Open":     func() error { f, err := Open(in.path, k); closeIf(f); return err },
					"ReadFile": func() error { _, err := ReadFile(in.path, k); return err },
				} {
					err := f()
					var e *Error
					if !errors.As(err, &e) || e.Reason != in.reason || e.Kind != k {
						t.Fatalf("%s: %v, want an *Error %s of kind %s", op, err, in.reason, k)
					}
					msg := err.Error()
					for _, want := range []string{in.path, k.String(), Bytes(k.Max()), k.Hint()} {
						if !strings.Contains(msg, want) {
							t.Errorf("%s: %q does not name %q", op, msg, want)
						}
					}
				}
			})
		}
	}
}

func closeIf(f *File) {
	if f != nil {
		_ = f.Close()
	}
}

func TestReadFileWithinCap(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(p, []byte("pods: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(p, Shape)
	if err != nil || string(b) != "pods: 3\n" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
	// A symbolic link to a regular file is read (the rule is about what is read, not how it is named).
	l := filepath.Join(t.TempDir(), "link.yaml")
	if err := os.Symlink(p, l); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(l, Shape); err != nil || string(b) != "pods: 3\n" {
		t.Fatalf("ReadFile of a link: %q, %v", b, err)
	}
}

// TestMissingFile: a missing file is an *Error that still says fs.ErrNotExist (readers that treat a missing file
// as empty rely on it), naming the path once.
func TestMissingFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "nope.json")
	_, err := ReadFile(p, RunMeta)
	var e *Error
	if !errors.As(err, &e) || e.Reason != Unreadable || !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), p) != 1 {
		t.Fatalf("got %v", err)
	}
}

// TestGrowingFile: a file within the cap when checked that grows past it before it is read is cut at the cap plus
// one byte, not read to its end.
func TestGrowingFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(p, []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, GoMod)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIf(f)
	if err := os.Truncate(p, 3*GoMod.Max()); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, f)
	var e *Error
	if !errors.As(err, &e) || e.Reason != TooLarge || e.Size != -1 || n != GoMod.Max()+1 {
		t.Fatalf("read %d bytes, %v; want %d and TooLarge", n, err, GoMod.Max()+1)
	}
	if !strings.Contains(err.Error(), "more than "+Bytes(GoMod.Max())) {
		t.Errorf("message %q", err)
	}
}

func TestReadAllStream(t *testing.T) {
	t.Parallel()
	if b, err := ReadAll(strings.NewReader("kind: Scenario\n"), "(standard input)", Scenario); err != nil || len(b) != 15 {
		t.Fatalf("small stream: %q %v", b, err)
	}
	_, err := ReadAll(io.LimitReader(zeros{}, 10*Scenario.Max()), "(standard input)", Scenario)
	var e *Error
	if !errors.As(err, &e) || e.Reason != TooLarge || !strings.Contains(err.Error(), "(standard input)") {
		t.Fatalf("endless stream: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestLineTooLong(t *testing.T) {
	t.Parallel()
	err := Samples.LineTooLong("runs/x/samples.jsonl", 7)
	for _, want := range []string{"runs/x/samples.jsonl:7", "65536 bytes (64 KiB)", "samples.jsonl line"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// TestKinds: every kind has a name, a hint and a cap, names are unique, and a line cap is below the file's cap.
func TestKinds(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	if len(Kinds()) != len(kinds)-1 {
		t.Fatalf("Kinds() = %d kinds, the table has %d", len(Kinds()), len(kinds)-1)
	}
	for _, k := range Kinds() {
		if k.String() == "" || k.Hint() == "" || k.Max() <= 0 || seen[k.String()] || k.MaxLine() >= k.Max() {
			t.Errorf("kind %d: %+v", k, k.spec())
		}
		seen[k.String()] = true
	}
	for n, want := range map[int64]string{MiB: "1048576 bytes (1 MiB)", GiB: "1073741824 bytes (1 GiB)", 64 * KiB: "65536 bytes (64 KiB)", 1000: "1000 bytes"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
