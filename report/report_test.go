package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	"github.com/meshbench/meshbench/results"
)

func readRun(t *testing.T, name string) *results.Run {
	t.Helper()
	run, err := results.Read(filepath.Join(fixturesDir, name))
	if err != nil {
		t.Fatalf("read fixture %s (go test ./report -run TestFixtures -update creates it): %v", name, err)
	}
	return run
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func TestSampleReportGolden(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "sample"))
	md := rep.Markdown()
	golden(t, "sample/report.md", md)
	golden(t, "sample/cases.csv", rep.casesCSV())
	if !bytes.Equal(md, Build(readRun(t, "sample")).Markdown()) {
		t.Error("two renders of the same run differ")
	}
}

func TestSampleReportContent(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "sample"))
	md := string(rep.Markdown())
	for _, want := range []string{
		"## Run facts", "v1.37.2", "Istio | 1.28.1", "scrape interval 15s", "idle 5m0s, load 10m0s",
		"Resource usage per component", "Topology single", "Topology multi8",
		"ambient vs sidecar", "Cost per 1000 requests per second", "millicores/krps",
		"Added latency vs none", "Pod network", "| host | tcp | throughput |", "iperf3", "netperf",
		"not measured (see note 1)", "Note 1: service crr not measured: failed (case cni/service/crr): netperf TCP\\_CRR to ClusterIP",
		"Failed and skipped cases", "connection refused 3 times",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "figures are not Istio's") {
		t.Error("a real Istio run must not carry the stand-in banner")
	}
	// No empty table cell anywhere: every missing value says why.
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "|") && (strings.Contains(line, "|  |") || strings.Contains(line, "| |")) {
			t.Errorf("line %d has an empty cell: %s", i+1, line)
		}
	}
	if rep.recomputed {
		t.Error("sample has a summary.json; Build must use it")
	}
}

func TestStandInBanner(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "aa-1"))
	md := string(rep.Markdown())
	first := md[:min(len(md), 600)]
	if !strings.Contains(first, "data plane: test stand-in, figures are not Istio's") {
		t.Errorf("stand-in banner missing from the top of report.md:\n%s", first)
	}
	if !strings.Contains(first, "hack/localistio stand-ins") {
		t.Error("run notes missing from the banner")
	}
	html := string(rep.htmlPage())
	if !strings.Contains(html, `<div class="banner" role="alert" id="banner">`) {
		t.Error("HTML banner missing")
	}

	// Notes alone (real Istio) still raise a banner.
	run := readRun(t, "sample")
	run.Meta.Notes = []string{"Prometheus restarted during repetition 2"}
	b := Build(run).Banner()
	if len(b) != 2 || !strings.Contains(b[1], "Prometheus restarted") {
		t.Errorf("banner = %q", b)
	}
}

func TestRecomputeWithoutSummary(t *testing.T) {
	t.Parallel()
	run := readRun(t, "aa-1")
	want := Build(run).Markdown()
	run.Summary = nil
	rep := Build(run)
	if !rep.recomputed {
		t.Fatal("recomputed = false without summary.json")
	}
	got := rep.Markdown()
	if !strings.Contains(string(got), "summary.json was missing") {
		t.Error("report does not say the summary was recomputed")
	}
	if len(got) < len(want)/2 {
		t.Errorf("recomputed report is much shorter (%d vs %d bytes)", len(got), len(want))
	}
}

