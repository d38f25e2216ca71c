package report

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// A run at a fixed rate records response times (due -> done) beside the service times: the latency section and the
// headline show the response time and say so, with the service time in a table of its own; a run without them
// keeps the service time and says that too (TestSampleReportGolden).
func TestResponseTimeShownByDefault(t *testing.T) {
	t.Parallel()
	run := readRun(t, "sample")
	sum := run.Summary
	var extraS []results.Series
	for _, x := range sum.Series {
		if x.Metric == results.MetricLatency {
			x.Metric = results.MetricResponseTime
			x.Mean += 5
			extraS = append(extraS, x)
		}
	}
	var extraD []results.Delta
	for _, d := range sum.Deltas {
		if d.Metric == results.MetricLatency {
			d.Metric = results.MetricResponseTime
			extraD = append(extraD, d)
		}
	}
	if len(extraS) == 0 || len(extraD) == 0 {
		t.Fatal("the sample fixture has no latency series or deltas")
	}
	sum.Series = append(sum.Series, extraS...)
	sum.Deltas = append(sum.Deltas, extraD...)
	md := string(Build(run).Markdown())
	for _, want := range []string{
		"Client-side response time of successful (2xx) requests, from when each was due",
		"Service time of the same requests, from when each was sent",
		"to p99 response time (topology",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "to p99 latency (topology") {
		t.Error("the headline still shows the service time's p99 when response times were recorded")
	}
}

// A case whose load fell short of its rate is named in the report's warnings with both rates.
func TestShortLoadWarned(t *testing.T) {
	t.Parallel()
	run := readRun(t, "sample")
	run.Cases[0].LoadShortfall = results.ShortOf(200, 150)
	md := string(Build(run).Markdown())
	want := "case " + run.Cases[0].CaseID + " achieved 150 of the 200 requests per second it asked for (25.0 % short"
	if !strings.Contains(md, want) {
		t.Errorf("report lacks %q", want)
	}
	if got := shortLoads(readRun(t, "sample").Cases); len(got) != 0 {
		t.Errorf("warnings %q for a run that kept its rate", got)
	}
}
