package capacity

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/results"
)

// HoldoutPoint is one held-out observation against the line fitted without its level.
type HoldoutPoint struct {
	Repetition int               `json:"repetition"`
	X          float64           `json:"x"`
	Measured   float64           `json:"measured"`
	Predicted  float64           `json:"predicted"`
	PI         *results.Interval `json:"pi,omitempty"` // nil: too few training points for an interval
	Inside     bool              `json:"inside"`
}

// HoldoutFit is one usage fit refitted on every level but the held-out one.
type HoldoutFit struct {
	Mode      string         `json:"mode"`
	Component string         `json:"component"`
	Metric    string         `json:"metric"`
	Unit      string         `json:"unit"`
	LoadUnit  string         `json:"loadUnit"`
	Train     Line           `json:"train"`
	Points    []HoldoutPoint `json:"points"`
	// Mean is the held-out points' mean against the interval of the mean of as many new observations (nil without
	// an interval): one check per fit, independent of the other fits', which the verdict counts.
	Mean *HoldoutPoint `json:"mean,omitempty"`
}

// HoldoutVerdict is what the fits' mean checks say of the intervals at the held-out level.
type HoldoutVerdict string

// Holdout verdicts.
const (
	// HoldoutConsistent: no more fits missed than intervals of the confidence level miss by chance.
	HoldoutConsistent HoldoutVerdict = "consistent"
	// HoldoutTooNarrow: more fits missed than that (binomial p below 1 - confidence): at this level the intervals
	// are too narrow; at the top level that is noise growing with the load, or a curve.
	HoldoutTooNarrow HoldoutVerdict = "too-narrow"
	// HoldoutNoVerdict: no fit had an interval for its mean.
	HoldoutNoVerdict HoldoutVerdict = "no-verdict"
)

// Holdout is the model's own check on a run: fit on the other levels, predict the held-out one.
type Holdout struct {
	RunID      string       `json:"runID"`
	Level      string       `json:"level"`
	Confidence float64      `json:"confidence"`
	Fits       []HoldoutFit `json:"fits"`
	Held       int          `json:"held"`   // held-out points with a prediction interval
	Inside     int          `json:"inside"` // of those, inside it
	// MeansChecked fits had an interval for their held-out mean; MeansInside of them held it. MissP is the chance
	// that at least MeansChecked - MeansInside of them miss when every interval is right (binomial, the fits taken
	// as independent); Verdict follows it.
	MeansChecked int            `json:"meansChecked"`
	MeansInside  int            `json:"meansInside"`
	MissP        float64        `json:"missP"`
	Verdict      HoldoutVerdict `json:"verdict"`
	// Scatter compares the level's scatter between repetitions with the other levels' (nil without repetitions).
	Scatter  *ScatterCheck `json:"scatter,omitempty"`
	Warnings []Warning     `json:"warnings,omitempty"`
}

// CheckHoldout refits every usage fit of m without the points of level and predicts each of them with the 95 %
// (m.Confidence) prediction interval of a new observation. A line needs two other levels; fits that have the level
// but fewer other levels are named in the warnings, never silently dropped. It is pure.
func CheckHoldout(m *Model, level string) (Holdout, error) {
	if !slices.Contains(m.Measured.Levels, level) {
		return Holdout{}, fmt.Errorf("--holdout %q: the run has no such load level (its levels: %s)", level, strings.Join(m.Measured.Levels, ", "))
	}
	h := Holdout{RunID: m.RunID, Level: level, Confidence: m.Confidence}
	for _, w := range m.Warnings {
		if w.Code == WarnRead {
			h.Warnings = append(h.Warnings, w)
		}
	}
	for _, f := range m.Fits {
		if f.Kind != KindUsage {
			continue
		}
		held := slices.DeleteFunc(slices.Clone(f.Points), func(p Point) bool { return p.Level != level })
		if len(held) == 0 {
			continue
		}
		train := slices.DeleteFunc(slices.Clone(f.Points), func(p Point) bool { return p.Level == level })
		l := fitLoadLine(train, m.Confidence)
		if l.Levels < 2 {
			h.Warnings = append(h.Warnings, Warning{Code: WarnNotChecked, Mode: f.Mode, Component: f.Component, Metric: f.Metric, Kind: f.Kind,
				Message: fmt.Sprintf("%s %s %s: %d other load level(s), a line needs 2: not checked", f.Mode, f.Component, f.Metric, l.Levels)})
			continue
		}
		hf := HoldoutFit{Mode: f.Mode, Component: f.Component, Metric: f.Metric, Unit: f.Unit, LoadUnit: f.LoadUnit, Train: l}
		for _, p := range held {
			y, pi := l.Predict(p.X)
			hp := HoldoutPoint{Repetition: p.Repetition, X: p.X, Measured: p.Y, Predicted: y, PI: pi}
			if pi != nil {
				h.Held++
				if hp.Inside = pi.Low <= p.Y && p.Y <= pi.High; hp.Inside {
					h.Inside++
				}
			}
			hf.Points = append(hf.Points, hp)
		}
		hf.Mean = heldMean(l, held)
		if hf.Mean != nil {
			h.MeansChecked++
			if hf.Mean.Inside {
				h.MeansInside++
			}
		}
		h.Fits = append(h.Fits, hf)
	}
	h.MissP, h.Verdict = holdoutVerdict(h.MeansChecked, h.MeansInside, m.Confidence)
	h.Scatter = checkScatter(m, level)
	if len(h.Fits) == 0 {
		return h, fmt.Errorf("--holdout %q: no usage fit has two other load levels to train on", level)
	}
	return h, nil
}

