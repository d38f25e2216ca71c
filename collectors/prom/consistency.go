package prom

import (
	"fmt"

	"github.com/meshbench/meshbench/results"
)

// consistencyTolerance is how far (relative to the max) an average may lie outside [min, max] before it is reported.
// CounterStats and gaugeStats put the average within [min, max] by construction (the same samples, tiles that are
// rate points); the check stays as a guard for figures from elsewhere.
const consistencyTolerance = 0.05

// consistencyWarnings checks, per component, metric and labels, that every average lies within [min, max] (within
// consistencyTolerance of max) and returns one warning per violation, naming the figures and the fix. It is pure.
func consistencyWarnings(samples []results.Sample) []string {
	type key struct {
		component results.Component
		metric    results.Metric
		labels    string
	}
	type stats struct{ min, max, avg *float64 }
	byKey := map[key]*stats{}
	var order []key
	for i := range samples {
		s := &samples[i]
		k := key{s.Component, s.Metric, results.CanonicalLabels(s.Labels)}
		st := byKey[k]
		if st == nil {
			st = &stats{}
			byKey[k] = st
			order = append(order, k)
		}
		switch s.Stat {
		case results.StatMin:
			st.min = &s.Value
		case results.StatMax:
			st.max = &s.Value
		case results.StatAvg:
			st.avg = &s.Value
		}
	}
	var out []string
	for _, k := range order {
		st := byKey[k]
		if st.min == nil || st.max == nil || st.avg == nil {
			continue
		}
		lo, hi, avg := *st.min, *st.max, *st.avg
		slack := consistencyTolerance * max(hi, -lo, 0)
		if avg >= lo-slack && avg <= hi+slack {
			continue
		}
		what := string(k.component) + " " + string(k.metric)
		if k.labels != "" {
			what += " " + k.labels
		}
		out = append(out, fmt.Sprintf("%s: average %.4g lies outside [min %.4g, max %.4g] by more than %.0f%%: the counter samples are too sparse for this window (lengthen the window, or shorten the kubelet's cAdvisor --housekeeping-interval)",
			what, avg, lo, hi, 100*consistencyTolerance))
	}
	return out
}
