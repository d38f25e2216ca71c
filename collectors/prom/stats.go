package prom

import (
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/common/model"
)

// Series is one raw series of a signal as fetched: its namespace and pod (for the warning about a pod without
// samples), its sign in the sum, and its samples in time order (T in seconds since the Unix epoch).
type Series struct {
	Namespace, Pod string
	// Target is the scrape target the series came from (see targetOf): whether Prometheus scraped it all through
	// the window is read from that target's up series.
	Target scrapeTargetKey
	Sign   float64
	T, V   []float64
}

// SeriesOf reads a range-selector result. Counters are made monotonic, a drop being a reset to zero as rate() treats
// it (prometheus/prometheus promql/functions.go extrapolatedRate, v2.42.0). It is pure.
func SeriesOf(v model.Value, sign float64, counter bool) []Series {
	m, _ := v.(model.Matrix)
	out := make([]Series, 0, len(m))
	for _, ss := range m {
		if len(ss.Values) == 0 {
			continue
		}
		s := Series{Namespace: string(ss.Metric["namespace"]), Pod: string(ss.Metric["pod"]), Target: targetOf(ss.Metric), Sign: sign}
		offset, prev := 0.0, math.Inf(-1)
		for _, p := range ss.Values {
			val := float64(p.Value)
			if math.IsNaN(val) {
				continue
			}
			if counter && val < prev {
				offset += prev
			}
			prev = val
			s.T = append(s.T, float64(p.Timestamp)/1000)
			s.V = append(s.V, val+offset)
		}
		if len(s.T) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// WindowStats are the three figures of one signal over one window, all from the same interpolated samples.
type WindowStats struct {
	Min, Max, Avg float64
	// Start is where the figures begin: the window's start, or one rate range before its end for a window shorter
	// than that (a CPU rate needs a range).
	Start time.Time
}

// segment returns i such that T[i-1] <= x <= T[i] (1 <= i < len(T)), or 0 when x is outside the samples' span.
func (s Series) segment(x float64) int {
	n := len(s.T)
	if n < 2 || x < s.T[0] || x > s.T[n-1] {
		return 0
	}
	i := sort.SearchFloat64s(s.T, x)
	return max(i, 1)
}

// line is the value at x of the straight line through samples i-1 and i.
func (s Series) line(i int, x float64) float64 {
	t0, t1 := s.T[i-1], s.T[i]
	if t1 == t0 {
		return s.V[i]
	}
	return s.V[i-1] + (x-t0)/(t1-t0)*(s.V[i]-s.V[i-1])
}

// counterAt is the counter interpolated linearly at x from the samples that bracket it; outside their span it is
// extended at the series' lead or tail rate (see windowCounter; 0 holds the first or last sample: a container that
// started or stopped adds nothing there).
func (s windowCounter) counterAt(x float64) float64 {
	n := len(s.T)
	switch {
	case x <= s.T[0]:
		return s.V[0] - s.lead*(s.T[0]-x)
	case x >= s.T[n-1]:
		return s.V[n-1] + s.tail*(x-s.T[n-1])
	}
	return s.line(s.segment(x), x)
}

// windowCounter is one counter series as a window reads it: the samples inside the window and up to guard beyond
// its edges (times relative to the window's start), and the rates that extend it to an edge none of them brackets.
type windowCounter struct {
	Series
	// lead and tail extend the counter before its first and after its last kept sample: the rate of its kept
	// samples when the series has samples further out (it ran there, but those samples lie beyond the guard, past
	// a possible phase change), 0 when it has none (the container started or stopped in the window).
	lead, tail float64
}

// clip keeps the samples of s (times relative to the window [0, e]) inside the window and up to guard beyond its
// edges, where the window's condition is known to hold; a series with fewer than two samples kept is read whole.
func clip(s Series, e, guard float64) windowCounter {
	lo, _ := slices.BinarySearch(s.T, -guard)
	hi, found := slices.BinarySearch(s.T, e+guard)
	if !found {
		hi--
	}
	if hi-lo < 1 {
		return windowCounter{Series: s}
	}
	kept := Series{Namespace: s.Namespace, Pod: s.Pod, Target: s.Target, Sign: s.Sign, T: s.T[lo : hi+1], V: s.V[lo : hi+1]}
	w := windowCounter{Series: kept}
	rate := (kept.V[len(kept.V)-1] - kept.V[0]) / (kept.T[len(kept.T)-1] - kept.T[0])
	if lo > 0 && kept.T[0] > 0 {
		w.lead = rate
	}
	if hi < len(s.T)-1 && kept.T[len(kept.T)-1] < e {
		w.tail = rate
	}
	return w
}

// CounterStats summarises summed counters over [start, end] as rates per second: Avg the increase between the edges
// (interpolated, no extrapolation, samples clipped to the guard), Min and Max over rate points and tiles, so Avg lies
// within them (docs/measurement.md). ok is false without a series of two samples overlapping the window. It is pure.
func CounterStats(ss []Series, start, end time.Time, rng, step, guard time.Duration) (WindowStats, bool) {
	if end.Sub(start) < rng {
		start = end.Add(-rng)
	}
	origin := float64(start.UnixMilli()) / 1000
	e := float64(end.UnixMilli())/1000 - origin
	r, st := rng.Seconds(), step.Seconds()
	var live []windowCounter
	for _, s := range ss {
		if len(s.T) >= 2 && s.T[len(s.T)-1] > origin && s.T[0] < origin+e {
			c := s
			c.T = make([]float64, len(s.T))
			for i, t := range s.T {
				c.T[i] = t - origin
			}
			live = append(live, clip(c, e, max(guard, 0).Seconds()))
		}
	}
	out := WindowStats{Start: start, Min: math.Inf(1), Max: math.Inf(-1)}
	if len(live) == 0 || r <= 0 || st <= 0 {
		return out, false
	}
	sum := func(x float64) float64 {
		var v float64
		for _, s := range live {
			v += s.Sign * s.counterAt(x)
		}
		return v
	}
	const eps = 1e-6
	add := func(from, to float64) {
		v := (sum(to) - sum(from)) / (to - from)
		out.Min, out.Max = math.Min(out.Min, v), math.Max(out.Max, v)
	}
	for t := e; t-r >= -eps; t -= st {
		add(t-r, t)
	}
	// The tiles, explicitly (they are rate points too when rng is a multiple of step, as 4 steps are).
	b := e
	for b-2*r >= -eps {
		add(b-r, b)
		b -= r
	}
	add(0, b) // the first tile, with the remainder
	out.Avg = (sum(e) - sum(0)) / e
	return out, true
}

// hold is how long a gauge series keeps its last value: the longer of fresh and two of its median sample spacings,
// so a live pod never drops out between two sparse cAdvisor samples.
func (s Series) hold(fresh float64) float64 {
	if len(s.T) < 2 {
		return fresh
	}
	gaps := make([]float64, 0, len(s.T)-1)
	for i := 1; i < len(s.T); i++ {
		gaps = append(gaps, s.T[i]-s.T[i-1])
	}
	slices.Sort(gaps)
	return math.Max(fresh, 2*gaps[len(gaps)/2])
}

// gaugeStats summarises summed gauges over [start, end] (each interpolated, held for hold): Avg the exact time average
// of the sum where some series covers the window, Min and Max its extremes; ok is false when none covers it. A
// running sum over the cuts keeps the work linear in the samples (docs/measurement.md). It is pure.
func gaugeStats(ss []Series, start, end time.Time, fresh time.Duration) (WindowStats, bool) {
	s0, e := float64(start.UnixMilli())/1000, float64(end.UnixMilli())/1000
	type span struct {
		s          Series
		from, till float64 // present on [from, till]
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
	// Interval j is [cuts[j], cuts[j+1]]. On it the sum is A[j] + B[j]*(x - s0) (times relative to the window's
	// start, so that the intercepts stay small), and N[j] series are present; dA, dB, dN are their differences.
	n := len(cuts) - 1
	dA, dB, dN := make([]float64, n+1), make([]float64, n+1), make([]int, n+1)
	// piece adds the line through (t0, v0) with slope k (times sign) on [x0, x1] clipped to the window.
	at := func(x float64) int { i, _ := slices.BinarySearch(cuts, x); return i }
	piece := func(x0, x1, t0, v0, k, sign float64) {
		x0, x1 = math.Max(x0, s0), math.Min(x1, e)
		if x0 >= x1 {
			return
		}
		j0, j1 := at(x0), at(x1)
		a, b := sign*(v0-k*(t0-s0)), sign*k
		dA[j0], dB[j0] = dA[j0]+a, dB[j0]+b
		dA[j1], dB[j1] = dA[j1]-a, dB[j1]-b
	}
	for _, sp := range spans {
		s := sp.s
		for i := 1; i < len(s.T); i++ {
			if t0, t1 := s.T[i-1], s.T[i]; t1 > t0 {
				piece(t0, t1, t0, s.V[i-1], (s.V[i]-s.V[i-1])/(t1-t0), s.Sign)
			}
		}
		last := len(s.T) - 1
		piece(s.T[last], sp.till, s.T[last], s.V[last], 0, s.Sign) // held after the last sample
		if x0, x1 := math.Max(sp.from, s0), math.Min(sp.till, e); x0 < x1 {
			dN[at(x0)]++
			dN[at(x1)]--
		}
	}
	out := WindowStats{Start: start, Min: math.Inf(1), Max: math.Inf(-1)}
	var integral, covered, lineA, lineB float64
	present := 0
	for j := range n {
		lineA, lineB, present = lineA+dA[j], lineB+dB[j], present+dN[j]
		if present == 0 {
			continue
		}
		a, b := cuts[j], cuts[j+1]
		fa, fb := lineA+lineB*(a-s0), lineA+lineB*(b-s0)
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

// unsampled are the pods (namespace/pod) of pods that no series covers at any time in [start, end] (with the same
// hold as gaugeStats): running pods whose figures are missing from the sum. It is pure.
func unsampled(pods map[string][]string, ss []Series, start, end time.Time, fresh time.Duration) []string {
	s0, e := float64(start.UnixMilli())/1000, float64(end.UnixMilli())/1000
	seen := map[[2]string]bool{}
	for _, s := range ss {
		if s.T[len(s.T)-1]+s.hold(fresh.Seconds()) >= s0 && s.T[0] <= e {
			seen[[2]string{s.Namespace, s.Pod}] = true
		}
	}
	var out []string
	for _, ns := range slices.Sorted(maps.Keys(pods)) {
		for _, p := range pods[ns] {
			if !seen[[2]string{ns, p}] {
				out = append(out, ns+"/"+p)
			}
		}
	}
	slices.Sort(out)
	return out
}
