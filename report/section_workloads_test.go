package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestWorkloadSection: the sample run splits topology single by workload: the section ranks the workloads by their
// sidecars' CPU in sidecar mode (the fixture's shares: frontend, balancereader, ledgerwriter, ledger-db,
// accounts-db), in Markdown and HTML alike, and the component tables do not change; runs without per-workload
// figures have no such section.
func TestWorkloadSection(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "sample"))
	s, ok := rep.workloadsSection()
	if !ok || len(s.Blocks) != 3 || s.Blocks[2].Table == nil {
		t.Fatalf("section %+v", s)
	}
	tb := s.Blocks[2].Table
	var order []string
	for _, row := range tb.Rows {
		if !slices.Contains(order, row[0]) {
			order = append(order, row[0])
		}
		if row[1] == "none" && (row[3] != "none" || row[5] != "baseline") {
			t.Errorf("mode none row %q: want no sidecar and the baseline", row)
		}
		if row[1] == "sidecar" && (strings.HasPrefix(row[3], "none") || !strings.HasSuffix(row[5], " significant")) {
			t.Errorf("sidecar row %q: want the sidecar's CPU and a change vs none", row)
		}
	}
	want := []string{"Deployment/mb-single/frontend", "Deployment/mb-single/balancereader", "Deployment/mb-single/ledgerwriter",
		"StatefulSet/mb-single/ledger-db", "StatefulSet/mb-single/accounts-db"}
	if !slices.Equal(order, want) {
		t.Errorf("workloads %q, want %q", order, want)
	}
	if len(tb.Rows) != len(want)*4 {
		t.Errorf("%d rows, want one per workload and mode", len(tb.Rows))
	}
	html := string(rep.htmlPage())
	if !strings.Contains(html, `id="workloads"`) || !strings.Contains(html, "Deployment/mb-single/frontend") {
		t.Error("the HTML report lacks the per-workload section")
	}
	if !strings.Contains(string(rep.seriesCSV()), "workloads,single,sidecar,1000,load,sidecar-by-workload,cpu,avg,millicores,workload=Deployment/mb-single/frontend,3,") {
		t.Error("series.csv lacks the per-workload series")
	}

	// The component figures are those of the same run without the per-workload samples.
	run := readRun(t, "sample")
	run.Samples = slices.DeleteFunc(run.Samples, func(s results.Sample) bool { return results.IsWorkloadComponent(s.Component) })
	sum := results.Summarize(run.Meta, run.Samples, run.Cases, results.SummaryOptions{})
	run.Summary = &sum
	plain := Build(run)
	if _, ok := plain.workloadsSection(); ok {
		t.Error("a run without per-workload figures got the section")
	}
	strip := func(md string) string {
		i, j := strings.Index(md, `<a id="workloads">`), strings.Index(md, `<a id="per-krps">`)
		if i < 0 || j < i {
			return md
		}
		return md[:i] + md[j:]
	}
	got, base := strip(string(rep.Markdown())), string(plain.Markdown())
	got = strings.Replace(got, " · [Per workload](#workloads)", "", 1)
	if got != base {
		gl, bl := strings.Split(got, "\n"), strings.Split(base, "\n")
		for i := range min(len(gl), len(bl)) {
			if gl[i] != bl[i] {
				t.Errorf("per-workload samples changed the rest of the report: line %d\n got %s\nwant %s", i+1, gl[i], bl[i])
				break
			}
		}
	}
}
