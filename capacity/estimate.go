package capacity

import (
	"math"

	"github.com/meshbench/meshbench/results"
)

// Estimate is a projected figure, its prediction interval (nil when a part has too few points for one, or a fit
// without a slope is used away from what it measured) and the caveats of the fits it comes from.
type Estimate struct {
	Value   float64           `json:"value"`
	PI      *results.Interval `json:"pi,omitempty"`
	Caveats []Caveat          `json:"caveats,omitempty"`
}

func (e Estimate) half() float64 {
	if e.PI == nil {
		return math.NaN()
	}
	return (e.PI.High - e.PI.Low) / 2
}

func estimate(v, half float64, caveats ...Caveat) Estimate {
	e := Estimate{Value: v, Caveats: mergeCaveats(caveats)}
	if !math.IsNaN(half) {
		e.PI = &results.Interval{Low: v - half, High: v + half}
	}
	return e
}

// sum adds estimates; the half-widths add in quadrature (the parts are treated as independent). One part without
// an interval leaves the sum without one; the sum carries every part's caveats.
func sum(es ...Estimate) Estimate {
	v, h2 := 0.0, 0.0
	var cs [][]Caveat
	for _, e := range es {
		v += e.Value
		h2 += e.half() * e.half()
		cs = append(cs, e.Caveats)
	}
	return estimate(v, math.Sqrt(h2), mergeCaveats(cs...)...)
}

func (e Estimate) scale(k float64) Estimate {
	return estimate(e.Value*k, math.Abs(k)*e.half(), e.Caveats...)
}

// Resources are CPU in vCPU and memory in GiB; a metric is nil when nothing measured it (Missing says so).
type Resources struct {
	CPU    *Estimate `json:"cpu,omitempty"`
	Memory *Estimate `json:"memory,omitempty"`
}

// part is one component's resources in a sum, and which of its metrics the mode lacks.
type part struct {
	r                   *Resources // nil: the component was not measured at all
	missCPU, missMemory bool
}

// sumParts adds the parts per metric. A metric that a part lacks marks the sum CaveatIncomplete; a metric that every
// part lacks is nil (never a 0 that stands for "not measured"). No parts at all is an exact 0 (mode none's mesh).
func sumParts(parts []part) Resources {
	metric := func(get func(Resources) *Estimate, missing func(part) bool) *Estimate {
		var es []Estimate
		incomplete := false
		for _, p := range parts {
			if p.r != nil {
				if e := get(*p.r); e != nil {
					es = append(es, *e)
				}
			}
			incomplete = incomplete || missing(p)
		}
		if len(es) == 0 && incomplete {
			return nil
		}
		s := sum(es...)
		if incomplete {
			s.Caveats = mergeCaveats(s.Caveats, []Caveat{CaveatIncomplete})
		}
		return &s
	}
	return Resources{
		CPU:    metric(func(r Resources) *Estimate { return r.CPU }, func(p part) bool { return p.missCPU }),
		Memory: metric(func(r Resources) *Estimate { return r.Memory }, func(p part) bool { return p.missMemory }),
	}
}

// minus is r - o per metric; nil where either lacks the metric.
func (r Resources) minus(o Resources) Resources {
	diff := func(a, b *Estimate) *Estimate {
		if a == nil || b == nil {
			return nil
		}
		d := sum(*a, b.scale(-1))
		return &d
	}
	return Resources{CPU: diff(r.CPU, o.CPU), Memory: diff(r.Memory, o.Memory)}
}

// price is the monthly cost of r at the prices; a metric r lacks leaves the cost CaveatIncomplete, both nil.
func (r Resources) price(perCPU, perMemory float64) *Estimate {
	var es []Estimate
	incomplete := false
	for _, m := range []struct {
		e     *Estimate
		price float64
	}{{r.CPU, perCPU}, {r.Memory, perMemory}} {
		if m.e == nil {
			incomplete = true
			continue
		}
		es = append(es, m.e.scale(m.price))
	}
	if len(es) == 0 {
		return nil
	}
	s := sum(es...)
	if incomplete {
		s.Caveats = mergeCaveats(s.Caveats, []Caveat{CaveatIncomplete})
	}
	return &s
}
