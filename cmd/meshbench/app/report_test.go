package app

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

func TestReportWritesFiles(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, errOut := run(t, "report", fixtureRun("sample"), "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, name := range []string{"report.md", "report.html", "series.csv", "deltas.csv", "cases.csv", "charts/cni-tcp-throughput.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !strings.Contains(stdout, filepath.Join(out, name)) {
			t.Errorf("stdout does not list %s", name)
		}
	}
}

func TestReportStandInWarnsAndPushes(t *testing.T) {
	t.Parallel()
	var pushes atomic.Int32
	var path atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		pushes.Add(1)
		path.Store(r.URL.Path)
	}))
	defer srv.Close()
	code, _, errOut := run(t, "report", fixtureRun("aa-1"), "--no-files", "--push", srv.URL, "--push-job", "nightly", "--push-instance", "ci")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "figures are not Istio's") {
		t.Errorf("no stand-in warning on stderr:\n%s", errOut)
	}
	if pushes.Load() != 1 || path.Load() != "/metrics/job/nightly/instance/ci" {
		t.Errorf("pushes %d to %v", pushes.Load(), path.Load())
	}
}

func TestReportBadInput(t *testing.T) {
	t.Parallel()
	code, _, _ := run(t, "report", fixtureRun("missing"), "--output-dir", t.TempDir())
	if code != exitBadInput {
		t.Errorf("missing run dir: exit %d, want %d", code, exitBadInput)
	}
}

func TestReportCombinesMeshAndCNIRuns(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, _, errOut := run(t, "report", fixtureRun("cni-local"), fixtureRun("mesh-local"), "--output-dir", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "# meshbench report: 20261128-030000-mesh") || !strings.Contains(string(md), "## Pod network underneath (cni run 20261128-020000-cni)") {
		t.Errorf("report.md is not the combined report:\n%.600s", md)
	}
}

func TestReportRefusesToCombine(t *testing.T) {
	t.Parallel()
	// The cni run of another cluster: the same files with another Kubernetes version in run.json.
	other := copyRun(t, "cni-local", func(file string, data []byte) []byte {
		if file == "run.json" {
			data = []byte(strings.Replace(string(data), `"kubernetesVersion": "v1.37.2"`, `"kubernetesVersion": "v1.36.0"`, 1))
		}
		return data
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		// sample is another cluster (profile default) but the same node names and version: two mesh runs is the refusal.
		{"two mesh runs", []string{fixtureRun("mesh-local"), fixtureRun("sample")}, "needs one mesh run"},
		{"other cluster", []string{fixtureRun("mesh-local"), other}, "not measured on the same cluster (Kubernetes v1.37.2 vs v1.36.0)"},
		{"--latest with two", []string{fixtureRun("mesh-local"), fixtureRun("cni-local"), "--latest"}, "--latest takes one directory"},
	} {
		code, _, errOut := run(t, append(append([]string{"report"}, tt.args...), "--output-dir", t.TempDir())...)
		if code != exitBadInput || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", tt.name, code, exitBadInput, tt.want, errOut)
		}
	}
}