func TestCSVs(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "sample"))
	for _, tc := range []struct {
		name   string
		data   []byte
		header string
		minRow int
	}{
		{seriesFile, rep.seriesCSV(), "table,topology,mode,load,window,component,metric,stat,unit,labels,n,mean", len(rep.Summary.Series)},
		{deltasFile, rep.deltasCSV(), "table,base,other,topology,mode,load,window", len(rep.Summary.Deltas)},
		{casesFile, rep.casesCSV(), "case,status,mode,topology,load,repetition,attempt,start,end,reason", len(rep.Cases)},
	} {
		rows, err := csv.NewReader(bytes.NewReader(tc.data)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.HasPrefix(strings.Join(rows[0], ","), tc.header) {
			t.Errorf("%s header = %v", tc.name, rows[0])
		}
		if len(rows)-1 < tc.minRow {
			t.Errorf("%s has %d rows, want >= %d", tc.name, len(rows)-1, tc.minRow)
		}
	}
	if !bytes.Contains(rep.casesCSV(), []byte("cni/service/crr,failed")) {
		t.Error("cases.csv lacks the failed case")
	}
}

func TestFilesAndWrite(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "sample"))
	files := rep.Files()
	names := map[string]bool{}
	svgs := 0
	for _, f := range files {
		if names[f.Name] {
			t.Errorf("duplicate output %s", f.Name)
		}
		names[f.Name] = true
		if strings.HasPrefix(f.Name, chartsDir+"/") {
			svgs++
		}
	}
	for _, n := range []string{MarkdownFile, htmlFile, seriesFile, deltasFile, casesFile} {
		if !names[n] {
			t.Errorf("missing %s", n)
		}
	}
	// 2 topologies x (idle, load) x (cpu, memory) + 2 latency + 4 network tests (tcp, udp, rr, crr).
	if svgs != 8+2+4 {
		t.Errorf("%d charts, want 14", svgs)
	}
	dir := t.TempDir()
	paths, err := Write(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(files) {
		t.Fatalf("wrote %d of %d files", len(paths), len(files))
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil || !bytes.Equal(md, files[0].Data) {
		t.Errorf("report.md on disk differs: %v", err)
	}
	// Every chart the Markdown links exists.
	for _, line := range strings.Split(string(md), "\n") {
		if i := strings.Index(line, "](charts/"); i >= 0 {
			p := strings.TrimSuffix(line[i+2:], ")")
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				t.Errorf("linked chart %s: %v", p, err)
			}
		}
	}
}

func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	html := string(Build(readRun(t, "sample")).htmlPage())
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "src="} {
		if bad == "http://" {
			// The only URL is the Prometheus address in the run facts and the SVG namespace.
			html2 := strings.ReplaceAll(strings.ReplaceAll(html, "http://www.w3.org/2000/svg", ""), "http://prometheus.monitoring.svc:9090", "")
			if strings.Contains(html2, bad) {
				t.Errorf("report.html references %s", bad)
			}
			continue
		}
		if strings.Contains(html, bad) {
			t.Errorf("report.html contains %q: it must be self-contained", bad)
		}
	}
	if n := strings.Count(html, "<svg "); n != 14 {
		t.Errorf("%d inline SVGs, want 14", n)
	}
}

func TestCaseWarnings(t *testing.T) {
	t.Parallel()
	cs := func(id string, w ...string) results.CaseResult {
		return results.CaseResult{CaseID: id, CollectorWarnings: w}
	}
	got := caseWarnings([]results.CaseResult{
		cs("a", "load window 10s is shorter than the rate range 20s", "app cpu: average 3 lies outside"),
		cs("b"),
		cs("c", "load window 10s is shorter than the rate range 20s"),
		{CaseID: "d"},
	})
	want := []string{
		"load window 10s is shorter than the rate range 20s (case a, c)",
		"app cpu: average 3 lies outside (case a)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("caseWarnings =\n%q\nwant\n%q", got, want)
	}
}

// A case measured again after an incomplete window says so in the report's warnings, with each discarded
// measurement's reason.
func TestRemeasuredWarnings(t *testing.T) {
	t.Parallel()
	got := remeasured([]results.CaseResult{
		{CaseID: "a", Facts: map[results.FactKey]string{results.FactKey(string(results.FactAttempts)): "3", "attempt-1": "load window x incomplete", "attempt-2": "idle window y incomplete"}},
		{CaseID: "b", Facts: map[results.FactKey]string{}},
	})
	want := []string{
		"case a was measured again (measurement 1 of 3 not kept: load window x incomplete)",
		"case a was measured again (measurement 2 of 3 not kept: idle window y incomplete)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("remeasured =\n%q\nwant\n%q", got, want)
	}
}

