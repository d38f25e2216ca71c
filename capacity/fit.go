package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/results"
)

// minIntervalPoints is the fewest points that give an interval: a line has 2 parameters, so 3 points leave one
// degree of freedom for the residual (a constant would have one from 2, but one rule for every fit is easier to
// trust, and it matches results.MinIntervalN).
const minIntervalPoints = 3

// MinLoadSpan is the spread of load a slope needs (highest load per unit / lowest): closer levels measure the
// repetitions' scatter more than the line, so such a fit is a constant, not projected with an interval (CaveatNoSlope).
// Fits against exact x (chain depth, istiod curve sizes) have no minimum.
const MinLoadSpan = 1.5

// Point is one observation: X is the load per unit, Y the cost per unit, Level groups the repetitions of one
// configured level (the achieved X differs a little between them).
type Point struct {
	Level      string  `json:"level"`
	Repetition int     `json:"repetition"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
}

// Coef is a fitted coefficient with its confidence interval (nil with fewer than minIntervalPoints points).
type Coef struct {
	Value float64           `json:"value"`
	CI    *results.Interval `json:"ci,omitempty"`
}

// Line is fixed + slope x load, fitted by least squares over the points.
type Line struct {
	N      int   `json:"n"`      // points
	Levels int   `json:"levels"` // distinct configured levels
	Fixed  Coef  `json:"fixed"`  // the intercept (a constant fit: the mean)
	Slope  *Coef `json:"slope,omitempty"`
	// ResidualSD is the standard deviation of the residuals (n-2 degrees of freedom for a line, n-1 for a constant).
	ResidualSD float64 `json:"residualSD"`
	LoadMin    float64 `json:"loadMin"` // the measured range of X
	LoadMax    float64 `json:"loadMax"`
	// LackOfFitP is the p-value of the lack-of-fit F test (3 or more levels with repetitions); small means curved.
	LackOfFitP *float64 `json:"lackOfFitP,omitempty"`
	// LackOfFitPHolm is LackOfFitP adjusted for the model's other tests (Holm; Model.LinearityTests): a Model's
	// Trust follows it, so that one run's dozen tests do not call a straight line curved 1 time in 2.
	LackOfFitPHolm *float64 `json:"lackOfFitPHolm,omitempty"`
	// NarrowSpan marks a load fit whose levels are closer than MinLoadSpan: a constant, though it has 2 or more levels.
	NarrowSpan bool     `json:"narrowSpan,omitempty"`
	Trust      Trust    `json:"trust"`
	Notes      []string `json:"notes,omitempty"`

	df, xbar, sxx float64
	conf          float64
	// exact: the lack-of-fit test met points exactly on a line (no noise): p is 1 whatever the data, a test that
	// cannot reject, so it is no member of the family Holm adjusts for.
	exact bool
}

// FitLine fits points at the given confidence level (in (0, 1)). Fewer than 2 levels, or no spread of X, give a
// constant; no points give a Line with N == 0 and a note.
func FitLine(points []Point, confidence float64) Line { return fitLine(points, confidence, 0) }

// fitLoadLine is FitLine for a fit against load (or mesh size): levels closer than MinLoadSpan give a constant.
func fitLoadLine(points []Point, confidence float64) Line {
	return fitLine(points, confidence, MinLoadSpan)
}

// fitLine fits points; with minSpan > 0, levels whose highest X is below minSpan times the lowest give a constant.
func fitLine(points []Point, confidence, minSpan float64) Line {
	l := Line{N: len(points), conf: confidence}
	if len(points) == 0 {
		l.Trust = TrustConstant
		l.Notes = append(l.Notes, "no points")
		return l
	}
	xs, ys := make([]float64, len(points)), make([]float64, len(points))
	var levels []string
	for i, p := range points {
		xs[i], ys[i] = p.X, p.Y
		if !slices.Contains(levels, p.Level) {
			levels = append(levels, p.Level)
		}
	}
	l.Levels = len(levels)
	l.LoadMin, l.LoadMax = slices.Min(xs), slices.Max(xs)
	n := float64(len(points))
	l.NarrowSpan = l.Levels >= 2 && l.LoadMin > 0 && l.LoadMax < minSpan*l.LoadMin*(1-1e-9) // 1e-9: 0.0375/0.025 is 1.5
	if l.Levels < 2 || l.LoadMin == l.LoadMax || l.NarrowSpan {
		l.Trust = TrustConstant
		if l.NarrowSpan {
			l.Notes = append(l.Notes, fmt.Sprintf("%d levels %.4g..%.4g, a span of %.3gx: a slope needs %gx: no slope, the mean is used at every load",
				l.Levels, l.LoadMin, l.LoadMax, l.LoadMax/l.LoadMin, minSpan))
		} else {
			l.Notes = append(l.Notes, fmt.Sprintf("%d level(s): no slope, the mean is used at every load", l.Levels))
		}
		mean, variance := stat.MeanVariance(ys, nil)
		if len(ys) < 2 || allSame(ys) {
			variance = 0
		}
		l.Fixed.Value, l.ResidualSD, l.df = mean, math.Sqrt(variance), n-1
		if len(points) >= minIntervalPoints {
			half := l.t() * l.ResidualSD / math.Sqrt(n)
			l.Fixed.CI = &results.Interval{Low: mean - half, High: mean + half}
		} else {
			l.Notes = append(l.Notes, fmt.Sprintf("%d point(s): no interval (needs %d)", len(points), minIntervalPoints))
		}
		return l
	}
	alpha, beta := stat.LinearRegression(xs, ys, nil, false)
	l.xbar = stat.Mean(xs, nil)
	var ssr float64
	res := make([]float64, len(points))
	for i := range xs {
		d := xs[i] - l.xbar
		l.sxx += d * d
		res[i] = ys[i] - (alpha + beta*xs[i])
		ssr += res[i] * res[i]
	}
	l.df = n - 2
	l.Fixed.Value = alpha
	l.Slope = &Coef{Value: beta}
	if l.df >= 1 {
		l.ResidualSD = math.Sqrt(ssr / l.df)
		t := l.t()
		seB := l.ResidualSD / math.Sqrt(l.sxx)
		seA := l.ResidualSD * math.Sqrt(1/n+l.xbar*l.xbar/l.sxx)
		l.Slope.CI = &results.Interval{Low: beta - t*seB, High: beta + t*seB}
		l.Fixed.CI = &results.Interval{Low: alpha - t*seA, High: alpha + t*seA}
	} else {
		l.Notes = append(l.Notes, fmt.Sprintf("%d point(s): no interval (needs %d)", len(points), minIntervalPoints))
	}
	l.Trust = TrustUntested
	switch p, exact, ok := lackOfFit(points, res, l.Levels); {
	case l.Levels == 2:
		l.Notes = append(l.Notes, "2 levels: a line always fits them, linearity is not tested")
	case !ok:
		l.Notes = append(l.Notes, "no repetitions within levels: linearity is not tested")
	default:
		l.LackOfFitP, l.exact = &p, exact
		l.judge(p)
	}
	return l
}

// judge sets Trust from a lack-of-fit p-value at the line's confidence level.
func (l *Line) judge(p float64) {
	l.Trust = TrustLinear
	if p < 1-l.conf {
		l.Trust = TrustNotLinear
	}
}

// tested says whether the line's lack-of-fit test could reject it: a member of the family adjustLinearity corrects.
func (l *Line) tested() bool { return l.LackOfFitP != nil && !l.exact }

// adjustLinearity corrects the lack-of-fit tests of lines for their number (Holm's step-down method, which holds
// the chance of any false "not linear" at 1 - confidence under any dependence between the tests) and judges each
// line on its adjusted p. It returns how many tests the family had.
func adjustLinearity(lines []*Line) int {
	var family []*Line
	var ps []float64
	for _, l := range lines {
		if l.tested() {
			family, ps = append(family, l), append(ps, *l.LackOfFitP)
		}
	}
	for i, p := range holm(ps) {
		family[i].LackOfFitPHolm = &p
		family[i].judge(p)
	}
	return len(family)
}

// holm returns Holm's adjusted p-values of ps, in their order: the i-th smallest times (m - i + 1), never below
// the one before it, at most 1.
func holm(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	out := make([]float64, m)
	prev := 0.0
	for rank, i := range order {
		prev = math.Max(prev, math.Min(1, float64(m-rank)*ps[i]))
		out[i] = prev
	}
	return out
}

// lackOfFit is the p-value of the F test of a line against one mean per level: the residuals' level means carry
// the lack of fit (L-2 degrees of freedom), their spread within levels the pure error (n-L). ok is false when
// there are fewer than 3 levels or no repetitions.
func lackOfFit(points []Point, res []float64, levels int) (p float64, exact, ok bool) {
	n := len(points)
	if levels < 3 || n-levels < 1 {
		return 0, false, false
	}
	// Level sums in order of first appearance: a map's order would change the floating-point sums between runs.
	idx := map[string]int{}
	var sum, cnt []float64
	for i, pt := range points {
		j, ok := idx[pt.Level]
		if !ok {
			j = len(sum)
			idx[pt.Level] = j
			sum, cnt = append(sum, 0), append(cnt, 0)
		}
		sum[j] += res[i]
		cnt[j]++
	}
	var lof, pe float64
	for i, pt := range points {
		m := sum[idx[pt.Level]] / cnt[idx[pt.Level]]
		pe += (res[i] - m) * (res[i] - m)
	}
	for j, s := range sum {
		lof += s * s / cnt[j]
	}
	d1, d2 := float64(levels-2), float64(n-levels)
	const tiny = 1e-12
	switch {
	case pe <= tiny*(lof+tiny) && lof <= tiny:
		return 1, true, true // exact line, no noise
	case pe <= tiny*lof:
		return 0, false, true // no noise within levels, but the level means miss the line
	}
	f := (lof / d1) / (pe / d2)
	return distuv.F{D1: d1, D2: d2}.Survival(f), false, true
}

func allSame(x []float64) bool {
	for _, v := range x {
		if v != x[0] {
			return false
		}
	}
	return true
}

// t is the two-sided Student t critical value at the line's degrees of freedom.
func (l Line) t() float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: l.df}.Quantile(1 - (1-l.conf)/2)
}

// HasInterval says whether the line gives intervals (enough points).
func (l Line) HasInterval() bool { return l.N >= minIntervalPoints && l.df >= 1 }

// At is the fitted mean at load x (a constant ignores x).
func (l Line) At(x float64) float64 {
	if l.Slope == nil {
		return l.Fixed.Value
	}
	return l.Fixed.Value + l.Slope.Value*x
}

// predictionSE is the standard error of one new observation at x: residual sd x sqrt(1 + 1/n + (x-xbar)^2/Sxx)
// (a constant: sqrt(1 + 1/n)).
func (l Line) predictionSE(x float64) float64 {
	n := float64(l.N)
	v := 1 + 1/n
	if l.Slope != nil {
		v += (x - l.xbar) * (x - l.xbar) / l.sxx
	}
	return l.ResidualSD * math.Sqrt(v)
}

// Predict is the fitted value at x and its prediction interval for one new observation (nil without enough points).
func (l Line) Predict(x float64) (float64, *results.Interval) {
	y := l.At(x)
	if !l.HasInterval() {
		return y, nil
	}
	half := l.t() * l.predictionSE(x)
	return y, &results.Interval{Low: y - half, High: y + half}
}

// predictMean is the fitted value at x and the interval of the mean of k new observations there (nil without enough
// points): residual sd x sqrt(1/k + 1/n + (x-xbar)^2/Sxx).
func (l Line) predictMean(x float64, k int) (float64, *results.Interval) {
	y := l.At(x)
	if !l.HasInterval() || k < 1 {
		return y, nil
	}
	v := 1/float64(k) + 1/float64(l.N)
	if l.Slope != nil {
		v += (x - l.xbar) * (x - l.xbar) / l.sxx
	}
	half := l.t() * l.ResidualSD * math.Sqrt(v)
	return y, &results.Interval{Low: y - half, High: y + half}
}

// cov returns the variances of fixed and slope and their covariance (slope terms 0 for a constant).
func (l Line) cov() (varA, varB, covAB float64) {
	s2 := l.ResidualSD * l.ResidualSD
	n := float64(l.N)
	if l.Slope == nil {
		return s2 / n, 0, 0
	}
	return s2 * (1/n + l.xbar*l.xbar/l.sxx), s2 / l.sxx, -l.xbar * s2 / l.sxx
}

// InRange says whether x lies in the measured load range (with 1 % slack for rounding of the achieved rate).
func (l Line) InRange(x float64) bool {
	slack := 0.01 * math.Max(math.Abs(l.LoadMax), math.Abs(l.LoadMin))
	return x >= l.LoadMin-slack && x <= l.LoadMax+slack
}
