package results

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testMeta() RunMeta {
	return RunMeta{RunID: "run-1", Command: "run", Tool: ToolInfo{Version: "v0.1.0"},
		Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

// caseAndSamples returns a finished case of id with n samples whose CaseID and RunID are left for the store to fill.
func caseAndSamples(id string, status Status, n int) (CaseResult, []Sample) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	w := Window{Kind: WindowLoad, Start: t0, End: t0.Add(time.Minute)}
	res := CaseResult{CaseID: id, Mode: "ambient", Status: status, Start: t0, End: t0.Add(2 * time.Minute), Windows: []Window{w}}
	samples := make([]Sample, n)
	for i := range samples {
		samples[i] = Sample{Mode: "ambient", Window: w, Source: "prometheus", Component: ComponentZtunnel, Metric: "cpu",
			Stat: "avg", Value: float64(i) + 0.5, Unit: "millicores", Labels: map[string]string{"node": "n" + strconv.Itoa(i+1), "b": "<&>"}}
	}
	return res, samples
}

func mustCreate(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Create(dir, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustAppend(t *testing.T, s *Store, id string, status Status, n int) {
	t.Helper()
	res, samples := caseAndSamples(id, status, n)
	if err := s.AppendCase(res, samples); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, dir string) *Run {
	t.Helper()
	run, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestStoreRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "runs", "run-1") // parents are created
	s := mustCreate(t, dir)
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	res1, samples1 := caseAndSamples("c1", StatusOK, 3)
	res2, _ := caseAndSamples("c2", StatusSkipped, 0)
	res2.Reason = "waypoint mode needs Gateway API CRDs"
	for _, c := range []struct {
		res     CaseResult
		samples []Sample
	}{{res1, samples1}, {res2, nil}} {
		if err := s.AppendCase(c.res, c.samples); err != nil {
			t.Fatal(err)
		}
	}
	if samples1[0].CaseID != "" || samples1[0].Attempt != 0 {
		t.Error("AppendCase modified the caller's samples")
	}
	meta := testMeta()
	end := meta.Start.Add(time.Hour)
	meta.End = &end
	meta.Notes = []string{"stand-in data plane"}
	if err := s.UpdateMeta(meta); err != nil {
		t.Fatal(err)
	}
	sum := Summary{RunID: "run-1", Confidence: 0.95, Warnings: []string{"w"}}
	if err := s.WriteSummary(sum); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.AppendCase(res1, nil); err == nil {
		t.Error("AppendCase after Close succeeded")
	}

	run := mustRead(t, dir)
	meta.SchemaVersion = SchemaVersion
	if !reflect.DeepEqual(run.Meta, meta) {
		t.Errorf("meta = %+v, want %+v", run.Meta, meta)
	}
	wantSamples := slices.Clone(samples1)
	for i := range wantSamples {
		wantSamples[i].RunID, wantSamples[i].CaseID, wantSamples[i].Attempt = "run-1", "c1", 1
	}
	if !reflect.DeepEqual(run.Samples, wantSamples) {
		t.Errorf("samples = %+v, want %+v", run.Samples, wantSamples)
	}
	res1.RunID, res1.Attempt = "run-1", 1
	res2.RunID, res2.Attempt = "run-1", 1
	if !reflect.DeepEqual(run.Cases, []CaseResult{res1, res2}) {
		t.Errorf("cases = %+v", run.Cases)
	}
	sum.SchemaVersion = SchemaVersion
	if run.Summary == nil || !reflect.DeepEqual(*run.Summary, sum) {
		t.Errorf("summary = %+v, want %+v", run.Summary, sum)
	}
	if run.Dir != dir || len(run.Warnings) != 0 {
		t.Errorf("dir %q, warnings %q", run.Dir, run.Warnings)
	}

	// Deterministic, human-readable lines: sorted label keys, no HTML escaping.
	b, err := os.ReadFile(filepath.Join(dir, SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if !strings.Contains(first, `"labels":{"b":"<&>","node":"n1"},"attempt":1}`) {
		t.Errorf("sample line = %s", first)
	}
	// No temporary files left behind.
	if tmp, _ := filepath.Glob(filepath.Join(dir, tempPattern)); len(tmp) > 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
}

func TestCreateRefusesExistingRun(t *testing.T) {
	t.Parallel()
	for _, name := range []string{RunFile, SamplesFile, CasesFile} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Create(dir, testMeta())
			if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), name) {
				t.Errorf("Create over an existing %s: %v, want fs.ErrExist naming the file", name, err)
			}
		})
	}
}

func TestAppendCaseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*CaseResult, []Sample)
		want   string
	}{
		{"empty case ID", func(r *CaseResult, _ []Sample) { r.CaseID = "" }, "empty case ID"},
		{"unknown status", func(r *CaseResult, _ []Sample) { r.Status = "done" }, `unknown status "done"`},
		{"sample of another case", func(_ *CaseResult, s []Sample) { s[1].CaseID = "c9" }, `sample 1 belongs to run "run-1" case "c9"`},
		{"sample of another run", func(_ *CaseResult, s []Sample) { s[0].RunID = "run-0" }, `sample 0 belongs to run "run-0"`},
		{"non-finite value", func(_ *CaseResult, s []Sample) { s[0].Value = 1 / zero }, "unsupported value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := mustCreate(t, dir)
			res, samples := caseAndSamples("c1", StatusOK, 2)
			tt.mutate(&res, samples)
			if err := s.AppendCase(res, samples); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AppendCase error %v, want %q", err, tt.want)
			}
			if run := mustRead(t, dir); len(run.Samples) != 0 || len(run.Cases) != 0 {
				t.Errorf("rejected case left %d samples, %d cases", len(run.Samples), len(run.Cases))
			}
		})
	}
}

var zero float64

// appendRaw appends text to a file of dir, simulating what a crash leaves.
func appendRaw(t *testing.T, dir, name, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTruncatedLastLine covers a crash mid-write of either log: Read tolerates the partial last line with a warning
// naming file:line, Resume cuts it so the next case is appended to a valid JSONL file.
func TestTruncatedLastLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		file        string
		tail        string
		wantLine    int // line of the ignored partial line
		wantSamples int // committed samples Read returns before and after the resume
		wantCases   int
		wantWarn    []string // substrings of the Read warnings, in order
		wantAttempt int      // attempt of the re-run of c2
	}{
		{
			// Crash while writing c2's samples: c2 has no case line, so its one complete sample is ignored too.
			name: "samples.jsonl", file: SamplesFile,
			tail:     `{"runID":"run-1","caseID":"c2","attempt":1}` + "\n" + `{"runID":"run-1","caseID":"c2","compo`,
			wantLine: 4, wantSamples: 2, wantCases: 1,
			wantWarn:    []string{"samples.jsonl:4: ignored truncated or corrupt last line", `ignored 1 samples of case "c2" attempt 1`},
			wantAttempt: 2,
		},
		{
			// Crash while writing c2's case line: its samples are complete but not committed.
			name: "cases.jsonl", file: CasesFile, tail: `{"runID":"run-1","caseID":"c2","sta`,
			wantLine: 2, wantSamples: 2, wantCases: 1,
			wantWarn:    []string{"cases.jsonl:2: ignored truncated or corrupt last line", `ignored 3 samples of case "c2" attempt 1`},
			wantAttempt: 2,
		},
		{
			// Zero-filled tail, as some file systems leave after a power cut.
			name: "zero bytes", file: SamplesFile, tail: "\x00\x00\x00\x00",
			wantLine: 3, wantSamples: 2, wantCases: 1,
			wantWarn:    []string{"samples.jsonl:3: ignored truncated or corrupt last line"},
			wantAttempt: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := mustCreate(t, dir)
			mustAppend(t, s, "c1", StatusOK, 2)
			if tt.file == CasesFile { // c2's samples made it to disk, then the crash hit its case line
				_, samples := caseAndSamples("c2", StatusOK, 3)
				for i := range samples {
					samples[i].RunID, samples[i].CaseID, samples[i].Attempt = "run-1", "c2", 1
				}
				appendRaw(t, dir, SamplesFile, string(encodeLines(t, samples)))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			appendRaw(t, dir, tt.file, tt.tail)

			run := mustRead(t, dir)
			if len(run.Samples) != tt.wantSamples || len(run.Cases) != tt.wantCases {
				t.Errorf("Read: %d samples, %d cases; want %d, %d", len(run.Samples), len(run.Cases), tt.wantSamples, tt.wantCases)
			}
			if !warningsContain(run.Warnings, tt.wantWarn) {
				t.Errorf("Read warnings %q, want %q", run.Warnings, tt.wantWarn)
			}

			s2, run2, err := Resume(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !warningsContain(run2.Warnings, append(slices.Clone(tt.wantWarn), "repaired: removed the truncated last line")) {
				t.Errorf("Resume warnings %q", run2.Warnings)
			}
			// The interrupted case is re-run: a new attempt, so leftover complete samples of c2 stay ignored.
			mustAppend(t, s2, "c2", StatusOK, 1)
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			run3 := mustRead(t, dir)
			var attempts []int
			for _, smp := range run3.Samples {
				if smp.CaseID == "c2" {
					attempts = append(attempts, smp.Attempt)
				}
			}
			if len(run3.Cases) != tt.wantCases+1 || !slices.Equal(attempts, []int{tt.wantAttempt}) {
				t.Errorf("after resume: %d cases, c2 sample attempts %v; want %d, [%d]", len(run3.Cases), attempts, tt.wantCases+1, tt.wantAttempt)
			}
			for _, w := range run3.Warnings {
				if strings.Contains(w.Message, "truncated") {
					t.Errorf("file not repaired: %q", w)
				}
			}
		})
	}
}

