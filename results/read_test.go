package results

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadInvalidRuns is the corpus of hostile run directories (testdata/invalid-*): duplicated lines are read once
// with a warning naming both lines (they were counted twice: n 3 -> 6), conflicting records and unknown statuses are
// a *RecordError naming the lines, samples outside physics are left out with warnings naming their lines, and an
// end before the start is a warning with no duration; the summary of what is read encodes as JSON (no Inf, no NaN).
func TestReadInvalidRuns(t *testing.T) {
	t.Parallel()
	type warning struct {
		kind  ReadWarningKind
		lines []int
		text  string
	}
	for _, tc := range []struct {
		dir       string
		err       string // a *RecordError containing this; "" when Read succeeds
		errLines  [2]int // its Line and Other
		samples   int
		cases     int
		warnings  []warning
		sidecarN  int // observations of the sidecar cpu avg series
		tookKnown bool
	}{
		{dir: "invalid-duplicate-lines", samples: 3, cases: 3, sidecarN: 3, tookKnown: true, warnings: []warning{
			{WarnDuplicateLines, []int{2, 4}, `cases.jsonl:2,4: case "single/sidecar/100/r2" attempt 1: line 4 repeats line 2: read once`},
			{WarnDuplicateLines, []int{1, 4}, "samples.jsonl:1,4: case \"single/sidecar/100/r1\" sidecar cpu avg: line 4 repeats line 1"},
			{WarnDuplicateLines, []int{2, 5}, "line 5 repeats line 2"},
			{WarnDuplicateLines, []int{3, 6}, "line 6 repeats line 3"},
		}},
		{dir: "invalid-conflicting-sample", err: "samples.jsonl:4: case \"single/sidecar/100/r2\" sidecar cpu avg: the same sample as line 2 with another value (99.5, not 31.5)", errLines: [2]int{4, 2}},
		{dir: "invalid-conflicting-case", err: "cases.jsonl:4: case \"single/sidecar/100/r2\" attempt 1: recorded again with other content than line 2", errLines: [2]int{4, 2}},
		{dir: "invalid-status", err: `cases.jsonl:2: case "single/sidecar/100/r2": unknown status "bogus": meshbench records "ok", "failed" or "skipped"`, errLines: [2]int{2, 0}},
		{dir: "invalid-physics", samples: 3, cases: 3, sidecarN: 0, tookKnown: true, warnings: []warning{
			{WarnOutsidePhysics, []int{1}, "samples.jsonl:1: case \"single/sidecar/100/r1\" sidecar cpu avg: value 1e+308 is beyond 1e+15"},
			{WarnOutsidePhysics, []int{2}, "samples.jsonl:2: case \"single/sidecar/100/r2\" sidecar cpu avg: value -5e+300 is beyond 1e+15"},
			{WarnOutsidePhysics, []int{3}, "samples.jsonl:3: case \"single/sidecar/100/r3\" sidecar cpu avg: value +Inf is beyond float64's range"},
			{WarnOutsidePhysics, []int{4}, "samples.jsonl:4: case \"single/sidecar/100/r1\" sidecar memory avg: negative memory -3 MiB"},
		}},
		{dir: "invalid-clock", samples: 3, cases: 3, sidecarN: 3, warnings: []warning{
			{WarnClock, nil, "run.json: the run ends (0001-01-01T00:00:00Z) before it starts (2026-11-30T03:00:00Z): its duration is unknown"},
		}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", tc.dir)
			run, err := Read(dir)
			if tc.err != "" {
				var re *RecordError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.err) || re.Line != tc.errLines[0] || re.Other != tc.errLines[1] {
					t.Fatalf("got %v; want a *RecordError at lines %v containing %q", err, tc.errLines, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Samples) != tc.samples || len(run.Cases) != tc.cases {
				t.Errorf("%d samples, %d cases; want %d, %d", len(run.Samples), len(run.Cases), tc.samples, tc.cases)
			}
			if len(run.Warnings) != len(tc.warnings) {
				t.Errorf("warnings %q, want %d", run.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if i >= len(run.Warnings) {
					break
				}
				got := run.Warnings[i]
				if got.Kind != w.kind || !slices.Equal(got.Lines, w.lines) || !strings.Contains(got.Message, w.text) || !strings.HasPrefix(got.File, dir) {
					t.Errorf("warning %d: %+v\nwant kind %s, lines %v, text %q", i, got, w.kind, w.lines, w.text)
				}
			}
			if _, ok := run.Meta.Took(); ok != tc.tookKnown {
				t.Errorf("Took known = %v, want %v", ok, tc.tookKnown)
			}
			sum := Summarize(run.Meta, run.Samples, run.Cases, SummaryOptions{})
			n := 0
			for _, s := range sum.Series {
				if s.Component == ComponentSidecar && s.Metric == MetricCPU && s.Stat == StatAvg {
					n = s.N
				}
			}
			if n != tc.sidecarN {
				t.Errorf("sidecar cpu avg n = %d, want %d", n, tc.sidecarN)
			}
			if _, err := json.Marshal(sum); err != nil {
				t.Errorf("summary JSON: %v", err)
			}
		})
	}
}
