package capacity

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

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
}

// Holdout is the model's own check on a run: fit on the other levels, predict the held-out one.
type Holdout struct {
	RunID      string       `json:"runID"`
	Level      string       `json:"level"`
	Confidence float64      `json:"confidence"`
	Fits       []HoldoutFit `json:"fits"`
	Held       int          `json:"held"`   // held-out points with a prediction interval
	Inside     int          `json:"inside"` // of those, inside it
	Warnings   []string     `json:"warnings,omitempty"`
}

// CheckHoldout refits every usage fit of m without the points of level and predicts each of them with the 95 %
// (m.Confidence) prediction interval of a new observation. A line needs two other levels; fits that have the level
// but fewer other levels are named in the warnings, never silently dropped. It is pure.
func CheckHoldout(m *Model, level string) (Holdout, error) {
	if !slices.Contains(m.Measured.Levels, level) {
		return Holdout{}, fmt.Errorf("--holdout %q: the run has no such load level (its levels: %s)", level, strings.Join(m.Measured.Levels, ", "))
	}
	h := Holdout{RunID: m.RunID, Level: level, Confidence: m.Confidence}
	for _, f := range m.Fits {
		if f.Kind != KindUsage {
			continue
		}
		held := slices.DeleteFunc(slices.Clone(f.Points), func(p Point) bool { return p.Level != level })
		if len(held) == 0 {
			continue
		}
		train := slices.DeleteFunc(slices.Clone(f.Points), func(p Point) bool { return p.Level == level })
		l := FitLine(train, m.Confidence)
		if l.Levels < 2 {
			h.Warnings = append(h.Warnings, fmt.Sprintf("%s %s %s: %d other load level(s), a line needs 2: not checked", f.Mode, f.Component, f.Metric, l.Levels))
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
		h.Fits = append(h.Fits, hf)
	}
	if len(h.Fits) == 0 {
		return h, fmt.Errorf("--holdout %q: no usage fit has two other load levels to train on", level)
	}
	return h, nil
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
	for _, w := range h.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	return b.String()
}
