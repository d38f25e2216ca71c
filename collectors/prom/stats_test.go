package prom

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// ser is a series of samples at t0 + ts[i] seconds.
func ser(pod string, ts, vs []float64) Series {
	s := Series{Namespace: "ns", Pod: pod, Sign: 1}
	for i := range ts {
		s.T = append(s.T, float64(t0.Unix())+ts[i])
		s.V = append(s.V, vs[i])
	}
	return s
}

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSeriesOfResets(t *testing.T) {
	t.Parallel()
	m := model.Matrix{{Metric: model.Metric{"namespace": "ns", "pod": "p"}, Values: []model.SamplePair{
		{Timestamp: 0, Value: 10}, {Timestamp: 5000, Value: 20}, {Timestamp: 10000, Value: 3}, {Timestamp: 15000, Value: 8},
	}}}
	got := SeriesOf(m, 1, true)
	if len(got) != 1 || !slices.Equal(got[0].V, []float64{10, 20, 23, 28}) || !slices.Equal(got[0].T, []float64{0, 5, 10, 15}) || got[0].Pod != "p" {
		t.Errorf("counter: %+v, want the reset counted as increase from zero", got)
	}
	if g := SeriesOf(m, -1, false); !slices.Equal(g[0].V, []float64{10, 20, 3, 8}) || g[0].Sign != -1 {
		t.Errorf("gauge: %+v, want the values as they are", g)
	}
}

func TestCounterStatsInterpolatesTheEdges(t *testing.T) {
	t.Parallel()
	// 2 cores from t=0 to 10, then 6 cores; samples every 5 s at 1, 6, 11, ...: at the edges 2.5 and 42.5 the
	// counter is interpolated, never extrapolated over the span the samples cover.
	var ts, vs []float64
	for x := 1.0; x <= 60; x += 5 {
		ts = append(ts, x)
		if x < 10 {
			vs = append(vs, 2*x)
		} else {
			vs = append(vs, 20+6*(x-10))
		}
	}
	st, ok := CounterStats([]Series{ser("p", ts, vs)}, at(16), at(46), 10*time.Second, 5*time.Second, 5*time.Second)
	if !ok || !near(st.Avg, 6) || !near(st.Min, 6) || !near(st.Max, 6) || !st.Start.Equal(at(16)) {
		t.Errorf("after the change: %+v %v, want 6 throughout", st, ok)
	}
	// Over the change: the truth is (10-4)*2 + (46-10)*6 = 228 core-s over 42 s; samples at 1 and 6 bracket the start
	// on the 2-core part, so interpolation is exact.
	st, _ = CounterStats([]Series{ser("p", ts, vs)}, at(4), at(46), 10*time.Second, 5*time.Second, 5*time.Second)
	if !near(st.Avg, 228.0/42) || st.Min > st.Avg || st.Max < st.Avg || !near(st.Max, 6) {
		t.Errorf("over the change: %+v, want avg %.4f within [min, max], max 6", st, 228.0/42)
	}
	// A window shorter than the rate range covers the rate range up to its end.
	st, _ = CounterStats([]Series{ser("p", ts, vs)}, at(40), at(46), 10*time.Second, 5*time.Second, 5*time.Second)
	if !st.Start.Equal(at(36)) || !near(st.Avg, 6) {
		t.Errorf("short window: %+v, want from 36 s", st)
	}
	if _, ok := CounterStats([]Series{ser("p", []float64{1}, []float64{1})}, at(0), at(30), 10*time.Second, 5*time.Second, 5*time.Second); ok {
		t.Error("one sample is no rate")
	}
}

// A sample further than the guard beyond an edge is never read for it: the idle window [10, 40] is followed by
// load (1 core from 45 s, one 5 s guard after it), and the sample after its end comes late, at 47 s (a housekeeping
// round late, as cAdvisor's are now and then). Interpolated at 40 s from the samples at 39 and 47 s, the counter
// would carry a quarter of the load's first 2 s into the idle window; the series reaches the edge at the rate of
// its samples inside instead. A container that stops inside the window still adds nothing after its last sample.
func TestCounterStatsReadsNoSampleBeyondTheGuard(t *testing.T) {
	t.Parallel()
	const idle = 0.002
	counter := func(x float64) float64 { return idle*x + max(0, x-45)*(1-idle) }
	var ts, vs []float64
	for _, x := range []float64{-1, 4, 9, 14, 19, 24, 29, 34, 39, 47, 52} {
		ts, vs = append(ts, x), append(vs, counter(x))
	}
	st, ok := CounterStats([]Series{ser("p", ts, vs)}, at(10), at(40), 20*time.Second, 5*time.Second, 5*time.Second)
	if !ok || !near(st.Avg, idle) || !near(st.Min, idle) || !near(st.Max, idle) {
		t.Errorf("idle window before a late sample: %+v %v, want %g throughout", st, ok, idle)
	}
	// With a guard that reaches the late sample (the old reading), the load's 2 s bend the edge: the case above is
	// one that tells the two apart.
	if st, _ := CounterStats([]Series{ser("p", ts, vs)}, at(10), at(40), 20*time.Second, 5*time.Second, 8*time.Second); near(st.Avg, idle) {
		t.Errorf("guard 8 s: avg %g, want the late sample read (the test would prove nothing)", st.Avg)
	}
	// The same at the start: the sample before it lies 6 s out, past a guard of 5 s.
	st, _ = CounterStats([]Series{ser("p", []float64{-6, 3, 8, 13, 18, 23, 28, 33}, []float64{0, 1, 2, 3, 4, 5, 6, 7})}, at(0), at(30), 20*time.Second, 5*time.Second, 5*time.Second)
	if !near(st.Avg, 0.2) {
		t.Errorf("late sample before the start: avg %g, want 0.2", st.Avg)
	}
	// A container that started and stopped inside the window: no samples further out, so nothing is extended.
	st, _ = CounterStats([]Series{ser("p", []float64{15, 20, 25}, []float64{0, 5, 10})}, at(10), at(40), 20*time.Second, 5*time.Second, 5*time.Second)
	if !near(st.Avg, 10.0/30) {
		t.Errorf("container inside the window: avg %g, want its increase over the window, %g", st.Avg, 10.0/30)
	}
}

