package results

import (
	"math"
	"slices"
	"testing"
)

// tol is the 4-decimal agreement the expected values below are stated to.
const tol = 5e-5

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

func nearInterval(got *Interval, low, high float64) bool {
	return got != nil && near(got.Low, low) && near(got.High, high)
}

// Expected values were computed independently of gonum: the arithmetic by hand as shown, the t critical values and
// p-values with Python mpmath 1.3.0 at 30 digits (Student t CDF from mpmath's own regularised incomplete beta, the
// quantile by root finding), and where noted checked against published textbook output.
func TestMeanCI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		values     []float64
		confidence float64
		wantMean   float64
		wantSD     float64
		wantCI     *Interval // nil: no interval
	}{
		{
			// mean 3; s² = (4+1+0+1+4)/4 = 2.5, s = 1.5811; t(0.975; 4) = 2.7764 (any t table);
			// half = 2.776445 · 1.581139 / √5 = 1.963243.
			name: "one to five 95%", values: []float64{1, 2, 3, 4, 5}, confidence: 0.95,
			wantMean: 3, wantSD: 1.5811, wantCI: &Interval{Low: 1.0368, High: 4.9632},
		},
		{
			// t(0.95; 4) = 2.1318; half = 2.131847 · 0.707107 = 1.507443.
			name: "one to five 90%", values: []float64{1, 2, 3, 4, 5}, confidence: 0.90,
			wantMean: 3, wantSD: 1.5811, wantCI: &Interval{Low: 1.4926, High: 4.5074},
		},
		{
			// Student (1908) sleep data, paired differences: R's t.test(extra ~ group, data = sleep, paired = TRUE)
			// prints "mean difference 1.58", "95 percent confidence interval: 0.7001142 2.4598858";
			// s = 1.229995, t(0.975; 9) = 2.262157.
			name: "student sleep differences", values: []float64{1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4}, confidence: 0.95,
			wantMean: 1.58, wantSD: 1.2300, wantCI: &Interval{Low: 0.7001, High: 2.4599},
		},
		{
			// mean 230, s = 20 (deviations -20, 0, 20), t(0.975; 2) = 4.302653; half = 4.302653 · 20 / √3 = 49.682754.
			name: "three repetitions", values: []float64{210, 230, 250}, confidence: 0.95,
			wantMean: 230, wantSD: 20, wantCI: &Interval{Low: 180.3172, High: 279.6828},
		},
		{
			// Equal values: no spread, the interval collapses (gonum's two-pass variance would leave ~1e-33 here).
			name: "zero variance", values: []float64{0.1, 0.1, 0.1}, confidence: 0.95,
			wantMean: 0.1, wantSD: 0, wantCI: &Interval{Low: 0.1, High: 0.1},
		},
		{name: "single value", values: []float64{7}, confidence: 0.95, wantMean: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mean, sd, ci := MeanCI(tt.values, tt.confidence)
			if !near(mean, tt.wantMean) || !near(sd, tt.wantSD) {
				t.Errorf("MeanCI mean, sd = %.6f, %.6f; want %.4f, %.4f", mean, sd, tt.wantMean, tt.wantSD)
			}
			switch {
			case tt.wantCI == nil && ci != nil:
				t.Errorf("MeanCI ci = %+v, want nil", *ci)
			case tt.wantCI != nil && !nearInterval(ci, tt.wantCI.Low, tt.wantCI.High):
				t.Errorf("MeanCI ci = %+v, want %+v", ci, *tt.wantCI)
			}
		})
	}

	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		mean, sd, ci := MeanCI(nil, 0.95)
		if !math.IsNaN(mean) || sd != 0 || ci != nil {
			t.Errorf("MeanCI(nil) = %v, %v, %v; want NaN, 0, nil", mean, sd, ci)
		}
	})
}

