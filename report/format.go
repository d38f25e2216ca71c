package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

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
		return signed(d.Diff) + " " + d.Unit + " (base is 0, no percent)", "n/a: no percent"
	case d.PercentCI == nil || n < results.MinIntervalN:
		return signed(*d.Percent) + " %", "n/a: " + noInterval(n)
	}
	change = signed(*d.Percent) + " % [" + signed(d.PercentCI.Low) + ", " + signed(d.PercentCI.High) + "]"
	if d.Significant {
		return change, "significant"
	}
	return change, "not significant"
}

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
