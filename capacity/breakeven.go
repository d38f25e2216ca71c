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
		return unmeasuredBreakEven(m, be, s == nil, z == nil)
	}
	as, bs, az, bz := s.Fixed.Value, lineSlope(s.Line), z.Fixed.Value, lineSlope(z.Line)
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
		half = breakEvenHalf(s, z, r, pstar, m.Confidence)
	}
	e := estimate(pstar, half, be.Caveats...)
	be.PodsPerNode = &e
	be.Statement = breakEvenStatement(be, e, m.Confidence, why)
	return be, true
}

// unmeasuredBreakEven is the break-even when the sidecar's or the ztunnel's fit is missing: an incomplete statement
// naming what was not measured, or false when the run compares no such modes at all.
func unmeasuredBreakEven(m *Model, be BreakEven, noSidecar, noZtunnel bool) (BreakEven, bool) {
	measured := func(mode scenario.Mode) bool {
		return slices.ContainsFunc(m.Fits, func(f Fit) bool { return f.Mode == string(mode) && f.Kind == be.Kind })
	}
	if !measured(scenario.ModeSidecar) || !measured(scenario.ModeAmbient) {
		return BreakEven{}, false // the run compares no such modes: nothing to say
	}
	var lacks []string
	if noSidecar {
		lacks = append(lacks, "mode sidecar's sidecar")
	}
	if noZtunnel {
		lacks = append(lacks, "mode ambient's ztunnel")
	}
	be.Caveats = []Caveat{CaveatIncomplete}
	be.Statement = fmt.Sprintf("no break-even for %s %s: %s %s was not measured", be.Metric, be.Kind, strings.Join(lacks, " and "), be.Metric)
	return be, true
}

// lineSlope is l's slope, 0 without one (the fit is flat).
func lineSlope(l Line) float64 {
	if l.Slope == nil {
		return 0
	}
	return l.Slope.Value
}

// breakEvenHalf is the half-width of the break-even pstar's interval at r krps per node: the delta method over the
// sidecar's (s) and the ztunnel's (z) fits, Student's t at the smaller of their degrees of freedom. Pure.
func breakEvenHalf(s, z *Fit, r, pstar, confidence float64) float64 {
	vaS, vbS, cS := s.cov()
	vaZ, vbZ, cZ := z.cov()
	den := s.Fixed.Value
	varNum := vaZ + r*r*vbZ + 2*r*cZ + r*r*vbS
	covND := -r * cS
	v := (varNum - 2*pstar*covND + pstar*pstar*vaS) / (den * den)
	df := math.Min(s.df, z.df)
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-(1-confidence)/2) * math.Sqrt(math.Max(v, 0))
}

// breakEvenStatement says which mode is cheaper at be's shape given the break-even e (its interval at confidence),
// and that it is only a direction when the fits it comes from are weak (why).
func breakEvenStatement(be BreakEven, e Estimate, confidence float64, why []string) string {
	pstar, r := e.Value, be.KRPSPerNode
	verb := "uses"
	if be.Kind == KindReserved {
		verb = "reserves"
	}
	ci := "no interval"
	if e.PI != nil {
		ci = fmt.Sprintf("%.0f %% interval %.2f..%.2f", 100*confidence, e.PI.Low, e.PI.High)
	}
	caveat := ""
	if len(why) > 0 {
		caveat = "; built from fits that are " + strings.Join(why, ", ") + ": a direction, not a figure to plan on"
	}
	if pstar <= 0 && (e.PI == nil || e.PI.High <= 0) {
		return fmt.Sprintf("ambient %s less %s than sidecar at any pods per node at %.3g krps per node (break-even %.2f, %s)%s",
			verb, metricWord(be.Metric), r, pstar, ci, caveat)
	}
	cheaper := string(scenario.ModeAmbient)
	if be.YourPodsPerNode < pstar {
		cheaper = string(scenario.ModeSidecar)
	}
	statement := fmt.Sprintf("above %.2f pods per node (%s) ambient %s less %s than sidecar, at %.3g krps per node; your shape has %.3g pods per node: %s %s less",
		pstar, ci, verb, metricWord(be.Metric), r, be.YourPodsPerNode, cheaper, verb)
	if e.PI != nil && be.YourPodsPerNode >= e.PI.Low && be.YourPodsPerNode <= e.PI.High {
		statement += " (within the interval: too close to call)"
	}
	return statement + caveat
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
