package report

import (
	"fmt"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// variantRun is a run of none, sidecar and waypoint, each plain and with a variant, over three repetitions,
// summarised by results.Summarize: a new connection per request costs the app 20 % more CPU, the strict variant
// costs its sidecars 10 % more CPU, tracing every request 30 %, the 100 L7 rules add 2 ms to the p99.
func variantRun() Report {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	arms := []struct {
		mode          results.Mode
		variant, sets string
		proxy         results.Component
		cpu, p99      float64
	}{
		{results.ModeNone, "", "", results.ComponentApp, 200, 5},
		{results.ModeNone, "churn", "a new connection per request", results.ComponentApp, 240, 6},
		{results.ModeSidecar, "", "", results.ComponentSidecar, 100, 10},
		{results.ModeSidecar, "strict", "mTLS STRICT", results.ComponentSidecar, 110, 10},
		{results.ModeSidecar, "trace-100", "tracing at 100 % to the run's span sink", results.ComponentSidecar, 130, 11},
		{results.ModeWaypoint, "", "", results.ComponentWaypoint, 50, 8},
		{results.ModeWaypoint, "l7-100", "100 L7 authorization rules", results.ComponentWaypoint, 51, 10},
	}
	var samples []results.Sample
	var cases []results.CaseResult
	for rep := 1; rep <= 3; rep++ {
		for i, a := range arms {
			start := t0.Add(time.Duration(rep*10+i) * time.Minute)
			w := results.Window{Kind: results.WindowLoad, Start: start, End: start.Add(time.Minute)}
			arm := string(a.mode)
			if a.variant != "" {
				arm += "+" + a.variant
			}
			id := fmt.Sprintf("single.%s.q100.r%d", arm, rep)
			c := results.CaseResult{CaseID: id, Mode: a.mode, Variant: a.variant, Topology: "single", Load: "100", Repetition: rep, Status: results.StatusOK}
			if a.sets != "" && rep == 1 {
				c.Facts = map[results.FactKey]string{results.FactVariant: a.sets}
			}
			cases = append(cases, c)
			add := func(comp results.Component, m results.Metric, st results.Stat, u results.Unit, v float64) {
				samples = append(samples, results.Sample{CaseID: id, Mode: a.mode, Variant: a.variant, Topology: "single", Load: "100", Repetition: rep,
					Window: w, Component: comp, Metric: m, Stat: st, Unit: u, Value: v})
			}
			jitter := float64(rep) / 10
			add(a.proxy, results.MetricCPU, results.StatAvg, "millicores", a.cpu+jitter)
			add(results.ComponentLoadgen, results.MetricQPS, results.StatValue, results.UnitRPS, 100)
			add(results.ComponentLoadgen, results.MetricResponseTime, results.StatP50, "ms", 2+jitter)
			add(results.ComponentLoadgen, results.MetricResponseTime, results.StatP99, "ms", a.p99+jitter)
		}
	}
	sum := results.Summarize(results.RunMeta{}, samples, cases, results.SummaryOptions{})
	return Report{Summary: sum, Cases: cases}
}

// TestVariantsSectionGolden: per variant, the mesh total, the enforcing proxy and the response time against the plain
// mode, with the change's interval and verdict and the variant's settings.
func TestVariantsSectionGolden(t *testing.T) {
	t.Parallel()
	r := variantRun()
	text, missing := r.Text(sectionVariants)
	if len(missing) > 0 {
		t.Fatalf("no variants section: %v", missing)
	}
	golden(t, "variants/variants.txt", text)
	if _, ok := (Report{Summary: results.Summary{Series: r.Summary.Series}}).variantsSection(); ok {
		t.Error("a run without variants has a variants section")
	}
}
