package capacity

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// breakEven solves for the pods per node at which sidecar (mode sidecar) and ztunnel (mode ambient) cost the same
// at the shape's load, with a delta-method interval over the two fits and their caveats (istiod is left out: the
// same in both modes). The formula and its caveats: docs/capacity.md.
func breakEven(m *Model, sh Shape, metric, kind string) (BreakEven, bool) {
	s := m.Find(string(scenario.ModeSidecar), string(results.ComponentSidecar), metric, kind)
	z := m.Find(string(scenario.ModeAmbient), string(results.ComponentZtunnel), metric, kind)
	r := sh.RPS / 1000 / float64(sh.Nodes)
	be := BreakEven{Metric: metric, Kind: kind, KRPSPerNode: r, YourPodsPerNode: float64(sh.Pods) / float64(sh.Nodes)}
	if s == nil || z == nil {
		measured := func(mode scenario.Mode) bool {
			return slices.ContainsFunc(m.Fits, func(f Fit) bool { return f.Mode == string(mode) && f.Kind == kind })
		}
		if !measured(scenario.ModeSidecar) || !measured(scenario.ModeAmbient) {
			return BreakEven{}, false // the run compares no such modes: nothing to say
		}
		var lacks []string
		if s == nil {
			lacks = append(lacks, "mode sidecar's sidecar")
		}
		if z == nil {
			lacks = append(lacks, "mode ambient's ztunnel")
		}
		be.Caveats = []Caveat{CaveatIncomplete}
		be.Statement = fmt.Sprintf("no break-even for %s %s: %s %s was not measured", metric, kind, strings.Join(lacks, " and "), metric)
		return be, true
	}
	verb := "uses"
	if kind == KindReserved {
		verb = "reserves"
	}
	slope := func(l Line) float64 {
		if l.Slope == nil {
			return 0
		}
		return l.Slope.Value
	}
	as, bs, az, bz := s.Fixed.Value, slope(s.Line), z.Fixed.Value, slope(z.Line)
	num, den := az+(bz-bs)*r, as
	if den <= 0 || (s.Fixed.CI != nil && s.Fixed.CI.Low <= 0) {
		be.Statement = fmt.Sprintf("no break-even for %s %s: the sidecar's fixed %s per pod is not above 0", metric, kind, metric)
		return be, true
	}
	pstar := num / den
	sidecarAt := []float64{r / be.YourPodsPerNode}
	if pstar > 0 {
		sidecarAt = append(sidecarAt, r/pstar)
	}
	var why []string
	be.Caveats, why = fitCaveats([]usedFit{{z, []float64{r}}, {s, sidecarAt}})
	half := math.NaN()
	if s.HasInterval() && z.HasInterval() && !slices.Contains(be.Caveats, CaveatNoSlope) {
		vaS, vbS, cS := s.cov()
		vaZ, vbZ, cZ := z.cov()
		varNum := vaZ + r*r*vbZ + 2*r*cZ + r*r*vbS
		covND := -r * cS
		v := (varNum - 2*pstar*covND + pstar*pstar*vaS) / (den * den)
		df := math.Min(s.df, z.df)
		half = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-(1-m.Confidence)/2) * math.Sqrt(math.Max(v, 0))
	}
	e := estimate(pstar, half, be.Caveats...)
	be.PodsPerNode = &e
	ci := "no interval"
	if e.PI != nil {
		ci = fmt.Sprintf("%.0f %% interval %.2f..%.2f", 100*m.Confidence, e.PI.Low, e.PI.High)
	}
	cheaper := string(scenario.ModeAmbient)
	if be.YourPodsPerNode < pstar {
		cheaper = string(scenario.ModeSidecar)
	}
	caveat := ""
	if len(why) > 0 {
		caveat = "; built from fits that are " + strings.Join(why, ", ") + ": a direction, not a figure to plan on"
	}
	if pstar <= 0 && (e.PI == nil || e.PI.High <= 0) {
		be.Statement = fmt.Sprintf("ambient %s less %s than sidecar at any pods per node at %.3g krps per node (break-even %.2f, %s)%s",
			verb, metricWord(metric), r, pstar, ci, caveat)
		return be, true
	}
	be.Statement = fmt.Sprintf("above %.2f pods per node (%s) ambient %s less %s than sidecar, at %.3g krps per node; your shape has %.3g pods per node: %s %s less",
		pstar, ci, verb, metricWord(metric), r, be.YourPodsPerNode, cheaper, verb)
	if e.PI != nil && be.YourPodsPerNode >= e.PI.Low && be.YourPodsPerNode <= e.PI.High {
		be.Statement += " (within the interval: too close to call)"
	}
	be.Statement += caveat
	return be, true
}

// usedFit is a fit and the loads per unit a derived figure evaluates it at.
type usedFit struct {
	f  *Fit
	at []float64
}

// fitCaveats are the caveats a figure derived from the fits carries, as projectFit gives them to a figure of one
// fit (usage fits only: requests do not follow the load), and for each caveat the fits behind it, for people.
func fitCaveats(fits []usedFit) ([]Caveat, []string) {
	var caveats []Caveat
	var why []string
	byCaveat := map[Caveat][]string{}
	for _, u := range fits {
		f := u.f
		if f.Kind == KindReserved {
			if f.Trust == TrustNotLinear {
				byCaveat[CaveatNotLinear] = append(byCaveat[CaveatNotLinear], fmt.Sprintf("%s (%s)", f.Component, lackOfFitText(f.Line)))
			}
			continue
		}
		for _, x := range u.at {
			if f.InRange(x) {
				continue
			}
			c, what := CaveatExtrapolated, fmt.Sprintf("%s at %.3g %s (measured %s)", f.Component, x, f.LoadUnit, rangeText(f))
			if f.Trust == TrustConstant {
				c, what = CaveatNoSlope, fmt.Sprintf("%s (no slope measured: %s %s; taken as flat at %.3g)", f.Component, rangeText(f), f.LoadUnit, x)
			}
			byCaveat[c] = append(byCaveat[c], what)
			break
		}
		switch f.Trust {
		case TrustNotLinear:
			byCaveat[CaveatNotLinear] = append(byCaveat[CaveatNotLinear], fmt.Sprintf("%s (%s)", f.Component, lackOfFitText(f.Line)))
		case TrustUntested:
			byCaveat[CaveatUntested] = append(byCaveat[CaveatUntested], fmt.Sprintf("%s (%s)", f.Component, untestedWhy(f.Line)))
		}
	}
	for _, c := range caveatOrder {
		if w := byCaveat[c]; len(w) > 0 {
			caveats = append(caveats, c)
			why = append(why, caveatWord(c)+": "+strings.Join(w, " and "))
		}
	}
	return caveats, why
}

// caveatWord is how a sentence names a caveat.
func caveatWord(c Caveat) string {
	switch c {
	case CaveatNoSlope:
		return "without a slope"
	case CaveatNotLinear:
		return "not linear"
	case CaveatUntested:
		return "of untested linearity"
	}
	return string(c)
}

func metricWord(metric string) string {
	if metric == string(results.MetricMemory) {
		return "memory"
	}
	return "CPU"
}
