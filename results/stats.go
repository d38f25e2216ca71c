package results

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultConfidence is the confidence level Summarize uses when SummaryOptions.Confidence is zero.
const DefaultConfidence = 0.95

// MeanCI returns the sample mean, the sample standard deviation (n-1 denominator) and the two-sided Student t interval
// of the mean at confidence (e.g. 0.95). For n < 2 the deviation is 0 and ci is nil (the mean is NaN for n == 0). It
// panics when confidence is not in (0, 1): a programming error, Summarize validates its level.
func MeanCI(values []float64, confidence float64) (mean, stddev float64, ci *Interval) {
	mustConfidence(confidence)
	return meanCI(values, func(df float64) float64 { return tQuantile(confidence, df) })
}

// meanCI is MeanCI with the critical value function tq(df) given, so Summarize can memoise it.
func meanCI(values []float64, tq func(df float64) float64) (mean, stddev float64, ci *Interval) {
	switch len(values) {
	case 0:
		return math.NaN(), 0, nil
	case 1:
		return values[0], 0, nil
	}
	mean, variance := meanVariance(values)
	stddev = math.Sqrt(variance)
	n := float64(len(values))
	half := 0.0
	if variance > 0 {
		half = tq(n-1) * stddev / math.Sqrt(n)
	}
	return mean, stddev, &Interval{Low: mean - half, High: mean + half}
}

// Welch compares two independent samples of unequal variances: diff = mean(other) - mean(base), its Welch–Satterthwaite
// t interval ci and degrees of freedom df, and the two-sided p of Welch's t-test; ci and p are nil (df 0) when a side
// has fewer than 2 values. It panics when confidence is not in (0, 1).
func Welch(base, other []float64, confidence float64) (diff float64, ci *Interval, df float64, p *float64) {
	mustConfidence(confidence)
	return welch(base, other, func(df float64) float64 { return tQuantile(confidence, df) })
}

// welch is Welch with the critical value function tq(df) given.
func welch(base, other []float64, tq func(df float64) float64) (diff float64, ci *Interval, df float64, p *float64) {
	nb, no := len(base), len(other)
	if nb == 0 || no == 0 {
		return math.NaN(), nil, 0, nil
	}
	mb, vb := meanVariance(base)
	mo, vo := meanVariance(other)
	diff = mo - mb
	if nb < 2 || no < 2 {
		return diff, nil, 0, nil
	}
	sb, so := vb/float64(nb), vo/float64(no)
	se2 := sb + so
	if se2 == 0 {
		pv := 1.0
		if diff != 0 {
			pv = 0
		}
		return diff, &Interval{Low: diff, High: diff}, 0, &pv
	}
	// Scale-free form of the Welch–Satterthwaite equation: no underflow for tiny variances.
	w := sb / se2
	df = 1 / (w*w/float64(nb-1) + (1-w)*(1-w)/float64(no-1))
	se := math.Sqrt(se2)
	half := tq(df) * se
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	pv := math.Min(1, 2*t.Survival(math.Abs(diff)/se))
	return diff, &Interval{Low: diff - half, High: diff + half}, df, &pv
}

// meanVariance is gonum's mean and unbiased variance, except that identical values have exactly zero variance (the
// compensated two-pass formula can leave a rounding residue there, which would turn "no variation" into a tiny,
// spuriously significant one). For a single value the variance is 0.
func meanVariance(x []float64) (mean, variance float64) {
	if allEqual(x) {
		return x[0], 0
	}
	return stat.MeanVariance(x, nil)
}

func allEqual(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}

// tQuantile is the two-sided critical value t(1-(1-confidence)/2; df) of Student's t distribution.
func tQuantile(confidence, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
}

// memoQuantile returns tQuantile at a fixed confidence, memoised by df (not safe for concurrent use). Series with
// the same number of repetitions share one df, and the quantile's incomplete-beta inversion dominates Summarize.
func memoQuantile(confidence float64) func(df float64) float64 {
	memo := map[float64]float64{}
	return func(df float64) float64 {
		q, ok := memo[df]
		if !ok {
			q = tQuantile(confidence, df)
			memo[df] = q
		}
		return q
	}
}

func mustConfidence(c float64) {
	if !validConfidence(c) {
		panic(fmt.Sprintf("results: confidence %v is not in (0, 1)", c))
	}
}

func validConfidence(c float64) bool { return c > 0 && c < 1 }

// finite reports whether v is neither ±Inf nor NaN.
func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