// heldMean is the held-out points' mean (at their mean load) against l's interval for the mean of as many new
// observations; nil when l gives no interval.
func heldMean(l Line, held []Point) *HoldoutPoint {
	var x, y float64
	for _, p := range held {
		x += p.X
		y += p.Y
	}
	k := float64(len(held))
	x, y = x/k, y/k
	pred, pi := l.predictMean(x, len(held))
	if pi == nil {
		return nil
	}
	return &HoldoutPoint{X: x, Measured: y, Predicted: pred, PI: pi, Inside: pi.Low <= y && y <= pi.High}
}

// holdoutVerdict is the binomial chance of at least checked - inside misses among checked intervals that each miss
// with 1 - confidence, and the verdict at that level.
func holdoutVerdict(checked, inside int, confidence float64) (float64, HoldoutVerdict) {
	if checked == 0 {
		return 1, HoldoutNoVerdict
	}
	misses := checked - inside
	p := 1.0
	if misses > 0 {
		p = distuv.Binomial{N: float64(checked), P: 1 - confidence}.Survival(float64(misses) - 0.5)
	}
	if p < 1-confidence {
		return p, HoldoutTooNarrow
	}
	return p, HoldoutConsistent
}

// HoldoutText renders h: one line per held-out point, then the count inside the intervals.
func HoldoutText(h Holdout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Holdout check of run %s: load level %s held out, lines fitted on the other levels, %.0f %% prediction intervals\n\n", h.RunID, h.Level, 100*h.Confidence)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tCOMPONENT\tMETRIC\tREP\tLOAD\tMEASURED\tPREDICTED\tINTERVAL\tINSIDE")
	for _, f := range h.Fits {
		for _, p := range f.Points {
			in, iv := "n/a", "none (too few points)"
			if p.PI != nil {
				in, iv = map[bool]string{true: "yes", false: "NO"}[p.Inside], fmt.Sprintf("[%.4g, %.4g]", p.PI.Low, p.PI.High)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.4g %s\t%.4g %s\t%.4g\t%s\t%s\n", f.Mode, f.Component, f.Metric, p.Repetition, p.X, f.LoadUnit, p.Measured, f.Unit, p.Predicted, iv, in)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\n%d of %d held-out points inside their interval (a %.0f %% interval misses about %.0f %% of new points by design)\n", h.Inside, h.Held, 100*h.Confidence, 100*(1-h.Confidence))
	switch h.Verdict {
	case HoldoutNoVerdict:
		b.WriteString("No fit had an interval for its held-out mean: no verdict\n")
	default:
		chance := "no fit missed"
		if miss := h.MeansChecked - h.MeansInside; miss > 0 {
			chance = fmt.Sprintf("%d or more misses of %d happen by chance with p = %.3g", miss, h.MeansChecked, h.MissP)
		}
		fmt.Fprintf(&b, "%d of %d fits' held-out means inside the %.0f %% interval of a mean of as many new points (each fit one check; %s): %s\n",
			h.MeansInside, h.MeansChecked, 100*h.Confidence, chance, verdictText(h.Verdict))
	}
	if sc := h.Scatter; sc != nil {
		grows := "consistent with the same noise at every load"
		if sc.Grows {
			grows = "the NOISE GROWS with the load: intervals beyond the measured load are too narrow"
		}
		fmt.Fprintf(&b, "Scatter between repetitions at %s: %.2gx the other levels' (geometric mean over %d fits; p = %.2g with constant noise): %s\n",
			sc.Level, sc.Ratio, sc.Fits, sc.P, grows)
	}
	for _, w := range h.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w.Message)
	}
	return b.String()
}

func verdictText(v HoldoutVerdict) string {
	if v == HoldoutTooNarrow {
		return "TOO NARROW at this level: the intervals miss more than they should (at the top level: noise that grows with the load, or a curve); read the projection's intervals beyond the measured load as too narrow"
	}
	return "consistent with the intervals"
}