// The average is the length-weighted mean of tiles that are rate points too, so it is within [min, max] whatever
// the samples: random counters, spacings and windows.
func TestCounterStatsAverageWithinExtremes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 13))
	for n := range 2000 {
		var ss []Series
		for range 1 + r.IntN(3) {
			var ts, vs []float64
			x, v := -60*r.Float64(), 0.0
			for x < 200 {
				ts, vs = append(ts, x), append(vs, v)
				x += 1 + 14*r.Float64()
				v += 10 * r.Float64() * r.Float64()
				if r.IntN(40) == 0 {
					v = r.Float64() // a reset
				}
			}
			s := ser("p", ts, vs)
			ss = append(ss, SeriesOf(toMatrix(s), 1, true)...)
		}
		start := float64(r.IntN(60))
		end := start + float64(1+r.IntN(120))
		step := time.Duration(1+r.IntN(10)) * time.Second
		rng := time.Duration(2+r.IntN(40)) * time.Second // not always a multiple of the step
		st, ok := CounterStats(ss, at(start), at(end), rng, step, step)
		if ok && (st.Avg < st.Min-1e-9 || st.Avg > st.Max+1e-9) {
			t.Fatalf("case %d [%g, %g] step %s range %s: avg %g outside [%g, %g]", n, start, end, step, rng, st.Avg, st.Min, st.Max)
		}
	}
}

func toMatrix(s Series) model.Matrix {
	ss := &model.SampleStream{Metric: model.Metric{"namespace": model.LabelValue(s.Namespace), "pod": model.LabelValue(s.Pod)}}
	for i := range s.T {
		ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.Time(math.Round(s.T[i] * 1000)), Value: model.SampleValue(s.V[i])})
	}
	return model.Matrix{ss}
}

func TestGaugeStats(t *testing.T) {
	t.Parallel()
	// a ramps 100 -> 200 between samples at 0 and 20 s, then stays; b (sign -1) is a constant 30 whose samples stop
	// at 10 s and which is held for the 15 s fresh range (longer than two of its 5 s spacings), to 25 s; c starts at
	// 25 s.
	a := ser("a", []float64{0, 20, 40}, []float64{100, 200, 200})
	b := ser("b", []float64{-10, -5, 0, 5, 10}, []float64{30, 30, 30, 30, 30})
	b.Sign = -1
	c := ser("c", []float64{25, 35, 45}, []float64{10, 10, 10})
	st, ok := gaugeStats([]Series{a, b, c}, at(10), at(40), 15*time.Second)
	// [10,20]: a 150->200, -30: avg 145 over 10 s; (20,25]: 200-30 = 170 for 5 s; (25,40]: 200+10 = 210 for 15 s.
	want := (145*10 + 170*5 + 210*15) / 30.0
	if !ok || !near(st.Avg, want) || !near(st.Min, 120) || !near(st.Max, 210) {
		t.Errorf("gaugeStats = %+v %v, want avg %.4f, min 120, max 210", st, ok, want)
	}
	// Samples 9 s apart and a fresh range of 5 s: a live pod is held for two of its own spacings, not dropped.
	sparse := ser("s", []float64{0, 9, 18}, []float64{50, 50, 50})
	st, ok = gaugeStats([]Series{sparse}, at(10), at(30), 5*time.Second)
	if !ok || !near(st.Avg, 50) {
		t.Errorf("sparse: %+v %v, want 50 throughout", st, ok)
	}
	if _, ok := gaugeStats([]Series{sparse}, at(100), at(130), 5*time.Second); ok {
		t.Error("a series that ended long before the window covers none of it")
	}
}

