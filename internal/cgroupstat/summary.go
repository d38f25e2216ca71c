package cgroupstat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Sample is one reading as the `cgroups` wrapper writes it, one JSON line per interval.
type Sample struct {
	T        time.Time `json:"t"`
	CPUNs    uint64    `json:"cpuNs"`
	MemBytes uint64    `json:"memBytes"`
}

// Figure is min, avg and max over a window. HasMinMax is false when the series being added up share no
// sampling second (see Sum): the average still stands.
type Figure struct {
	Min       float64 `json:"min"`
	Avg       float64 `json:"avg"`
	Max       float64 `json:"max"`
	HasMinMax bool    `json:"hasMinMax"`
}

// Summary is a window's resource use of one container, or of several added up.
type Summary struct {
	Samples       int    `json:"samples"` // samples inside the window, over all series
	CPUMillicores Figure `json:"cpuMillicores"`
	MemoryMiB     Figure `json:"memoryMiB"`
}

// ErrTooFew: a series has fewer than two samples in the window, so no CPU rate.
var ErrTooFew = errors.New("fewer than two cgroup samples in the window")

// Summarize is Sum of one series.
func Summarize(s []Sample, since, until time.Time) (Summary, error) {
	return Sum([][]Sample{s}, since, until)
}

// Sum is the resource use of several series (a pod's containers, a path's pods) over [since, until] as if they were
// one cgroup, from the samples inside the window only: averages summed, min and max over the wall-clock seconds every
// series has a value for; a counter that went down is dropped (docs/cni.md).
func Sum(series [][]Sample, since, until time.Time) (Summary, error) {
	if len(series) == 0 {
		return Summary{}, errors.New("no cgroup series")
	}
	var out Summary
	cpuAt := map[int64][]float64{} // second -> the series' CPU rate ending in it, one per series
	memAt := map[int64][]float64{}
	for i, s := range series {
		in := window(s, since, until)
		out.Samples += len(in)
		if len(in) < 2 {
			return Summary{}, fmt.Errorf("series %d: %w (%d)", i, ErrTooFew, len(in))
		}
		var deltaNs, spanNs float64
		mem := make([]float64, 0, len(in))
		for j, x := range in {
			sec := x.T.Round(time.Second).Unix()
			mib := float64(x.MemBytes) / (1 << 20)
			mem = append(mem, mib)
			put(memAt, sec, i, mib)
			if j == 0 {
				continue
			}
			prev := in[j-1]
			dt := x.T.Sub(prev.T)
			if dt <= 0 || x.CPUNs < prev.CPUNs {
				continue
			}
			d := float64(x.CPUNs - prev.CPUNs)
			deltaNs += d
			spanNs += float64(dt)
			put(cpuAt, sec, i, 1000*d/float64(dt))
		}
		if spanNs == 0 {
			return Summary{}, fmt.Errorf("series %d: no increasing pair of cgroup samples in the window", i)
		}
		out.CPUMillicores.Avg += 1000 * deltaNs / spanNs
		out.MemoryMiB.Avg += stat.Mean(mem, nil)
	}
	out.CPUMillicores.Min, out.CPUMillicores.Max, out.CPUMillicores.HasMinMax = minMax(cpuAt, len(series))
	out.MemoryMiB.Min, out.MemoryMiB.Max, out.MemoryMiB.HasMinMax = minMax(memAt, len(series))
	return out, nil
}

// window is the samples of s inside [since, until], in time order.
func window(s []Sample, since, until time.Time) []Sample {
	var in []Sample
	for _, x := range s {
		if !x.T.Before(since) && !x.T.After(until) {
			in = append(in, x)
		}
	}
	slices.SortStableFunc(in, func(a, b Sample) int { return a.T.Compare(b.T) })
	return in
}

// put keeps series i's value at second sec (a later sample in the same second replaces an earlier one).
func put(at map[int64][]float64, sec int64, i int, v float64) {
	if at[sec] == nil {
		at[sec] = make([]float64, 0, 1)
	}
	for len(at[sec]) <= i {
		at[sec] = append(at[sec], nan)
	}
	at[sec][i] = v
}

// minMax of the per-second totals over the seconds where all n series have a value.
func minMax(at map[int64][]float64, n int) (lo, hi float64, ok bool) {
	for _, vs := range at {
		if len(vs) < n || slices.ContainsFunc(vs, isNaN) {
			continue
		}
		var t float64
		for _, v := range vs {
			t += v
		}
		if !ok {
			lo, hi, ok = t, t, true
			continue
		}
		lo, hi = min(lo, t), max(hi, t)
	}
	return lo, hi, ok
}

var nan = math.NaN()

func isNaN(v float64) bool { return math.IsNaN(v) }
