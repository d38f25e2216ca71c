package results

import (
	"fmt"
	"testing"
	"time"
)

// A variant's samples stay out of Series and the mode deltas; each variant figure is compared with the same figure of
// its plain mode, by Welch over the repetitions.
func TestSummarizeVariants(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var samples []Sample
	arms := []struct {
		mode    Mode
		variant string
		cpu     float64
	}{{ModeNone, "", 10}, {ModeSidecar, "", 100}, {ModeSidecar, "strict", 120}}
	for rep := 1; rep <= 3; rep++ {
		for i, a := range arms {
			start := t0.Add(time.Duration(rep*10+i) * time.Minute)
			w := Window{Kind: WindowLoad, Start: start, End: start.Add(time.Minute)}
			id := fmt.Sprintf("single.%s+%s.q100.r%d", a.mode, a.variant, rep)
			samples = append(samples,
				Sample{CaseID: id, Mode: a.mode, Variant: a.variant, Topology: "single", Load: "100", Repetition: rep, Window: w,
					Component: ComponentSidecar, Metric: MetricCPU, Stat: StatAvg, Unit: "millicores", Value: a.cpu + float64(rep)},
				Sample{CaseID: id, Mode: a.mode, Variant: a.variant, Topology: "single", Load: "100", Repetition: rep, Window: w,
					Source: "fortio", Component: ComponentLoadgen, Metric: MetricQPS, Stat: StatValue, Unit: UnitRPS, Value: 100})
		}
	}
	sum := Summarize(RunMeta{}, samples, nil, SummaryOptions{})
	for _, s := range sum.Series {
		if s.Variant != "" {
			t.Errorf("a variant's series in Series: %+v", s.Key)
		}
	}
	for _, d := range sum.Deltas {
		if d.Variant != "" || d.Component == ComponentSidecar && d.OtherMean != 102 {
			t.Errorf("mode delta %+v mixes in the variant", d)
		}
	}
	k := Key{Topology: "single", Mode: ModeSidecar, Variant: "strict", Load: "100", Window: WindowLoad, Component: ComponentSidecar,
		Metric: MetricCPU, Stat: StatAvg, Unit: "millicores"}
	if s := findSeries(t, sum.Variants, k); s.N != 3 || s.Mean != 122 {
		t.Errorf("variant series %+v", s)
	}
	var got *Delta
	for i := range sum.VariantDeltas {
		if sum.VariantDeltas[i].Key == k {
			got = &sum.VariantDeltas[i]
		}
	}
	if got == nil {
		t.Fatalf("no variant delta for %+v in %s", k, mustJSON(t, sum.VariantDeltas))
	}
	if got.Base != ModeSidecar || got.Other != ModeSidecar || got.BaseMean != 102 || got.OtherMean != 122 || got.Diff != 20 ||
		got.DiffCI == nil || !got.Significant || got.Percent == nil {
		t.Errorf("variant delta %s", mustJSON(t, got))
	}
	kk := k
	kk.Unit += perKRPSUnit
	if s := findSeries(t, sum.VariantPerKRPS, kk); s.Mean != 1220 {
		t.Errorf("variant per-krps %+v", s)
	}
}
