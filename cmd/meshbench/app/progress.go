package app

import (
	"bytes"
	"io"
	"sync"
	"time"

	"golang.org/x/term"
)

// progressWriter is where progress goes: nothing with -q; w itself when it is a terminal (redrawn bars); otherwise a
// lineWriter, so logs that are files (a CronJob's pod log, CI, `2>run.log`) get plain timestamped lines, not a
// carriage-return redraw every second.
func progressWriter(g *globalFlags, w io.Writer) io.Writer {
	if g.Quiet || w == nil {
		return nil
	}
	if isTerminal(w) {
		return w
	}
	return &lineWriter{w: w, now: time.Now}
}

// isTerminal reports whether w is a file descriptor attached to a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// lineWriter writes whole lines prefixed with the UTC time, keeping what follows a line's last \r and dropping text
// never ended by a newline, so a redrawn progress bar leaves nothing in a log. Through PlainProgress it has the runner
// announce waits in lines instead of bars.
type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	pending []byte // the current line since its last carriage return
}

// maxLine bounds a line kept in memory; the rest of a longer one is dropped.
const maxLine = 64 << 10

// PlainProgress marks the writer as line mode (the runner checks for this method).
func (*lineWriter) PlainProgress() bool { return true }

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range p {
		switch b {
		case '\r':
			l.pending = l.pending[:0]
		case '\n':
			line := bytes.TrimSpace(l.pending)
			l.pending = l.pending[:0]
			if len(line) == 0 {
				continue
			}
			if _, err := io.WriteString(l.w, l.now().UTC().Format(time.RFC3339)+" "+string(line)+"\n"); err != nil {
				return len(p), err
			}
		default:
			if len(l.pending) < maxLine {
				l.pending = append(l.pending, b)
			}
		}
	}
	return len(p), nil
}