// Error answers' latency (loadgen's error-latency samples) gets its own table in the latency section, for the modes
// that had errors, and never enters the 2xx latency table or chart.
func TestErrorLatencyTable(t *testing.T) {
	t.Parallel()
	run := readRun(t, "sample")
	sum := *run.Summary
	sum.Series = slices.Clone(sum.Series)
	for _, st := range []struct {
		stat string
		mean float64
	}{{"p50", 0.4172}, {"p99", 0.9311}} {
		sum.Series = append(sum.Series, results.Series{Key: results.Key{Topology: "single", Mode: "sidecar", Load: "1000", Window: results.WindowLoad,
			Component: results.ComponentLoadgen, Metric: results.MetricErrLatency, Stat: results.Stat(st.stat), Unit: "ms"}, N: 3, Mean: st.mean,
			CI: &results.Interval{Low: st.mean - 0.01, High: st.mean + 0.01}, Values: []float64{st.mean - 0.01, st.mean, st.mean + 0.01}})
	}
	run.Summary = &sum
	md := string(Build(run).Markdown())
	section := md[strings.Index(md, "## Latency"):]
	section = section[:strings.Index(section, "\n## ")]
	want := "**Latency of error answers (non-2xx and connection errors), kept out of the table above; only modes that had errors**\n\n" +
		"| mode | p50 (ms) | p99 (ms) |\n|---|---:|---:|\n| sidecar | 0.417 ± 0.010 | 0.931 ± 0.010 |\n"
	if !strings.Contains(section, want) {
		t.Errorf("latency section lacks the error table %q:\n%s", want, section)
	}
	if strings.Count(section, "Latency of error answers") != 1 {
		t.Error("the error table belongs to topology single only")
	}
	plain := string(Build(readRun(t, "sample")).Markdown())
	if strings.Contains(plain, "Latency of error answers") {
		t.Error("a run without error-latency samples must not show the error table")
	}
}

// TestImpossibleResourceRow: an average above the max (or below the min) cannot come from consistent data (the
// quickstart's CNI idle row read min 0.492, avg 0.549, max 0.528): min and max are not shown as figures, the average
// (over the whole window) is, and a note says why.
func TestImpossibleResourceRow(t *testing.T) {
	t.Parallel()
	run := readRun(t, "sample")
	sum := *run.Summary
	sum.Series = slices.Clone(sum.Series)
	unit := ""
	for _, x := range sum.Series {
		if x.Metric == "cpu" && isResource(x) {
			unit = string(x.Unit)
			break
		}
	}
	add := func(mode, stat string, v float64) {
		sum.Series = append(sum.Series, results.Series{Key: results.Key{Topology: "sparse", Mode: results.Mode(mode), Window: results.WindowIdle,
			Component: results.ComponentApp, Metric: "cpu", Stat: results.Stat(stat), Unit: results.Unit(unit)}, N: 3, Mean: v, Min: v, Max: v,
			CI: &results.Interval{Low: v - 0.01, High: v + 0.01}, Values: []float64{v, v, v}})
	}
	add("none", "min", 0.492)
	add("none", "avg", 0.549)
	add("none", "max", 0.528)
	add("sidecar", "min", 0.492) // consistent: shown as figures
	add("sidecar", "avg", 0.5)
	add("sidecar", "max", 0.528)
	run.Summary = &sum
	md := string(Build(run).Markdown())
	section := md[strings.Index(md, "### Topology sparse"):]
	section = section[:strings.Index(section, "\n## ")]
	if want := "| none | idle | app | n/a: too sparse | n/a: too sparse | 0.549 ± 0.010 |"; !strings.Contains(section, want) {
		t.Errorf("impossible row: want %q in\n%s", want, section)
	}
	if want := "| sidecar | idle | app | 0.492 | 0.528 | 0.500 ± 0.010 |"; !strings.Contains(section, want) {
		t.Errorf("consistent row: want %q in\n%s", want, section)
	}
	if !strings.Contains(section, "the average lies outside [min, max]") {
		t.Errorf("the table must explain n/a: too sparse:\n%s", section)
	}
	if strings.Contains(section, "| none | idle | app | 0.492") {
		t.Errorf("the impossible min is shown as a figure:\n%s", section)
	}
}

