package capacity

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/results"
)

// MinIntervalPoints is the fewest points that give an interval: a line has 2 parameters, so 3 points leave one
// degree of freedom for the residual (a constant would have one from 2, but one rule for every fit is easier to
// trust, and it matches results.MinIntervalN).
const MinIntervalPoints = 3

// Trust verdicts of a Line.
const (
	TrustLinear    = "linear"     // 3 or more load levels and the lack-of-fit test does not reject a line
	TrustUntested  = "untested"   // a line through 2 levels (or levels without repetitions): linearity not checked
	TrustNotLinear = "not-linear" // the lack-of-fit test rejects a line: do not extrapolate
	TrustConstant  = "constant"   // one level (or one size): no slope, the mean is used at every load
)

// Point is one observation: X is the load per unit, Y the cost per unit, Level groups the repetitions of one
// configured level (the achieved X differs a little between them).
type Point struct {
	Level      string  `json:"level"`
	Repetition int     `json:"repetition"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
}

// Coef is a fitted coefficient with its confidence interval (nil with fewer than MinIntervalPoints points).
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
	Trust      string   `json:"trust"`
	Notes      []string `json:"notes,omitempty"`

	df, xbar, sxx float64
	conf          float64
}

// FitLine fits points at the given confidence level (in (0, 1)). Fewer than 2 levels, or no spread of X, give a
// constant; no points give a Line with N == 0 and a note.
func FitLine(points []Point, confidence float64) Line {
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
	if l.Levels < 2 || l.LoadMin == l.LoadMax {
		l.Trust = TrustConstant
		l.Notes = append(l.Notes, fmt.Sprintf("%d level(s): no slope, the mean is used at every load", l.Levels))
		mean, variance := stat.MeanVariance(ys, nil)
		if len(ys) < 2 || allSame(ys) {
			variance = 0
		}
		l.Fixed.Value, l.ResidualSD, l.df = mean, math.Sqrt(variance), n-1
		if len(points) >= MinIntervalPoints {
			half := l.t() * l.ResidualSD / math.Sqrt(n)
			l.Fixed.CI = &results.Interval{Low: mean - half, High: mean + half}
		} else {
			l.Notes = append(l.Notes, fmt.Sprintf("%d point(s): no interval (needs %d)", len(points), MinIntervalPoints))
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
		l.Notes = append(l.Notes, fmt.Sprintf("%d point(s): no interval (needs %d)", len(points), MinIntervalPoints))
	}
	l.Trust = TrustUntested
	switch p, ok := lackOfFit(points, res, l.Levels); {
	case l.Levels == 2:
		l.Notes = append(l.Notes, "2 levels: a line always fits them, linearity is not tested")
	case !ok:
		l.Notes = append(l.Notes, "no repetitions within levels: linearity is not tested")
	default:
		l.LackOfFitP = &p
		if p < 1-confidence {
			l.Trust = TrustNotLinear
			l.Notes = append(l.Notes, fmt.Sprintf("not linear: lack-of-fit p = %.3g; do not extrapolate", p))
		} else {
			l.Trust = TrustLinear
		}
	}
	return l
}

// lackOfFit is the p-value of the F test of a line against one mean per level: the residuals' level means carry
// the lack of fit (L-2 degrees of freedom), their spread within levels the pure error (n-L). ok is false when
// there are fewer than 3 levels or no repetitions.
func lackOfFit(points []Point, res []float64, levels int) (p float64, ok bool) {
	n := len(points)
	if levels < 3 || n-levels < 1 {
		return 0, false
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
		return 1, true // exact line, no noise
	case pe <= tiny*lof:
		return 0, true // no noise within levels, but the level means miss the line
	}
	f := (lof / d1) / (pe / d2)
	return distuv.F{D1: d1, D2: d2}.Survival(f), true
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
func (l Line) HasInterval() bool { return l.N >= MinIntervalPoints && l.df >= 1 }

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
