package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// logInfo describes a JSONL file as readLog found it.
type logInfo struct {
	exists         bool
	size           int64
	goodEnd        int64 // offset just past the last valid line (its newline included when present)
	goodLines      int   // line number of the last valid line
	missingNewline bool  // the last valid line ends the file without '\n'
	badLast        int   // line number of an ignored truncated or corrupt last line; 0 when none
	warnings       []ReadWarning
}

// readLog calls decode for every non-blank line of the JSONL file at path, in order, with its line number; a missing
// file is empty. A rejected line is an error naming path:line, unless it is the last one (what a crash mid-write
// leaves): that is skipped with a warning. The file follows inputfile's rule for kind (no FIFO or endless line).
func readLog(path string, kind inputfile.Kind, decode func(line []byte, lineNo int) error) (logInfo, error) {
	var info logInfo
	f, err := inputfile.Open(path, kind)
	if errors.Is(err, fs.ErrNotExist) {
		return info, nil
	}
	if err != nil {
		return info, fmt.Errorf("read %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	info.exists = true

	br := bufio.NewReaderSize(f, 256<<10)
	var (
		buf         []byte
		off         int64
		lineNo      int
		pending     error // decode error of the latest non-blank line
		pendingLine int
	)
	for {
		var rerr error
		buf, rerr = readLine(br, buf[:0], kind.MaxLine())
		if errors.Is(rerr, errLineTooLong) {
			return info, kind.LineTooLong(path, lineNo+1)
		}
		if len(buf) > 0 {
			lineNo++
			off += int64(len(buf))
			if len(bytes.TrimSpace(buf)) > 0 {
				if pending != nil {
					return info, fmt.Errorf("%s:%d: %w", path, pendingLine, pending)
				}
				if err := decode(buf, lineNo); err != nil {
					pending, pendingLine = err, lineNo
				} else {
					info.goodEnd, info.goodLines = off, lineNo
					info.missingNewline = buf[len(buf)-1] != '\n'
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return info, fmt.Errorf("read %s: %w", path, rerr)
		}
	}
	info.size = off
	if pending != nil {
		info.badLast = pendingLine
		info.warnings = append(info.warnings, ReadWarning{Kind: WarnCorruptLastLine, File: path, Lines: []int{pendingLine},
			Message: fmt.Sprintf("%s:%d: ignored truncated or corrupt last line (run interrupted mid-write?): %v", path, pendingLine, pending)})
	}
	return info, nil
}

// errLineTooLong: a line longer than readLine's max.
var errLineTooLong = errors.New("line too long")

// readLine appends the next line of br, with its '\n' when present, to buf; lines may exceed the reader's buffer,
// not max bytes (errLineTooLong, without reading the rest of the line).
func readLine(br *bufio.Reader, buf []byte, max int64) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if n := len(bytes.TrimSuffix(buf, []byte{'\n'})); int64(n) > max {
			return buf, errLineTooLong
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// repairLog makes the JSONL file at path safe to append to: it cuts everything after the last valid line (a
// truncated or corrupt last line, trailing blank lines) and terminates a last line that lacks its newline. It returns
// a warning for Run.Warnings when it changed data (ok false when it did not).
func repairLog(path string, info logInfo) (w ReadWarning, ok bool, err error) {
	if !info.exists || (info.goodEnd == info.size && !info.missingNewline) {
		return w, false, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return w, false, fmt.Errorf("repair %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	w = ReadWarning{Kind: WarnRepaired, File: path}
	if info.goodEnd < info.size {
		if err := f.Truncate(info.goodEnd); err != nil {
			return w, false, fmt.Errorf("repair %s: %w", path, err)
		}
		if info.badLast > 0 {
			w.Lines, ok = []int{info.badLast}, true
			w.Message = fmt.Sprintf("%s: repaired: removed the truncated last line %d (%d bytes) before appending",
				path, info.badLast, info.size-info.goodEnd)
		}
	}
	if info.missingNewline {
		if _, err := f.WriteAt([]byte{'\n'}, info.goodEnd); err != nil {
			return w, false, fmt.Errorf("repair %s: %w", path, err)
		}
		w.Lines, ok = []int{info.goodLines}, true
		w.Message = fmt.Sprintf("%s: repaired: added the missing newline after line %d", path, info.goodLines)
	}
	if err := f.Sync(); err != nil {
		return w, false, fmt.Errorf("repair %s: %w", path, err)
	}
	return w, ok, f.Close()
}