func encodeLines(t *testing.T, samples []Sample) []byte {
	t.Helper()
	var b []byte
	for _, s := range samples {
		b = append(b, mustJSON(t, s)...)
		b = append(b, '\n')
	}
	return b
}

func warningsContain(warnings []ReadWarning, want []string) bool {
	i := 0
	for _, w := range warnings {
		if i < len(want) && strings.Contains(w.Message, want[i]) {
			i++
		}
	}
	return i == len(want)
}

func TestResumeMissingNewline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustCreate(t, dir)
	mustAppend(t, s, "c1", StatusOK, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A complete last line whose newline never reached the disk is data, not damage.
	path := filepath.Join(dir, CasesFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if run := mustRead(t, dir); len(run.Cases) != 1 || len(run.Samples) != 1 || len(run.Warnings) != 0 {
		t.Fatalf("Read: %d cases, %d samples, warnings %q", len(run.Cases), len(run.Samples), run.Warnings)
	}
	s2, run, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !warningsContain(run.Warnings, []string{"added the missing newline after line 1"}) {
		t.Errorf("Resume warnings %q", run.Warnings)
	}
	mustAppend(t, s2, "c2", StatusOK, 1)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if run := mustRead(t, dir); len(run.Cases) != 2 || len(run.Samples) != 2 {
		t.Errorf("after resume: %d cases, %d samples", len(run.Cases), len(run.Samples))
	}
}

func TestReadCorruptMiddleLine(t *testing.T) {
	t.Parallel()
	for _, name := range []string{SamplesFile, CasesFile} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := mustCreate(t, dir)
			mustAppend(t, s, "c1", StatusOK, 1)
			appendRaw(t, dir, name, "{not json}\n\n")
			mustAppend(t, s, "c2", StatusOK, 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(dir, name) + ":2: "
			if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Read error %v, want one naming %s", err, want)
			}
			if _, _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Resume error %v, want one naming %s", err, want)
			}
		})
	}
}

func TestReadSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version string
		wantErr string // "" for success
	}{
		{name: "current", version: SchemaVersion},
		{name: "newer minor", version: "meshbench.dev/results/v1.3"},
		{name: "unknown major", version: "meshbench.dev/results/v2", wantErr: `unsupported schema version "meshbench.dev/results/v2"`},
		{name: "major 10 is not 1", version: "meshbench.dev/results/v10", wantErr: "unsupported schema version"},
		{name: "missing", version: "", wantErr: "is not a meshbench results schema"},
		{name: "foreign", version: "example.com/v1", wantErr: "is not a meshbench results schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			body := `{"schemaVersion":"` + tt.version + `","runID":"r","start":"2026-11-30T10:00:00Z"}`
			if err := os.WriteFile(filepath.Join(dir, RunFile), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(dir)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Read: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Read error %v, want %q", err, tt.wantErr)
			}
		})
	}

	t.Run("summary of an unknown major", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustCreate(t, dir)
		if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(`{"schemaVersion":"meshbench.dev/results/v2"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), SummaryFile) {
			t.Errorf("Read error %v, want one naming %s", err, SummaryFile)
		}
	})
	t.Run("no run", func(t *testing.T) {
		t.Parallel()
		if _, err := Read(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read of an empty directory: %v, want fs.ErrNotExist", err)
		}
	})
}

func TestDoneCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustCreate(t, dir)
	for _, c := range []struct {
		id     string
		status Status
	}{
		{"ok", StatusOK},
		{"skipped", StatusSkipped},
		{"failed", StatusFailed},
		{"failed-then-ok", StatusFailed},
		{"ok-then-failed", StatusOK},
		{"failed-then-ok", StatusOK},
		{"ok-then-failed", StatusFailed},
	} {
		mustAppend(t, s, c.id, c.status, 2)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	run := mustRead(t, dir)
	done := run.DoneCases()
	var got []string
	for id, c := range done {
		got = append(got, id+":"+string(c.Status)+":"+string(rune('0'+c.Attempt)))
	}
	slices.Sort(got)
	want := []string{"failed-then-ok:ok:2", "ok:ok:1", "skipped:skipped:1"}
	if !slices.Equal(got, want) {
		t.Errorf("DoneCases = %q, want %q", got, want)
	}
	// Samples: only each case's latest attempt counts (2 samples per case, 5 case IDs).
	count := map[string]int{}
	for _, smp := range run.Samples {
		count[smp.CaseID]++
		if smp.CaseID == "failed-then-ok" && smp.Attempt != 2 {
			t.Errorf("superseded attempt %d of failed-then-ok kept", smp.Attempt)
		}
	}
	if len(run.Samples) != 10 || len(run.Cases) != 7 {
		t.Errorf("%d samples %v, %d cases; want 10, 7", len(run.Samples), count, len(run.Cases))
	}
}

func TestResumeContinuesAttempts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustCreate(t, dir)
	mustAppend(t, s, "c1", StatusFailed, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash during an atomic write leaves a temporary file; Resume removes it.
	if err := os.WriteFile(filepath.Join(dir, ".tmp-run.json.123"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, run, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.DoneCases()) != 0 || !warningsContain(run.Warnings, []string{"removed leftover temporary file"}) {
		t.Errorf("resumed run: done %v, warnings %q", run.DoneCases(), run.Warnings)
	}
	mustAppend(t, s2, "c1", StatusOK, 1)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	run = mustRead(t, dir)
	if c := run.DoneCases()["c1"]; c.Status != StatusOK || c.Attempt != 2 || len(run.Samples) != 1 || run.Samples[0].Attempt != 2 {
		t.Errorf("c1 = %+v, samples %+v", c, run.Samples)
	}
}

// TestSummarizeFromStore checks the pieces fit: what Read returns is what Summarize expects.
func TestSummarizeFromStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustCreate(t, dir)
	mustAppend(t, s, "c1", StatusFailed, 3)
	mustAppend(t, s, "c1", StatusOK, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	run := mustRead(t, dir)
	sum := Summarize(run.Meta, run.Samples, run.Cases, SummaryOptions{})
	n := 0 // the latest attempt's two samples (one per node)
	for _, se := range sum.Series {
		if se.Component == ComponentZtunnel {
			n += se.N
		}
	}
	if n != 2 || len(sum.Cases) != 1 || sum.Cases[0].Attempt != 2 {
		t.Errorf("summary = %s", mustJSON(t, sum))
	}
}

// FuzzResume: whatever bytes a crash leaves at the end of samples.jsonl, Read either fails naming file:line or
// succeeds, and after a successful Resume the next case is appended to a valid file.
func FuzzResume(f *testing.F) {
	f.Add([]byte(`{"caseID":"c1","attem`))
	f.Add([]byte("\x00\x00\x00"))
	f.Add([]byte("{}\n{\n"))
	f.Add([]byte(`{"runID":"run-1","caseID":"c9","attempt":4}`))
	f.Add([]byte("\n\n  \n"))
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		s := mustCreate(t, dir)
		mustAppend(t, s, "c1", StatusOK, 2)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		appendRaw(t, dir, SamplesFile, string(tail))
		if _, err := Read(dir); err != nil {
			if !strings.Contains(err.Error(), SamplesFile+":") {
				t.Fatalf("Read error without file:line: %v", err)
			}
			return
		}
		s2, _, err := Resume(dir)
		if err != nil {
			t.Fatalf("Resume after a successful Read: %v", err)
		}
		mustAppend(t, s2, "c2", StatusOK, 1)
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		run := mustRead(t, dir)
		for _, w := range run.Warnings {
			if strings.Contains(w.Message, "truncated") {
				t.Fatalf("not repaired: %q", w)
			}
		}
		if d := run.DoneCases(); d["c1"].Attempt != 1 || d["c2"].Status != StatusOK {
			t.Fatalf("done cases %+v", d)
		}
	})
}