// TestReportComputesMissingSummary (issue 29 §2.8): on a run without summary.json (a crash before the end: here
// capacity's synthetic run capacity-gaps) the report computes the summary in memory and says so, and the run
// directory still has no summary.json: a reading command does not write the run's record. docs/results.md says
// exactly that.
func TestReportComputesMissingSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"run.json", "samples.jsonl", "cases.jsonl"} {
		data, err := os.ReadFile(filepath.Join(fixtureRun("capacity-gaps"), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := run(t, "report", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil || !strings.Contains(string(md), "summary.json was missing: the summary was computed from samples.jsonl for this report") {
		t.Errorf("report.md does not say the summary was computed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("summary.json after meshbench report: %v, want none", err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `summary.json` |") {
			row = line
		}
	}
	if strings.Contains(row, "by `meshbench report`") || !strings.Contains(string(doc), "compute the summary in memory") {
		t.Errorf("docs/results.md does not say what meshbench report does without summary.json:\n%s", row)
	}
}

// TestReportShow: --show prints the sections asked for as terminal text on stdout, which is what make demo's result
// screen shows (it printed raw <a id="..."></a> anchors cut out of report.md, issue 29 section 3); bad section
// names and a machine output format are bad input.
func TestReportShow(t *testing.T) {
	t.Parallel()
	code, stdout, errOut := run(t, "report", fixtureRun("sample"), "--no-files", "--show", "headlines,modes")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.HasPrefix(stdout, "Headlines\n=========\n") || !strings.Contains(stdout, "\nChange between modes\n") ||
		strings.Contains(stdout, "<a id=") || strings.Contains(stdout, "|---") || strings.Contains(stdout, "Per workload") {
		t.Errorf("--show headlines,modes printed:\n%s", stdout)
	}
	code, stdout, errOut = run(t, "report", fixtureRun("sample"), "--no-files", "--show", "headlines,capacity")
	if code != exitOK || !strings.Contains(errOut, "has no section capacity") || !strings.HasPrefix(stdout, "Headlines\n") {
		t.Errorf("a section the run lacks: exit %d\n%s\n%s", code, errOut, stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--show", "headline"}, `--show: no report section "headline": use all or some of facts, headlines,`},
		{[]string{"--show", "headlines", "-o", "json"}, "--show prints text for a terminal: it cannot be combined with --output json"},
	} {
		code, _, errOut := run(t, append([]string{"report", fixtureRun("sample"), "--no-files"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestDemoResultScreen runs the command make demo's result screen runs (hack/localcluster/demo.sh, with the run
// directory replaced by a fixture run): the headlines and the change between modes as terminal text, without the
// HTML anchors and Markdown tables the screen used to cut out of report.md.
func TestDemoResultScreen(t *testing.T) {
	t.Parallel()
	demo, err := os.ReadFile(filepath.Join("..", "..", "..", "hack", "localcluster", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*"\$MESHBENCH" (report "\$dir" [^|>\n]*)`).FindSubmatch(demo)
	if m == nil {
		t.Fatal(`demo.sh does not print the report with "$MESHBENCH" report "$dir" ... (the terminal rendering of package report)`)
	}
	args := strings.Fields(strings.ReplaceAll(string(m[1]), `"$dir"`, fixtureRun("sample")))
	code, stdout, errOut := run(t, args...)
	if code != exitOK {
		t.Fatalf("demo.sh's %v: exit %d\n%s", args, code, errOut)
	}
	if !strings.Contains(stdout, "Headlines\n=========\n") || !strings.Contains(stdout, "Change between modes\n") {
		t.Errorf("demo.sh's %v does not show the headlines and the change between modes:\n%s", args, stdout)
	}
	for _, bad := range []string{"<a id=", "|---", `\_`} {
		if strings.Contains(stdout, bad) {
			t.Errorf("demo.sh's %v prints %q: Markdown or HTML on a terminal", args, bad)
		}
	}
	// A run with caveats (stand-ins on its data plane): the screen says each once, at the top of the text (the
	// cold demo of 2026-12-06 printed them twice, once more on stderr).
	args = strings.Fields(strings.ReplaceAll(string(m[1]), `"$dir"`, fixtureRun("mesh-local")))
	code, stdout, errOut = run(t, args...)
	if code != exitOK || !strings.HasPrefix(stdout, "WARNING: ") {
		t.Fatalf("demo.sh's %v on a run with caveats: exit %d, want the caveats first\n%s\n%s", args, code, stdout, errOut)
	}
	screen := stdout + errOut
	for _, line := range strings.Split(stdout, "\n") {
		caveat, ok := strings.CutPrefix(line, "WARNING: ")
		if ok && strings.Count(screen, caveat) != 1 {
			t.Errorf("the caveat %q appears %d times on the screen:\n%s\n%s", caveat, strings.Count(screen, caveat), stdout, errOut)
		}
	}
}
