package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// MaxSampleValue bounds the magnitude of every sample Read keeps: no measurement meshbench makes comes near it (1e15
// millicores are a trillion cores, 1e15 ms 31,000 years), and sums of millions of samples stay finite, so no
// summary, comparison or projection turns into +Inf or NaN.
const MaxSampleValue = 1e15

// Run is everything a run directory holds.
type Run struct {
	Dir  string
	Meta RunMeta
	// Samples are the committed samples in file order: those of each case's latest recorded attempt, each once.
	// Samples of an interrupted case (no case line), of superseded attempts, without a number or outside physics are
	// left out.
	Samples []Sample
	// Cases is every line of cases.jsonl in file order, re-runs included (a line repeated exactly: once); see
	// DoneCases.
	Cases   []CaseResult
	Summary *Summary // nil when summary.json does not exist yet
	// Warnings are what Read tolerated (truncated last lines, interrupted cases, samples left out, repeated lines, a
	// clock that ran backwards) and what Resume repaired.
	Warnings []ReadWarning
}

// Read loads a run directory: run.json (required), samples.jsonl and cases.jsonl (missing means empty) and
// summary.json (optional). It keeps only what a measurement can be and warns of what it left out, naming file:line;
// the rules are in docs/results.md ("What readers accept"). An unknown schema major is refused.
func Read(dir string) (*Run, error) {
	rr, err := readRun(dir)
	if err != nil {
		return nil, err
	}
	return rr.run, nil
}

// ReadMeta reads the run.json of the run directory dir alone (what the run is, not what it measured).
func ReadMeta(dir string) (RunMeta, error) {
	var m RunMeta
	if err := readJSONFile(filepath.Join(dir, RunFile), inputfile.RunMeta, &m); err != nil {
		return RunMeta{}, fmt.Errorf("read run: %w", err)
	}
	return m, nil
}

// DoneCases returns, per case ID, the latest record of the cases that need not run again: those whose latest status is
// StatusOK or StatusSkipped. A case whose latest record is StatusFailed is absent, so --resume re-runs it; so is a
// case skipped for a node that was not usable (FactSkippedNode): the node may be back.
func (r *Run) DoneCases() map[string]CaseResult {
	latest := make(map[string]CaseResult, len(r.Cases))
	for _, c := range r.Cases {
		latest[c.CaseID] = c
	}
	for id, c := range latest {
		if c.Status != StatusOK && c.Status != StatusSkipped || c.Facts[FactSkippedNode] != "" {
			delete(latest, id)
		}
	}
	return latest
}

// runRead is a Read result plus what Resume needs to continue writing.
type runRead struct {
	run            *Run
	samples, cases logInfo
	attempts       map[string]int // case ID -> highest attempt seen in either file
}

// lineSample is a decoded line of samples.jsonl: the sample, its line, and why its value is unusable ("" if it is
// fine).
type lineSample struct {
	Sample
	line int
	why  string
	kind ReadWarningKind // of why
}

