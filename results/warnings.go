package results

import (
	"fmt"
	"strconv"
	"strings"
)

// ReadWarningKind names what Read tolerated in a run directory, or what Resume repaired.
type ReadWarningKind string

// The kinds of ReadWarning.
const (
	// WarnCorruptLastLine: a truncated or corrupt last line of a JSONL file was ignored (a crash mid-write).
	WarnCorruptLastLine ReadWarningKind = "corrupt-last-line"
	// WarnRepaired: Resume cut a corrupt last line, or added the missing newline of the last line, before appending.
	WarnRepaired ReadWarningKind = "repaired"
	// WarnTempFileRemoved: Resume removed a leftover temporary file of an atomic write.
	WarnTempFileRemoved ReadWarningKind = "temp-file-removed"
	// WarnNotANumber: a sample without a number ("value" missing or null) was left out, never read as 0.
	WarnNotANumber ReadWarningKind = "not-a-number"
	// WarnOutsidePhysics: a sample no measurement can give was left out: beyond float64, beyond MaxSampleValue, or a
	// negative CPU or memory figure.
	WarnOutsidePhysics ReadWarningKind = "outside-physics"
	// WarnOrphanSamples: samples of a case attempt without a line in cases.jsonl were ignored (interrupted mid-case).
	WarnOrphanSamples ReadWarningKind = "orphan-samples"
	// WarnDuplicateLines: a line repeating an earlier one exactly was read once (a sample counted twice would narrow
	// every interval it is in).
	WarnDuplicateLines ReadWarningKind = "duplicate-lines"
	// WarnClock: run.json has an end (the run's or an invocation's) before its start; the run's duration is unknown.
	WarnClock ReadWarningKind = "clock"
)

// ReadWarning is one thing Read tolerated or Resume repaired, with the file and the lines it concerns.
type ReadWarning struct {
	Kind ReadWarningKind
	// File is the path of the file concerned.
	File string
	// Lines are the 1-based lines of File concerned (empty: the file as a whole).
	Lines []int
	// Message says, for people, the file and lines, what was done and why.
	Message string
}

func (w ReadWarning) String() string { return w.Message }

// maxLineWarnings is how many lines of one kind of warning Read names one by one; the rest are counted.
const maxLineWarnings = 20

// lineWarnings collects one kind of per-line warning about one file: the first maxLineWarnings one by one, then
// (close) how many more.
type lineWarnings struct {
	kind ReadWarningKind
	file string
	what string // what the count is of, e.g. "samples without a number left out"
	n    int
	out  *[]ReadWarning
}

func (w *lineWarnings) add(lines []int, format string, args ...any) {
	if w.n++; w.n <= maxLineWarnings {
		*w.out = append(*w.out, ReadWarning{Kind: w.kind, File: w.file, Lines: lines,
			Message: fmt.Sprintf("%s:%s: ", w.file, joinLines(lines)) + fmt.Sprintf(format, args...)})
	}
}

func (w *lineWarnings) close() {
	if w.n > maxLineWarnings {
		*w.out = append(*w.out, ReadWarning{Kind: w.kind, File: w.file, Message: fmt.Sprintf(
			"%s: %d more %s (%d in all; the first %d are named above)", w.file, w.n-maxLineWarnings, w.what, w.n, maxLineWarnings)})
	}
}

// joinLines is "3" or "3,17,20".
func joinLines(lines []int) string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = strconv.Itoa(l)
	}
	return strings.Join(s, ",")
}

// RecordError is a line of samples.jsonl or cases.jsonl that Read refuses although it decodes: a case status
// meshbench never writes, or a second record of the same sample or case attempt with other content (which of the
// two holds the measurement cannot be told).
type RecordError struct {
	File string
	Line int
	// Other is the earlier line it conflicts with (0: none).
	Other int
	// Problem says what is wrong (naming Other) and the fix.
	Problem string
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Problem) }
