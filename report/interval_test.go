package report

import (
	"testing"

	"github.com/meshbench/meshbench/results"
)

// Below results.MinIntervalN repetitions a figure shows no interval and a change no verdict: the quickstart's CPU
// 0.720 ± 0.960 from 2 repetitions (a 95 % interval wider than the value) must not be shown, nor called significant.
func TestIntervalsNeedThreeRepetitions(t *testing.T) {
	t.Parallel()
	ci := func(lo, hi float64) *results.Interval { return &results.Interval{Low: lo, High: hi} }
	for _, tc := range []struct {
		name string
		s    results.Series
		want string
	}{
		{"one repetition", results.Series{N: 1, Mean: 0.72}, "0.720 (n=1: no interval)"},
		{"two repetitions", results.Series{N: 2, Mean: 0.72, CI: ci(-0.24, 1.68)}, "0.720 (n=2: no interval)"},
		{"three repetitions", results.Series{N: 3, Mean: 412, CI: ci(397, 427)}, "412.0 ± 15.00"},
	} {
		if got := fmtMean(tc.s); got != tc.want {
			t.Errorf("%s: fmtMean = %q, want %q", tc.name, got, tc.want)
		}
	}

	pct := func(v float64) *float64 { return &v }
	key := results.Key{Topology: "single", Window: results.WindowLoad, Component: results.ComponentMesh, Metric: "cpu", Stat: "avg", Unit: "millicores"}
	significant := results.Delta{Key: key, Base: "sidecar", Other: "ambient", Diff: -300, DiffCI: ci(-310, -290),
		Percent: pct(-68.8), PercentCI: ci(-70.1, -67.5), Significant: true}
	summary := func(nBase, nOther int) Report {
		b, o := results.Series{Key: key, N: nBase}, results.Series{Key: key, N: nOther}
		b.Mode, o.Mode = "sidecar", "ambient"
		other := o
		other.Mode, other.N = "none", 1 // a third mode's series does not count
		return Report{Summary: results.Summary{Series: []results.Series{b, other, o}}}
	}
	for _, tc := range []struct {
		name         string
		r            Report
		n            int
		change, verd string
		abs          string
	}{
		{"3 and 3", summary(3, 3), 3, "-68.80 % [-70.10, -67.50]", "significant", "-300.0 millicores [-310.0, -290.0]"},
		{"2 and 5", summary(2, 5), 2, "-68.80 %", "n/a: n=2: no interval", "-300.0 millicores (n=2: no interval)"},
		{"5 and 2", summary(5, 2), 2, "-68.80 %", "n/a: n=2: no interval", "-300.0 millicores (n=2: no interval)"},
		{"series missing", Report{}, 0, "-68.80 %", "n/a: n=0: no interval", "-300.0 millicores (n=0: no interval)"},
	} {
		n := tc.r.deltaN(significant)
		if n != tc.n {
			t.Errorf("%s: deltaN = %d, want %d", tc.name, n, tc.n)
		}
		change, verdict := deltaPctParts(significant, n)
		if change != tc.change || verdict != tc.verd {
			t.Errorf("%s: deltaPctParts = %q, %q; want %q, %q", tc.name, change, verdict, tc.change, tc.verd)
		}
		if got := fmtDeltaAbs(significant, n); got != tc.abs {
			t.Errorf("%s: fmtDeltaAbs = %q, want %q", tc.name, got, tc.abs)
		}
	}
}
