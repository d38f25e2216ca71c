package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// Reason is why a file was refused.
type Reason string

// The reasons of an *Error.
const (
	// NotRegular: a directory, a FIFO, a device, a socket: nothing meshbench can read to its end.
	NotRegular Reason = "not-regular"
	// TooLarge: above the kind's cap (by its size, or by what reading it gave: a file still growing).
	TooLarge Reason = "too-large"
	// LineTooLong: a line above the kind's line cap.
	LineTooLong Reason = "line-too-long"
	// Unreadable: stat or open failed (missing, no permission); Err says why.
	Unreadable Reason = "unreadable"
)

// Error is a refused input file. The commands exit 2 for it (bad input).
type Error struct {
	Path   string
	Kind   Kind
	Reason Reason
	// Size is the file's size in bytes when its stat gave it (TooLarge); -1 when reading found it too large.
	Size int64
	// Mode is the file's type (NotRegular).
	Mode fs.FileMode
	// Line is the line above the line cap (LineTooLong).
	Line int
	// Err is the operating system's error (Unreadable).
	Err error
}

func (e *Error) Error() string {
	what := e.Kind.String() + " " + e.Path
	limit := fmt.Sprintf("a %s is a regular file of at most %s", e.Kind, Bytes(e.Kind.Max()))
	switch e.Reason {
	case NotRegular:
		return fmt.Sprintf("%s: %s, not a regular file; %s: %s", what, typeName(e.Mode), limit, e.Kind.Hint())
	case TooLarge:
		size := "more than " + Bytes(e.Kind.Max())
		if e.Size >= 0 {
			size = strconv.FormatInt(e.Size, 10) + " bytes"
		}
		return fmt.Sprintf("%s: %s; %s: %s", what, size, limit, e.Kind.Hint())
	case LineTooLong:
		return fmt.Sprintf("%s:%d: line longer than %s; a %s line is at most %s: %s", e.Path, e.Line, Bytes(e.Kind.MaxLine()),
			e.Kind, Bytes(e.Kind.MaxLine()), e.Kind.Hint())
	default:
		return fmt.Sprintf("%s: %v; %s", what, e.Err, e.Kind.Hint())
	}
}

func (e *Error) Unwrap() error { return e.Err }

// typeName says what a file that is not regular is.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "a special file (" + m.Type().String() + ")"
	}
}

// Bytes is a cap for people: "1048576 bytes (1 MiB)".
func Bytes(n int64) string {
	unit := ""
	switch {
	case n >= GiB && n%GiB == 0:
		unit = strconv.FormatInt(n/GiB, 10) + " GiB"
	case n >= MiB && n%MiB == 0:
		unit = strconv.FormatInt(n/MiB, 10) + " MiB"
	case n >= KiB && n%KiB == 0:
		unit = strconv.FormatInt(n/KiB, 10) + " KiB"
	default:
		return strconv.FormatInt(n, 10) + " bytes"
	}
	return strconv.FormatInt(n, 10) + " bytes (" + unit + ")"
}

// Check refuses path unless it is a regular file (symbolic links followed) within k's cap; it opens nothing, so a
// FIFO cannot block it. It returns the file's information. A missing file is an *Error wrapping fs.ErrNotExist.
func Check(path string, k Kind) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Path: path, Kind: k, Reason: Unreadable, Err: unwrapPath(err)}
	}
	return fi, checkInfo(path, k, fi)
}

func checkInfo(path string, k Kind, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &Error{Path: path, Kind: k, Reason: NotRegular, Mode: fi.Mode()}
	}
	if fi.Size() > k.Max() {
		return &Error{Path: path, Kind: k, Reason: TooLarge, Size: fi.Size()}
	}
	return nil
}

// unwrapPath drops the *fs.PathError around an os error: the *Error names the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// File is an input file opened by Open: reading it past its kind's cap fails with an *Error.
type File struct {
	f    *os.File
	path string
	kind Kind
	size int64 // at open
	read int64
}

// Open checks path (Check) and opens it. The open does not block even if a FIFO replaced the file after the check
// (O_NONBLOCK), and the opened file is checked again, so what is read is the regular file that was checked.
func Open(path string, k Kind) (*File, error) {
	fi, err := Check(path, k)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &Error{Path: path, Kind: k, Reason: Unreadable, Err: unwrapPath(err)}
	}
	ofi, err := f.Stat()
	if err == nil && !os.SameFile(fi, ofi) {
		err = checkInfo(path, k, ofi)
	}
	if err != nil {
		_ = f.Close()
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Path: path, Kind: k, Reason: Unreadable, Err: err}
	}
	return &File{f: f, path: path, kind: k, size: ofi.Size()}, nil
}

// Read reads the file; past the kind's cap it returns an *Error (TooLarge).
func (f *File) Read(p []byte) (int, error) {
	max := f.kind.Max()
	if f.read > max {
		return 0, &Error{Path: f.path, Kind: f.kind, Reason: TooLarge, Size: -1}
	}
	if rest := max + 1 - f.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := f.f.Read(p)
	f.read += int64(n)
	if f.read > max {
		return n, &Error{Path: f.path, Kind: f.kind, Reason: TooLarge, Size: -1}
	}
	return n, err
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Path is the path the file was opened by.
func (f *File) Path() string { return f.path }

// Size is the file's size in bytes when it was opened.
func (f *File) Size() int64 { return f.size }

// LineTooLong is the *Error of line lineNo of the file at path, above k's line cap.
func (k Kind) LineTooLong(path string, lineNo int) error {
	return &Error{Path: path, Kind: k, Reason: LineTooLong, Line: lineNo}
}

// ReadFile reads the whole file at path: Open, then everything up to the kind's cap.
func ReadFile(path string, k Kind) ([]byte, error) {
	f, err := Open(path, k)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(f)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Path: path, Kind: k, Reason: Unreadable, Err: err}
	}
	return b, nil
}

// ReadAll reads r (standard input, a stream) up to k's cap; name names it in errors ("(standard input)").
func ReadAll(r io.Reader, name string, k Kind) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, k.Max()+1))
	if err != nil {
		return nil, &Error{Path: name, Kind: k, Reason: Unreadable, Err: err}
	}
	if int64(len(b)) > k.Max() {
		return nil, &Error{Path: name, Kind: k, Reason: TooLarge, Size: -1}
	}
	return b, nil
}