func TestUnsampled(t *testing.T) {
	t.Parallel()
	pods := map[string][]string{"ns": {"server", "client", "gone"}, "other": {"x"}}
	ss := []Series{
		ser("client", []float64{0, 9, 18, 27}, []float64{1, 1, 1, 1}),
		ser("gone", []float64{-100, -91}, []float64{1, 1}),
	}
	got := unsampled(pods, ss, at(5), at(25), 10*time.Second)
	if !slices.Equal(got, []string{"ns/gone", "ns/server", "other/x"}) {
		t.Errorf("unsampled = %q", got)
	}
}

// gaugeStatsDirect is gaugeStats as it was before the sweep: every present series evaluated at both ends of every
// interval between cuts (quadratic in the series, and obviously right).
func gaugeStatsDirect(ss []Series, start, end time.Time, fresh time.Duration) (WindowStats, bool) {
	s0, e := float64(start.UnixMilli())/1000, float64(end.UnixMilli())/1000
	type span struct {
		s          Series
		from, till float64
	}
	var spans []span
	cuts := []float64{s0, e}
	for _, s := range ss {
		sp := span{s: s, from: s.T[0], till: s.T[len(s.T)-1] + s.hold(fresh.Seconds())}
		if sp.till < s0 || sp.from > e {
			continue
		}
		spans = append(spans, sp)
		for _, t := range append([]float64{sp.from, sp.till}, s.T...) {
			if t > s0 && t < e {
				cuts = append(cuts, t)
			}
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	out := WindowStats{Start: start, Min: math.Inf(1), Max: math.Inf(-1)}
	var integral, covered float64
	for j := 1; j < len(cuts); j++ {
		a, b := cuts[j-1], cuts[j]
		m := (a + b) / 2
		var fa, fb float64
		present := false
		for _, sp := range spans {
			if m < sp.from || m > sp.till {
				continue
			}
			present = true
			if i := sp.s.segment(m); i > 0 {
				fa += sp.s.Sign * sp.s.line(i, a)
				fb += sp.s.Sign * sp.s.line(i, b)
			} else {
				v := sp.s.V[len(sp.s.V)-1]
				fa, fb = fa+sp.s.Sign*v, fb+sp.s.Sign*v
			}
		}
		if !present {
			continue
		}
		integral += (fa + fb) / 2 * (b - a)
		covered += b - a
		out.Min = math.Min(out.Min, math.Min(fa, fb))
		out.Max = math.Max(out.Max, math.Max(fa, fb))
	}
	if covered <= 0 {
		return out, false
	}
	out.Avg = integral / covered
	return out, true
}

// TestGaugeStatsSweepMatchesDirect: the sweep gives the direct evaluation's figures on random sets of series
// (starting and stopping inside the window, gaps, single samples, duplicate timestamps, negative signs, values of
// cAdvisor's magnitude in bytes).
func TestGaugeStatsSweepMatchesDirect(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 1))
	for trial := range 300 {
		var ss []Series
		for k := range 1 + rng.IntN(40) {
			var ts, vs []float64
			x := -60 + 120*rng.Float64()
			for range 1 + rng.IntN(30) {
				ts = append(ts, math.Round(x*1000)/1000)
				vs = append(vs, (1<<26)*rng.Float64())
				switch r := rng.Float64(); {
				case r < 0.05: // same timestamp twice
				case r < 0.15:
					x += 20 + 20*rng.Float64() // a gap
				default:
					x += 1 + 9*rng.Float64()
				}
			}
			s := ser(string(rune('a'+k%26)), ts, vs)
			if rng.IntN(4) == 0 {
				s.Sign = -1
			}
			ss = append(ss, s)
		}
		start := at(-20 + 40*rng.Float64()).Truncate(time.Millisecond)
		end := start.Add(time.Duration(1+rng.IntN(90)) * time.Second)
		fresh := time.Duration(5+rng.IntN(30)) * time.Second
		got, gotOK := gaugeStats(ss, start, end, fresh)
		want, wantOK := gaugeStatsDirect(ss, start, end, fresh)
		tol := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*float64(len(ss))*(1<<26) }
		if gotOK != wantOK || (wantOK && (!tol(got.Avg, want.Avg) || !tol(got.Min, want.Min) || !tol(got.Max, want.Max))) {
			t.Fatalf("trial %d (%d series): sweep %+v %v, direct %+v %v", trial, len(ss), got, gotOK, want, wantOK)
		}
	}
}

// BenchmarkGaugeStats5000Pods sums the memory of 5,000 containers sampled every 5 s at their own phases over a 60 s
// window (the sidecar component of issue 15's largest layout).
func BenchmarkGaugeStats5000Pods(b *testing.B) {
	var ss []Series
	for k := range 5000 {
		phase := float64(k%5000) / 1000
		var ts, vs []float64
		for x := -35 + phase; x < 75; x += 5 {
			ts, vs = append(ts, x), append(vs, 40<<20)
		}
		ss = append(ss, ser("p", ts, vs))
	}
	for b.Loop() {
		if _, ok := gaugeStats(ss, at(0), at(60), 20*time.Second); !ok {
			b.Fatal("no figures")
		}
	}
}
