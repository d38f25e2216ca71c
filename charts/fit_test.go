package charts

import (
	"strings"
	"testing"
)

func TestFitChart(t *testing.T) {
	t.Parallel()
	c := FitChart{ID: "capacity-sidecar-cpu", Title: "sidecar cpu per pod against load", XLabel: "krps per pod", YLabel: "millicores per pod",
		Series: []FitSeries{
			{Name: "sidecar", Line: true, Fixed: 6, Slope: 850, Note: "linear",
				Points: []FitPoint{{0.025, 27.1}, {0.025, 27.9}, {0.05, 48.2}, {0.05, 48.9}, {0.1, 91.3}, {0.1, 90.2}}},
			{Name: "ambient", Points: []FitPoint{{0.05, 3.1}}}, // one level: points, no line
		}}
	if c.Empty() || (FitChart{Series: []FitSeries{{Name: "x"}}}).Empty() == false {
		t.Fatal("Empty is wrong")
	}
	svg := c.SVG()
	counts := wellFormed(t, svg)
	if counts["circle"] != 7 {
		t.Errorf("%d points drawn, want 7", counts["circle"])
	}
	// the fitted line: dashed from 0 to the first level, solid over the measured range; none for ambient
	if counts["line"] < 2 || strings.Count(string(svg), `stroke-width="2"`) != 1 || strings.Count(string(svg), `stroke-dasharray="4 4"`) != 1 {
		t.Errorf("want one solid and one dashed fitted line:\n%s", svg)
	}
	golden(t, "fit.svg", svg)
}
