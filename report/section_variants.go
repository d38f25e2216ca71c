package report

import (
	"slices"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// variantComponents are the components whose cost a variant's table shows: the mesh total and the proxies that
// enforce a feature, then the app.
var variantComponents = []results.Component{results.ComponentMesh, results.ComponentSidecar, results.ComponentZtunnel,
	results.ComponentWaypoint, results.ComponentApp}

// variantsSection: what each variant (spec.variants: mesh features on top of a mode) costs in its mode: the
// variant's mean against the plain mode's, for CPU and memory per component and the load's response time, with the
// Welch interval of the change (results.Summary.VariantDeltas).
func (r Report) variantsSection() (section, bool) {
	s := section{Title: "What each feature costs"}
	var rows [][]string
	for _, d := range r.Summary.VariantDeltas {
		if d.Labels != "" || !variantFigure(d) {
			continue
		}
		change, verdict := deltaPctParts(d, r.variantN(d))
		rows = append(rows, []string{d.Topology, windowLabel(d.Window, d.Load), string(d.Mode), d.Variant, r.variantSettings(d.Variant),
			string(d.Component), variantMetricLabel(d), charts.FormatValue(d.BaseMean), charts.FormatValue(d.OtherMean), change, verdict})
	}
	if len(rows) == 0 {
		return s, false
	}
	s.para("Each variant is the same mode with mesh features added or the load sent another way (scenario spec.variants), measured like a mode: the same windows and repetitions, interleaved with the plain mode, its mesh settings verified before its windows (the proxies that enforce them took a listener update, an mTLS mode in effect, a request forced into a trace reached the run's span sink) and after them (the traces the load started, counted by the sink, match the sampling rate), its load settings proven from the load's own record (a socket per request, HTTP/2 answers). Variant minus plain mode, in percent of the plain mode's mean, with the %s confidence interval of the change (Welch); significant means the interval excludes 0. Every figure and the per-1000-rps comparisons are in summary.json (variantDeltas, variantPerKRPSDeltas).", confPct(r.Summary.Confidence))
	s.table(table{ID: "variant-deltas", Header: []string{"topology", "window", "mode", "variant", "settings", "component", "figure", "plain", "variant", "change [CI]", "verdict"},
		Numeric: []bool{false, false, false, false, false, false, false, true, true, true, false}, Rows: rows})
	return s, true
}

// variantFigure reports whether d is one of the table's figures: average CPU and memory of variantComponents, and
// the load's 2xx response time p50 and p99.
func variantFigure(d results.Delta) bool {
	switch d.Metric {
	case results.MetricCPU, results.MetricMemory:
		return d.Stat == results.StatAvg && slices.Contains(variantComponents, d.Component)
	case results.MetricResponseTime:
		return d.Component == results.ComponentLoadgen && (d.Stat == results.StatP50 || d.Stat == results.StatP99)
	}
	return false
}

func variantMetricLabel(d results.Delta) string {
	if d.Metric == results.MetricResponseTime {
		return "response time " + string(d.Stat) + " (" + string(d.Unit) + ")"
	}
	return string(d.Metric) + " avg (" + string(d.Unit) + ")"
}

// variantSettings is what the variant set, as its first case recorded it (results.FactVariant).
func (r Report) variantSettings(name string) string {
	for _, c := range r.Cases {
		if c.Variant == name && c.Facts[results.FactVariant] != "" {
			return c.Facts[results.FactVariant]
		}
	}
	return ""
}

// variantN is the smaller repetition count of d's variant and plain series.
func (r Report) variantN(d results.Delta) int {
	n := -1
	for _, list := range [][]results.Series{r.Summary.Series, r.Summary.Variants} {
		for _, s := range list {
			k := s.Key
			k.Variant = d.Variant
			if k == d.Key && (n < 0 || s.N < n) {
				n = s.N
			}
		}
	}
	return max(n, 0)
}