// TestDoneCasesRunsNodeSkipsAgain: a case skipped for a node that was not Ready is not done (the node may be back);
// a case skipped for a lasting reason is.
func TestDoneCasesRunsNodeSkipsAgain(t *testing.T) {
	t.Parallel()
	run := &Run{Cases: []CaseResult{
		{CaseID: "node", Status: StatusSkipped, Reason: "node node2 not Ready", Facts: map[FactKey]string{FactSkippedNode: "node2"}},
		{CaseID: "plan", Status: StatusSkipped, Reason: "only one node"},
	}}
	if got := slices.Sorted(maps.Keys(run.DoneCases())); !slices.Equal(got, []string{"plan"}) {
		t.Errorf("DoneCases = %q, want only the plan's skip", got)
	}
}

// TestReadValueNotANumber: encoding/json reads "value": null (what JSON encoders other than Go's write for NaN) and
// a line without "value" as 0. Read must never hand out that 0: the sample is left out with a warning naming
// file:line and the sample, the other samples of the case are kept, and a null in a superseded attempt is not
// worth a warning (its samples are not used anyway).
func TestReadValueNotANumber(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustCreate(t, dir)
	res, samples := caseAndSamples("c1", StatusOK, 3)
	for i := range samples {
		samples[i].RunID, samples[i].CaseID, samples[i].Attempt = "run-1", "c1", 1
	}
	lines := strings.Split(strings.TrimSuffix(string(encodeLines(t, samples)), "\n"), "\n")
	lines[1] = strings.Replace(lines[1], `"value":1.5`, `"value":null`, 1)
	lines[2] = strings.Replace(lines[2], `"value":2.5,`, ``, 1)
	if !strings.Contains(lines[1], `"value":null`) || strings.Contains(lines[2], `"value"`) {
		t.Fatalf("test lines not rewritten: %q", lines)
	}
	appendRaw(t, dir, SamplesFile, strings.Join(lines, "\n")+"\n")
	res.RunID, res.Attempt = "run-1", 1
	appendRaw(t, dir, CasesFile, string(mustJSON(t, res))+"\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	run := mustRead(t, dir)
	if len(run.Samples) != 1 || run.Samples[0].Value != 0.5 {
		t.Errorf("samples %+v, want only the one with a value (0.5)", run.Samples)
	}
	path := filepath.Join(dir, SamplesFile)
	want := []string{path + `:2: case "c1" ztunnel cpu avg: "value" is null, not a number`, path + `:3: case "c1" ztunnel cpu avg: no "value"`}
	if !warningsContain(run.Warnings, want) {
		t.Errorf("warnings %q, want %q", run.Warnings, want)
	}
}

// TestReadValueNotANumberCounted: a file full of nulls names the first lines and counts the rest in one warning.
func TestReadValueNotANumberCounted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustCreate(t, dir)
	res, samples := caseAndSamples("c1", StatusOK, maxLineWarnings+5)
	for i := range samples {
		samples[i].RunID, samples[i].CaseID, samples[i].Attempt = "run-1", "c1", 1
	}
	text := strings.ReplaceAll(string(encodeLines(t, samples)), `"value":`, `"value":null,"was":`)
	appendRaw(t, dir, SamplesFile, text)
	res.RunID, res.Attempt = "run-1", 1
	appendRaw(t, dir, CasesFile, string(mustJSON(t, res))+"\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	run := mustRead(t, dir)
	if len(run.Samples) != 0 || len(run.Warnings) != maxLineWarnings+1 ||
		!strings.Contains(run.Warnings[maxLineWarnings].Message, "5 more samples without a number left out (25 in all") {
		t.Errorf("%d samples, warnings %q", len(run.Samples), run.Warnings)
	}
}
