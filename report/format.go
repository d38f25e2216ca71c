package report

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// confPct renders a confidence level as a percent ("95 %"); 0 is results.DefaultConfidence.
func confPct(c float64) string {
	if c == 0 {
		c = results.DefaultConfidence
	}
	return strconv.FormatFloat(100*c, 'f', -1, 64) + " %"
}

// deltaPctParts splits a delta into "−68.8 % [−70.1, −67.5]" and its verdict; n is deltaN (below
// results.MinIntervalN repetitions there is no interval and no verdict).
func deltaPctParts(d results.Delta, n int) (change, verdict string) {
	switch {
	case d.Percent == nil:
		return signed(d.Diff) + " " + string(d.Unit) + " (base is 0, no percent)", "n/a: no percent"
	case d.PercentCI == nil || n < results.MinIntervalN:
		return signed(*d.Percent) + " %", "n/a: " + noInterval(n)
	}
	change = signed(*d.Percent) + " % [" + signed(d.PercentCI.Low) + ", " + signed(d.PercentCI.High) + "]"
	if d.Significant {
		return change, "significant"
	}
	return change, "not significant"
}

// compareBy is -1, 0 or 1 as sorter (one of charts' canonical orders) puts a before, with or after b.
func compareBy(a, b string, sorter func([]string)) int {
	if a == b {
		return 0
	}
	xs := []string{a, b}
	sorter(xs)
	if xs[0] == a {
		return -1
	}
	return 1
}

// slug joins the non-empty parts with dashes into an HTML id: letters lower-cased, digits kept, anything else a dash.
func slug(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('-')
		}
		for _, c := range strings.ToLower(p) {
			if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
				b.WriteRune(c)
			} else {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}

// fmtEstimate renders an estimate like fmtMean renders a series.
func fmtEstimate(e results.Estimate) string {
	return fmtMean(results.Series{N: e.N, Mean: e.Mean, CI: e.CI})
}

// fmtCount renders a count: whole numbers without decimals (a mean over repetitions may not be one).
func fmtCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return charts.FormatValue(v)
}

// fmtMean renders a series' mean with the half width of its interval: "412 ± 15", or "412 (n=2: no interval)" below
// results.MinIntervalN repetitions (an interval from 2 is routinely wider than the value: 0.720 ± 0.960).
func fmtMean(s results.Series) string {
	if s.CI == nil || s.N < results.MinIntervalN {
		return charts.FormatValue(s.Mean) + " (" + noInterval(s.N) + ")"
	}
	half := (s.CI.High - s.CI.Low) / 2
	return charts.FormatValue(s.Mean) + " ± " + charts.FormatValue(half)
}

// noInterval says why a figure has no interval: "n=2: no interval".
func noInterval(n int) string { return "n=" + strconv.Itoa(n) + ": no interval" }

// fmtCI renders an interval: "[395, 425]".
func fmtCI(ci *results.Interval) string {
	if ci == nil {
		return "n/a (fewer than 2 observations)"
	}
	return "[" + charts.FormatValue(ci.Low) + ", " + charts.FormatValue(ci.High) + "]"
}

// signed renders v with an explicit sign.
func signed(v float64) string {
	if v > 0 || (v == 0 && !math.Signbit(v)) {
		return "+" + charts.FormatValue(v)
	}
	return charts.FormatValue(v)
}

// fmtDeltaPct renders a delta as "-68.8 % [-70.1, -67.5] significant"; n is deltaN.
func fmtDeltaPct(d results.Delta, n int) string {
	change, verdict := deltaPctParts(d, n)
	return change + " " + verdict
}

// fmtDeltaAbs renders a delta in its unit: "+1.10 ms [+0.9, +1.3]"; n is deltaN.
func fmtDeltaAbs(d results.Delta, n int) string {
	s := signed(d.Diff) + " " + string(d.Unit)
	if d.DiffCI == nil || n < results.MinIntervalN {
		return s + " (" + noInterval(n) + ")"
	}
	s += " [" + signed(d.DiffCI.Low) + ", " + signed(d.DiffCI.High) + "]"
	if !d.Significant {
		s += " not significant"
	}
	return s
}

func windowLabel(window, load string) string {
	if window == results.WindowIdle || load == "" {
		return window
	}
	return "load " + load + " qps"
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