func readRun(dir string) (*runRead, error) {
	run := &Run{Dir: dir}
	rr := &runRead{run: run, attempts: map[string]int{}}
	metaPath := filepath.Join(dir, RunFile)
	if err := readJSONFile(metaPath, inputfile.RunMeta, &run.Meta); err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	run.Warnings = append(run.Warnings, clockWarnings(metaPath, run.Meta)...)

	var all []lineSample
	samplesPath, casesPath := filepath.Join(dir, SamplesFile), filepath.Join(dir, CasesFile)
	var err error
	rr.samples, err = readLog(samplesPath, inputfile.Samples, func(line []byte, lineNo int) error {
		smp, why, err := decodeSample(line)
		if err != nil {
			return err
		}
		ls := lineSample{Sample: smp, line: lineNo, why: why, kind: WarnNotANumber}
		if why == "" {
			ls.why = outsidePhysics(smp)
			ls.kind = WarnOutsidePhysics
		}
		all = append(all, ls)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	var caseLines []int
	rr.cases, err = readLog(casesPath, inputfile.Cases, func(line []byte, lineNo int) error {
		var c CaseResult
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		run.Cases = append(run.Cases, c)
		caseLines = append(caseLines, lineNo)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	run.Warnings = append(run.Warnings, rr.samples.warnings...)
	run.Warnings = append(run.Warnings, rr.cases.warnings...)
	if run.Cases, err = checkCases(casesPath, run.Cases, caseLines, &run.Warnings); err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	if run.Samples, err = rr.keepSamples(samplesPath, all); err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}

	var sum Summary
	switch err := readJSONFile(filepath.Join(dir, SummaryFile), inputfile.Summary, &sum); {
	case err == nil:
		run.Summary = &sum
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read run: %w", err)
	}
	return rr, nil
}

// keepSamples returns the samples of each case's latest recorded attempt, each once, leaving out (with warnings)
// those without a usable value, repeated lines and the samples of attempts without a case line; it records every
// attempt seen in rr.attempts.
func (rr *runRead) keepSamples(path string, all []lineSample) ([]Sample, error) {
	run := rr.run
	latest := map[string]int{} // case ID -> attempt of its latest record
	for _, c := range run.Cases {
		latest[c.CaseID] = c.Attempt
		rr.attempts[c.CaseID] = max(rr.attempts[c.CaseID], c.Attempt)
	}
	type unit struct {
		caseID  string
		attempt int
	}
	var orphans []unit
	orphanCount := map[unit]int{}
	nan := lineWarnings{kind: WarnNotANumber, file: path, what: "samples without a number left out", out: &run.Warnings}
	physics := lineWarnings{kind: WarnOutsidePhysics, file: path, what: "samples outside physics left out", out: &run.Warnings}
	dups := lineWarnings{kind: WarnDuplicateLines, file: path, what: "repeated samples read once", out: &run.Warnings}
	type first struct {
		line  int
		value float64
	}
	seen := map[string]first{}
	out := make([]Sample, 0, len(all))
	for _, smp := range all {
		rr.attempts[smp.CaseID] = max(rr.attempts[smp.CaseID], smp.Attempt)
		a, recorded := latest[smp.CaseID]
		switch {
		case recorded && smp.Attempt == a:
			if smp.why != "" {
				w := &nan
				if smp.kind == WarnOutsidePhysics {
					w = &physics
				}
				w.add([]int{smp.line}, "case %q %s %s %s: %s: sample left out (never read as 0)", smp.CaseID, smp.Component, smp.Metric, smp.Stat, smp.why)
				continue
			}
			k := sampleKey(&smp.Sample)
			if f, dup := seen[k]; dup {
				if f.value != smp.Value {
					return nil, &RecordError{File: path, Line: smp.line, Other: f.line, Problem: fmt.Sprintf(
						"case %q %s %s %s: the same sample as line %d with another value (%v, not %v): a run records each sample once; remove the line that is wrong",
						smp.CaseID, smp.Component, smp.Metric, smp.Stat, f.line, smp.Value, f.value)}
				}
				dups.add([]int{f.line, smp.line}, "case %q %s %s %s: line %d repeats line %d: read once (it would be counted twice)",
					smp.CaseID, smp.Component, smp.Metric, smp.Stat, smp.line, f.line)
				continue
			}
			seen[k] = first{smp.line, smp.Value}
			out = append(out, smp.Sample)
		case !recorded || smp.Attempt > a:
			u := unit{smp.CaseID, smp.Attempt}
			if orphanCount[u] == 0 {
				orphans = append(orphans, u)
			}
			orphanCount[u]++
		}
		// smp.Attempt < a: superseded by a re-run of the case.
	}
	nan.close()
	physics.close()
	dups.close()
	for _, u := range orphans {
		run.Warnings = append(run.Warnings, ReadWarning{Kind: WarnOrphanSamples, File: path, Message: fmt.Sprintf(
			"%s: ignored %d samples of case %q attempt %d: the case has no line in %s (run interrupted mid-case)",
			SamplesFile, orphanCount[u], u.caseID, u.attempt, CasesFile)})
	}
	return out, nil
}

// sampleKey is everything that identifies a sample: all its fields but the value, times in UTC, labels canonical.
func sampleKey(s *Sample) string {
	var b strings.Builder
	for _, f := range []string{s.RunID, s.CaseID, strconv.Itoa(s.Attempt), string(s.Mode), s.Topology, s.Load, strconv.Itoa(s.Repetition),
		s.Window.Kind, s.Window.Start.UTC().Format(time.RFC3339Nano), s.Window.End.UTC().Format(time.RFC3339Nano),
		s.Source, string(s.Component), string(s.Metric), string(s.Stat), string(s.Unit), CanonicalLabels(s.Labels)} {
		b.WriteString(f)
		b.WriteByte(0)
	}
	return b.String()
}

// outsidePhysics says why a sample's value cannot be a measurement ("" when it can): beyond MaxSampleValue (or
// float64's range), or negative CPU or memory.
func outsidePhysics(s Sample) string {
	switch {
	case math.IsInf(s.Value, 0) || math.IsNaN(s.Value):
		return fmt.Sprintf("value %v is beyond float64's range", s.Value)
	case math.Abs(s.Value) > MaxSampleValue:
		return fmt.Sprintf("value %g is beyond %g, which no measurement reaches", s.Value, MaxSampleValue)
	case s.Value < 0 && (s.Metric == MetricCPU || s.Metric == MetricMemory):
		return fmt.Sprintf("negative %s %g %s: usage and allocation are never below 0", s.Metric, s.Value, s.Unit)
	}
	return ""
}

// checkCases refuses a case line whose status meshbench never writes, and a second record of a case attempt with
// other content (both *RecordError naming the lines); a line that repeats an earlier one exactly is dropped with a
// warning. Runs recorded before attempts (attempt 0) recorded a re-run under the same key: those are kept.
func checkCases(path string, cases []CaseResult, lines []int, warnings *[]ReadWarning) ([]CaseResult, error) {
	type key struct {
		id      string
		attempt int
	}
	seen := map[key]int{} // -> index in out
	dups := lineWarnings{kind: WarnDuplicateLines, file: path, what: "repeated case lines read once", out: warnings}
	out := cases[:0]
	outLines := make([]int, 0, len(lines))
	for i, c := range cases {
		switch c.Status {
		case StatusOK, StatusFailed, StatusSkipped:
		default:
			return nil, &RecordError{File: path, Line: lines[i], Problem: fmt.Sprintf(
				"case %q: unknown status %q: meshbench records %q, %q or %q; fix or remove the line", c.CaseID, c.Status, StatusOK, StatusFailed, StatusSkipped)}
		}
		k := key{c.CaseID, c.Attempt}
		if j, dup := seen[k]; dup {
			a, _ := json.Marshal(out[j])
			b, _ := json.Marshal(c)
			switch {
			case string(a) == string(b):
				dups.add([]int{outLines[j], lines[i]}, "case %q attempt %d: line %d repeats line %d: read once", c.CaseID, c.Attempt, lines[i], outLines[j])
				continue
			case c.Attempt > 0:
				return nil, &RecordError{File: path, Line: lines[i], Other: outLines[j], Problem: fmt.Sprintf(
					"case %q attempt %d: recorded again with other content than line %d: meshbench records each attempt once; remove the line that is wrong",
					c.CaseID, c.Attempt, outLines[j])}
			}
		}
		seen[k] = len(out)
		out = append(out, c)
		outLines = append(outLines, lines[i])
	}
	dups.close()
	return out, nil
}

// clockWarnings are the spans of run.json whose end is before their start.
func clockWarnings(path string, m RunMeta) []ReadWarning {
	var out []ReadWarning
	if m.End != nil && m.End.Before(m.Start) {
		out = append(out, ReadWarning{Kind: WarnClock, File: path, Message: fmt.Sprintf(
			"%s: the run ends (%s) before it starts (%s): its duration is unknown (was the clock set back, or the file edited?)",
			path, m.End.Format(time.RFC3339), m.Start.Format(time.RFC3339))})
	}
	for i, inv := range m.Invocations {
		if inv.End != nil && inv.End.Before(inv.Start) {
			out = append(out, ReadWarning{Kind: WarnClock, File: path, Message: fmt.Sprintf(
				"%s: invocation %d ends (%s) before it starts (%s): the run's duration is unknown",
				path, i+1, inv.End.Format(time.RFC3339), inv.Start.Format(time.RFC3339))})
		}
	}
	return out
}

// decodeSample decodes one samples.jsonl line. A "value" that is null (other encoders' NaN) or absent is returned with
// why set, for the caller to leave out (encoding/json would give 0); a number beyond float64 is returned as ±Inf.
func decodeSample(line []byte) (Sample, string, error) {
	var raw struct {
		Sample
		Value json.RawMessage `json:"value"` // shadows Sample.Value
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Sample{}, "", err
	}
	smp := raw.Sample
	switch v := string(raw.Value); v {
	case "":
		return smp, `no "value"`, nil
	case "null":
		return smp, `"value" is null, not a number (JSON encoders write NaN as null)`, nil
	default:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return Sample{}, "", fmt.Errorf(`"value" %s: not a number`, v)
		}
		smp.Value = f
	}
	return smp, "", nil
}