func TestWelch(t *testing.T) {
	t.Parallel()
	pv := func(v float64) *float64 { return &v }
	tests := []struct {
		name        string
		base, other []float64
		wantDiff    float64
		wantCI      *Interval
		wantDF      float64
		wantP       *float64
	}{
		{
			// The classic textbook Welch example, Student's sleep data (R's datasets::sleep). R:
			// t.test(extra ~ group, data = sleep) prints "t = -1.8608, df = 17.776, p-value = 0.07939",
			// "95 percent confidence interval: -3.3654832 0.2054832" for group 1 - group 2.
			// By hand: base (group 2) mean 2.33, s² = 4.009000; other (group 1) mean 0.75, s² = 3.200556;
			// sb = 0.400900, so = 0.320056, se = √0.720956 = 0.849091,
			// df = 0.720956² / (0.400900²/9 + 0.320056²/9) = 17.7765,
			// t(0.975; 17.7765) = 2.102817.
			name:     "student sleep",
			base:     []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4},
			other:    []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0},
			wantDiff: -1.58, wantCI: &Interval{Low: -3.3655, High: 0.2055}, wantDF: 17.7765, wantP: pv(0.0794),
		},
		{
			// Unequal variances by hand: s² = 2.5 and 10, sb = 0.5, so = 2, se² = 2.5;
			// df = 2.5² / (0.5²/4 + 2²/4) = 6.25 / 1.0625 = 100/17 = 5.882353; t(0.975; 100/17) = 2.458824;
			// half = 2.458824 · 1.581139 = 3.887742; t = 3/1.581139 = 1.897367, p = 0.107531.
			name:     "unequal variances",
			base:     []float64{1, 2, 3, 4, 5},
			other:    []float64{2, 4, 6, 8, 10},
			wantDiff: 3, wantCI: &Interval{Low: -0.8877, High: 6.8877}, wantDF: 5.8824, wantP: pv(0.1075),
		},
		{
			// Equal n and variance: df = 2(n-1) = 4 exactly; se = √(1/3+1/3) = 0.816497;
			// t(0.975; 4) = 2.776445 (table); half = 2.266958; t = 3.674235, p = 0.021312.
			name:     "equal variances",
			base:     []float64{1, 2, 3},
			other:    []float64{4, 5, 6},
			wantDiff: 3, wantCI: &Interval{Low: 0.7330, High: 5.2670}, wantDF: 4, wantP: pv(0.0213),
		},
		{
			// One sample without spread: df = so²/(so²/(no-1)) = no-1 = 2; se = √(4/3) = 1.154701;
			// t(0.975; 2) = 4.302653 (table); half = 4.968275; t = -24.248711, p = 0.001696.
			name:     "zero variance in base only",
			base:     []float64{150, 150, 150},
			other:    []float64{120, 122, 124},
			wantDiff: -28, wantCI: &Interval{Low: -32.9683, High: -23.0317}, wantDF: 2, wantP: pv(0.0017),
		},
		{
			name: "zero variance in both, different means", base: []float64{5, 5, 5}, other: []float64{7, 7},
			wantDiff: 2, wantCI: &Interval{Low: 2, High: 2}, wantDF: 0, wantP: pv(0),
		},
		{
			name: "zero variance in both, same means", base: []float64{5, 5}, other: []float64{5, 5, 5},
			wantDiff: 0, wantCI: &Interval{Low: 0, High: 0}, wantDF: 0, wantP: pv(1),
		},
		{name: "base n=1", base: []float64{1}, other: []float64{2, 3}, wantDiff: 1.5},
		{name: "other n=1", base: []float64{2, 3}, other: []float64{1}, wantDiff: -1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			diff, ci, df, p := Welch(tt.base, tt.other, 0.95)
			if !near(diff, tt.wantDiff) || !near(df, tt.wantDF) {
				t.Errorf("Welch diff, df = %.6f, %.6f; want %.4f, %.4f", diff, df, tt.wantDiff, tt.wantDF)
			}
			switch {
			case tt.wantCI == nil && ci != nil:
				t.Errorf("Welch ci = %+v, want nil", *ci)
			case tt.wantCI != nil && !nearInterval(ci, tt.wantCI.Low, tt.wantCI.High):
				t.Errorf("Welch ci = %+v, want %+v", ci, *tt.wantCI)
			}
			switch {
			case tt.wantP == nil && p != nil:
				t.Errorf("Welch p = %v, want nil", *p)
			case tt.wantP != nil && (p == nil || !near(*p, *tt.wantP)):
				t.Errorf("Welch p = %v, want %.4f", p, *tt.wantP)
			}
		})
	}

	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		diff, ci, df, p := Welch(nil, []float64{1, 2}, 0.95)
		if !math.IsNaN(diff) || ci != nil || df != 0 || p != nil {
			t.Errorf("Welch(nil, ...) = %v, %v, %v, %v; want NaN, nil, 0, nil", diff, ci, df, p)
		}
	})
	t.Run("symmetric", func(t *testing.T) {
		t.Parallel()
		a, b := []float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10}
		d1, ci1, df1, p1 := Welch(a, b, 0.95)
		d2, ci2, df2, p2 := Welch(b, a, 0.95)
		if d1 != -d2 || df1 != df2 || *p1 != *p2 || !near(ci1.Low, -ci2.High) || !near(ci1.High, -ci2.Low) {
			t.Errorf("Welch(a, b) and Welch(b, a) are not mirror images: %v %+v %v %v / %v %+v %v %v", d1, *ci1, df1, *p1, d2, *ci2, df2, *p2)
		}
	})
}

func TestConfidenceOutOfRangePanics(t *testing.T) {
	t.Parallel()
	for _, c := range []float64{0, 1, -0.5, 95, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MeanCI with confidence %v did not panic", c)
				}
			}()
			MeanCI([]float64{1, 2}, c)
		}()
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Welch with confidence %v did not panic", c)
				}
			}()
			Welch([]float64{1, 2}, []float64{1, 2}, c)
		}()
	}
}

func TestDefaultPairs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		modes []Mode
		want  []ModePair
	}{
		{name: "empty", modes: nil, want: nil},
		{name: "cni run without modes", modes: []Mode{""}, want: nil},
		{name: "none only", modes: []Mode{"none"}, want: nil},
		{
			name:  "all four, plan order",
			modes: []Mode{"none", "sidecar", "ambient", "waypoint"},
			want: []ModePair{{"none", "sidecar"}, {"none", "ambient"}, {"none", "waypoint"},
				{"sidecar", "ambient"}, {"sidecar", "waypoint"}},
		},
		{
			name:  "first-seen order is kept, duplicates and blanks ignored",
			modes: []Mode{"waypoint", "", "sidecar", "waypoint", "none", "ambient"},
			want: []ModePair{{"none", "waypoint"}, {"none", "sidecar"}, {"none", "ambient"},
				{"sidecar", "waypoint"}, {"sidecar", "ambient"}},
		},
		{name: "study A", modes: []Mode{"sidecar", "ambient"}, want: []ModePair{{"sidecar", "ambient"}}},
		{name: "no baseline", modes: []Mode{"ambient", "waypoint"}, want: nil},
		{name: "unknown modes vs none", modes: []Mode{"none", "cilium"}, want: []ModePair{{"none", "cilium"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := DefaultPairs(tt.modes); !slices.Equal(got, tt.want) {
				t.Errorf("DefaultPairs(%q) = %v, want %v", tt.modes, got, tt.want)
			}
		})
	}
}