// TestInterruptedReport: a run of 4 cases interrupted by SIGINT after the first must not read as a complete run
// ("1 cases: 1 ok, 0 failed, 0 skipped ... No case failed or was skipped"): it says where it stopped and lists the
// cases not run, in the banner, the facts and the cases section (issue 15 section 2).
func TestInterruptedReport(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "interrupted"))
	md := string(rep.Markdown())
	golden(t, "interrupted/report.md", []byte(md))
	for _, want := range []string{
		"this run was interrupted after 1 of 4 cases (SIGINT, in load of case single/sidecar/1000/r1): its figures cover the recorded cases only (meshbench run --resume RUN\\_DIR runs the rest)",
		"| interrupted | interrupted after 1 of 4 cases (SIGINT, in load of case single/sidecar/1000/r1) at 2026-11-27T03:24:45Z |",
		"1 cases recorded: 1 ok, 0 failed, 0 skipped",
		"### Cases not run",
		"| single/sidecar/1000/r1 | interrupted in load: not recorded |",
		"| single/ambient/1000/r1 | not reached |",
		"| single/waypoint/1000/r1 | not reached |",
		"No recorded case failed or was skipped.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, bad := range []string{"1 cases: 1 ok", "No case failed or was skipped"} {
		if strings.Contains(md, bad) {
			t.Errorf("an interrupted run's report reads as complete: %q", bad)
		}
	}
	html := string(rep.htmlPage())
	if !strings.Contains(html, "interrupted after 1 of 4 cases (SIGINT") || !strings.Contains(html, "single/waypoint/1000/r1") {
		t.Error("report.html does not mark the interruption or list the cases not run")
	}
}

// TestResumedReport: the resumed run completed, so the mark is gone, and "took" is the sum of the two
// invocations' spans, not first start to last end (which would count the 3 hours between them).
func TestResumedReport(t *testing.T) {
	t.Parallel()
	run := readRun(t, "resumed")
	rep := Build(run)
	md := string(rep.Markdown())
	golden(t, "resumed/report.md", []byte(md))
	m := run.Meta
	if m.Interrupted != nil || len(m.Invocations) != 2 {
		t.Fatalf("resumed run.json: interrupted %+v, %d invocations", m.Interrupted, len(m.Invocations))
	}
	first, second := m.Invocations[0], m.Invocations[1]
	active := first.End.Sub(first.Start) + second.End.Sub(second.Start)
	wall := m.End.Sub(m.Start)
	if wall-active < 3*time.Hour {
		t.Fatalf("fixture: wall %s active %s: the gap should be 3h", wall, active)
	}
	if want := "(took " + active.Round(time.Second).String() + ")"; !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q", want)
	}
	if strings.Contains(md, wall.Round(time.Second).String()) {
		t.Errorf("report.md shows the wall-clock span %s as took", wall)
	}
	for _, want := range []string{"| invocations | 2 (the first run and 1 --resume", "interrupted, SIGINT", "4 cases: 4 ok, 0 failed, 0 skipped", "No case failed or was skipped."} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "interrupted after") || strings.Contains(md, "Cases not run") {
		t.Error("a completed resumed run still reads as interrupted")
	}
}
