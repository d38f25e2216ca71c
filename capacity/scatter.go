package capacity

import (
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ScatterCheck tests, at the top load level, the intervals' assumption that the repetitions' scatter is the same at
// every load: an F ratio per usage fit, combined by Fisher's method (docs/capacity.md, with its power and false
// alarms in the synthetic study).
type ScatterCheck struct {
	Level string `json:"level"`
	Fits  int    `json:"fits"` // fits with repetitions at the level and within other levels
	// Ratio is the geometric mean over the fits of the level's standard deviation over the others' pooled one.
	Ratio float64 `json:"ratio"`
	P     float64 `json:"p"`
	// Grows is P < 1 - confidence: the scatter grows with the load, intervals beyond the measured load are too
	// narrow.
	Grows bool `json:"grows"`
}

// checkScatter is the ScatterCheck of m's usage fits (against load: not istiod's mesh size) at level; nil when no
// fit has repetitions there and within other levels.
func checkScatter(m *Model, level string) *ScatterCheck {
	c := ScatterCheck{Level: level}
	var chi, logRatio float64
	ratios := 0
	for _, f := range m.Fits {
		if f.Kind != KindUsage || f.Per == PerMesh || f.Source != "" {
			continue
		}
		var at []float64
		others := map[string][]float64{}
		var order []string
		for _, p := range f.Points {
			if p.Level == level {
				at = append(at, p.Y)
				continue
			}
			if _, ok := others[p.Level]; !ok {
				order = append(order, p.Level)
			}
			others[p.Level] = append(others[p.Level], p.Y)
		}
		var ss, df float64
		for _, l := range order {
			if g := others[l]; len(g) > 1 {
				_, v := stat.MeanVariance(g, nil)
				ss, df = ss+v*float64(len(g)-1), df+float64(len(g)-1)
			}
		}
		if len(at) < 2 || df < 1 || ss <= 0 {
			continue
		}
		_, v := stat.MeanVariance(at, nil)
		ratio := v / (ss / df)
		p := distuv.F{D1: float64(len(at) - 1), D2: df}.Survival(ratio)
		chi += -2 * math.Log(math.Max(p, math.SmallestNonzeroFloat64))
		if ratio > 0 {
			logRatio += math.Log(math.Sqrt(ratio))
			ratios++
		}
		c.Fits++
	}
	if c.Fits == 0 {
		return nil
	}
	if ratios > 0 {
		c.Ratio = math.Exp(logRatio / float64(ratios))
	}
	c.P = distuv.ChiSquared{K: float64(2 * c.Fits)}.Survival(chi)
	c.Grows = c.P < 1-m.Confidence
	return &c
}

// topLevel is the highest numeric configured level when the run has 2 or more of them, else "".
func topLevel(m *Model) string {
	var numeric []string
	for _, l := range m.Measured.Levels {
		if _, err := strconv.ParseFloat(l, 64); err == nil {
			numeric = append(numeric, l)
		}
	}
	if len(numeric) < 2 {
		return ""
	}
	return numeric[len(numeric)-1]
}
