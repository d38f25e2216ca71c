package capacity

import (
	"math"
	"slices"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestSumParts: a sum adds what was measured, in quadrature for the intervals, carries its parts' caveats, is
// incomplete where a part lacks a metric, and is absent (never 0) where every part lacks it.
func TestSumParts(t *testing.T) {
	t.Parallel()
	e := func(v, half float64, cs ...Caveat) *Estimate { x := estimate(v, half, cs...); return &x }
	both := func(c, m *Estimate) *Resources { return &Resources{CPU: c, Memory: m} }
	for _, tc := range []struct {
		name     string
		parts    []part
		cpu, mem *Estimate
	}{
		{"nothing to sum: an exact 0", nil, e(0, 0), e(0, 0)},
		{"two parts in quadrature", []part{{r: both(e(1, 3), e(2, 0))}, {r: both(e(2, 4), e(1, 0))}}, e(3, 5), e(3, 0)},
		{"caveats merged in order", []part{{r: both(e(1, 0, CaveatUntested), e(1, 0))}, {r: both(e(1, 0, CaveatExtrapolated, CaveatNoSlope), e(1, 0))}},
			e(2, 0, CaveatNoSlope, CaveatExtrapolated, CaveatUntested), e(2, 0)},
		{"a part without an interval", []part{{r: both(e(1, 1), e(1, 1))}, {r: both(e(1, math.NaN()), e(1, 1))}}, e(2, math.NaN()), e(2, math.Sqrt(2))},
		{"one metric missing: incomplete, the other complete", []part{{r: both(e(1, 0), e(1, 0))}, {r: both(e(1, 0), nil), missMemory: true}},
			e(2, 0), e(1, 0, CaveatIncomplete)},
		{"a component not measured at all", []part{{r: both(e(1, 0), e(1, 0))}, {missCPU: true, missMemory: true}},
			e(1, 0, CaveatIncomplete), e(1, 0, CaveatIncomplete)},
		{"every part lacks memory: absent", []part{{r: both(e(1, 0), nil), missMemory: true}}, e(1, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sumParts(tc.parts)
			for _, c := range []struct {
				what      string
				got, want *Estimate
			}{{string(results.MetricCPU), got.CPU, tc.cpu}, {string(results.MetricMemory), got.Memory, tc.mem}} {
				switch {
				case c.want == nil || c.got == nil:
					if c.want != c.got {
						t.Errorf("%s: %+v, want %+v", c.what, c.got, c.want)
					}
				case math.Abs(c.got.Value-c.want.Value) > 1e-12 || (c.got.PI == nil) != (c.want.PI == nil) ||
					c.got.PI != nil && math.Abs(c.got.half()-c.want.half()) > 1e-12 || !slices.Equal(c.got.Caveats, c.want.Caveats):
					t.Errorf("%s: %+v %+v, want %+v %+v", c.what, *c.got, c.got.PI, *c.want, c.want.PI)
				}
			}
		})
	}
}

// TestPrice: a cost lacking a metric is incomplete; with neither it is absent.
func TestPrice(t *testing.T) {
	t.Parallel()
	cpu, mem := estimate(2, 1), estimate(4, 0, CaveatExtrapolated)
	if c := (Resources{CPU: &cpu, Memory: &mem}).price(10, 1); c.Value != 24 || c.half() != 10 || !slices.Equal(c.Caveats, []Caveat{CaveatExtrapolated}) {
		t.Errorf("full: %+v", c)
	}
	if c := (Resources{CPU: &cpu}).price(10, 1); c.Value != 20 || !slices.Equal(c.Caveats, []Caveat{CaveatIncomplete}) {
		t.Errorf("cpu only: %+v", c)
	}
	if c := (Resources{}).price(10, 1); c != nil {
		t.Errorf("nothing: %+v", c)
	}
}
