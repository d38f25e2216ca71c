package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// headlinesSection states study A's comparison in one sentence per topology and metric: the mesh total under load,
// each ambient mode against sidecar.
func (r Report) headlinesSection() (section, bool) {
	s := section{Title: "Headlines"}
	var items []string
	for _, d := range r.Summary.Deltas {
		if d.Component != results.ComponentMesh || d.Stat != results.StatAvg || d.Window != results.WindowLoad || d.Labels != "" ||
			d.Base != results.ModeSidecar || (d.Metric != results.MetricCPU && d.Metric != results.MetricMemory) {
			continue
		}
		items = append(items, fmt.Sprintf("%s vs %s, topology %s, %s: mesh %s %s → %s %s, %s%s", d.Other, d.Base, d.Topology,
			windowLabel(d.Window, d.Load), d.Metric, charts.FormatValue(d.BaseMean), charts.FormatValue(d.OtherMean), d.Unit, fmtDeltaPct(d, r.deltaN(d)),
			r.headlineCaveat(string(d.Base), string(d.Other))))
	}
	for _, d := range r.Summary.Deltas {
		if d.Base != results.ModeNone || d.Stat != results.StatP99 || d.Labels != "" || d.Window != results.WindowLoad ||
			d.Metric != r.latencyMetric(charts.LatencySelection{Topology: d.Topology, Load: d.Load}) {
			continue
		}
		what := "p99 latency"
		if d.Metric == results.MetricResponseTime {
			what = "p99 response time"
		}
		items = append(items, fmt.Sprintf("%s adds %s to %s (topology %s, %s)%s", d.Other, fmtDeltaAbs(d, r.deltaN(d)), what, d.Topology,
			windowLabel(d.Window, d.Load), r.headlineCaveat(string(d.Other))))
	}
	items = append(r.baselineHeadlines(), items...)
	if len(items) == 0 {
		return s, false
	}
	s.para("Mesh = sidecars, or ztunnel + waypoints, plus istiod (sum of window averages). Intervals are %s confidence intervals of the difference (Welch).", confPct(r.Summary.Confidence))
	s.list(items)
	return s, true
}

// headlineCaveat is what a headline comparing modes says of itself when a data-plane component of those modes is
// not Istio's own: " [built on a test stand-in: ztunnel; on upstream Envoy, a lower bound: sidecar]" ("" when every
// component is Istio's).
func (r Report) headlineCaveat(modes ...string) string {
	var standIn, upstream []string
	for _, m := range modes {
		for _, comp := range results.DataPlaneComponentsOfMode(results.Mode(m)) {
			switch r.dataPlaneOf(string(comp)).Kind {
			case results.DataPlaneStandIn:
				if !slices.Contains(standIn, string(comp)) {
					standIn = append(standIn, string(comp))
				}
			case results.DataPlaneUpstreamEnvoy:
				if !slices.Contains(upstream, string(comp)) {
					upstream = append(upstream, string(comp))
				}
			}
		}
	}
	var parts []string
	if len(standIn) > 0 {
		parts = append(parts, "built on a test stand-in, not Istio's cost: "+strings.Join(standIn, ", "))
	}
	if len(upstream) > 0 {
		parts = append(parts, "upstream Envoy, a lower bound of Istio's: "+strings.Join(upstream, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, "; ") + "]"
}
