package capacity

import (
	"fmt"
	"math"
	"slices"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// SchemaVersion is the "schemaVersion" of `meshbench project -o json`. v2: warnings are objects with a code,
// figures carry caveats, a metric nothing measured is absent (never 0), modes list what they miss.
const SchemaVersion = "meshbench.dev/capacity/v2"

// ComponentProjection is one component of a mode at the shape.
type ComponentProjection struct {
	Component   string     `json:"component"`
	Per         string     `json:"per"`         // pod | node | waypoint | mesh
	Units       int        `json:"units"`       // pods, nodes or waypoints projected (1 for istiod)
	LoadPerUnit float64    `json:"loadPerUnit"` // krps per unit; app pods for istiod
	Usage       Resources  `json:"usage"`
	Reserved    *Resources `json:"reserved,omitempty"`
}

// Cost is a monthly cost at the shape's prices (CPU x price per vCPU-month + memory x price per GiB-month).
type Cost struct {
	Mesh           *Estimate `json:"mesh,omitempty"`
	MeshReserved   *Estimate `json:"meshReserved,omitempty"`
	VsNone         *Estimate `json:"vsNone,omitempty"`
	VsNoneReserved *Estimate `json:"vsNoneReserved,omitempty"`
}

// ModeProjection is one mode at the shape.
type ModeProjection struct {
	Mode       string                `json:"mode"`
	Components []ComponentProjection `json:"components"`
	// Missing are the parts the mode has (modeParts) or measured in part, that no fit covers: the sums that would
	// hold them are CaveatIncomplete.
	Missing []Missing `json:"missing,omitempty"`
	// Mesh sums the mode's mesh components (sidecar, ztunnel, waypoint, istiod); Total adds the app.
	Mesh          Resources  `json:"mesh"`
	MeshReserved  *Resources `json:"meshReserved,omitempty"`
	Total         Resources  `json:"total"`
	TotalReserved *Resources `json:"totalReserved,omitempty"`
	// VsNone is Total minus mode none's Total (absent for none, or when none was not measured).
	VsNone         *Resources `json:"vsNone,omitempty"`
	VsNoneReserved *Resources `json:"vsNoneReserved,omitempty"`
	Cost           *Cost      `json:"cost,omitempty"`
	Warnings       []Warning  `json:"warnings,omitempty"`
}

// BreakEven is the pods per node above which ambient (one ztunnel per node) costs less than sidecar (one proxy per
// pod) for a metric and kind, at the shape's rate per node.
type BreakEven struct {
	Metric          string    `json:"metric"`
	Kind            string    `json:"kind"`
	KRPSPerNode     float64   `json:"krpsPerNode"`
	PodsPerNode     *Estimate `json:"podsPerNode,omitempty"` // nil: no break-even (see Statement)
	YourPodsPerNode float64   `json:"yourPodsPerNode"`
	// Caveats are those of the two fits it is built from, where it uses them (as a figure's: CaveatExtrapolated,
	// CaveatNotLinear, CaveatUntested, CaveatNoSlope); PodsPerNode carries the same.
	Caveats   []Caveat `json:"caveats,omitempty"`
	Statement string   `json:"statement"`
}

// Projection is `meshbench project`'s result.
type Projection struct {
	SchemaVersion string           `json:"schemaVersion"`
	RunID         string           `json:"runID"`
	DataPlane     string           `json:"dataPlane,omitempty"`
	Notes         []string         `json:"notes,omitempty"`
	Confidence    float64          `json:"confidence"`
	Shape         Shape            `json:"shape"`
	Measured      Measured         `json:"measured"`
	Modes         []ModeProjection `json:"modes"`
	BreakEven     []BreakEven      `json:"breakEven,omitempty"`
	Fits          []Fit            `json:"fits"`
	// LinearityTests is Model.LinearityTests: the lack-of-fit tests Holm's adjustment counts.
	LinearityTests int `json:"linearityTests"`
	// Shortfalls are the levels that achieved less than minAchievedShare of their rate (Model.Shortfalls).
	Shortfalls []LoadShortfall `json:"shortfalls,omitempty"`
	// HoldoutLevel is the top configured load level: `meshbench project RUN_DIR --holdout LEVEL` checks the intervals
	// there, where the constant-noise assumption fails first. Empty with fewer than 3 levels.
	HoldoutLevel string `json:"holdoutLevel,omitempty"`
	// Scatter checks the constant-noise assumption at the top level (absent without repetitions at 2 levels).
	Scatter *ScatterCheck `json:"scatter,omitempty"`
	// IstiodCurve is the istiod curve the istiod usage fits come from (--istiod-curve), absent without one.
	IstiodCurve *IstiodCurveFit `json:"istiodCurve,omitempty"`
	Assumptions []string        `json:"assumptions"`
	Warnings    []Warning       `json:"warnings,omitempty"`
	// Hops is the latency added per hop, when the run measured several chain depths (Model.Hops).
	Hops *Hops `json:"hops,omitempty"`
}

// Project scales m's fits to the shape (which must be valid: Shape.Validate). Pure.
func Project(m *Model, sh Shape) Projection {
	p := Projection{SchemaVersion: SchemaVersion, RunID: m.RunID, DataPlane: m.DataPlane, Notes: m.Notes,
		Confidence: m.Confidence, Shape: sh, Measured: m.Measured, Fits: m.Fits, LinearityTests: m.LinearityTests,
		Shortfalls: m.Shortfalls, HoldoutLevel: holdoutLevel(m), Scatter: checkScatter(m, topLevel(m)), IstiodCurve: m.IstiodCurve,
		Warnings: slices.Clone(m.Warnings), Hops: m.Hops}
	if sc := p.Scatter; sc != nil && sc.Grows {
		p.Warnings = append(p.Warnings, Warning{Code: WarnNoiseGrows, Message: fmt.Sprintf(
			"the scatter between repetitions at load level %s is %.2gx the other levels' (geometric mean over %d fits; p = %.2g that constant noise gives this): the noise grows with the load, so intervals beyond the measured load are too narrow",
			sc.Level, sc.Ratio, sc.Fits, sc.P)})
	}
	var none *ModeProjection
	for _, mode := range m.Modes {
		p.Modes = append(p.Modes, projectMode(m, mode, sh))
	}
	for i := range p.Modes {
		if p.Modes[i].Mode == string(scenario.ModeNone) {
			none = &p.Modes[i]
		}
	}
	for i := range p.Modes {
		mp := &p.Modes[i]
		if none != nil && mp.Mode != none.Mode {
			d := mp.Total.minus(none.Total)
			mp.VsNone = &d
			if none.TotalReserved != nil && mp.TotalReserved != nil {
				dr := mp.TotalReserved.minus(*none.TotalReserved)
				mp.VsNoneReserved = &dr
			}
		}
		if sh.PriceCPU != nil && sh.PriceMemory != nil {
			price := func(r *Resources) *Estimate {
				if r == nil {
					return nil
				}
				return r.price(*sh.PriceCPU, *sh.PriceMemory)
			}
			mp.Cost = &Cost{Mesh: price(&mp.Mesh), MeshReserved: price(mp.MeshReserved), VsNone: price(mp.VsNone), VsNoneReserved: price(mp.VsNoneReserved)}
		}
	}
	for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
		for _, kind := range []string{KindUsage, KindReserved} {
			if be, ok := breakEven(m, sh, metric, kind); ok {
				p.BreakEven = append(p.BreakEven, be)
			}
		}
	}
	if none == nil {
		p.Warnings = append(p.Warnings, Warning{Code: WarnNoBaseline, Message: "mode none was not measured: no difference from none"})
	}
	if m.IstiodCurve != nil {
		for _, n := range m.IstiodCurve.Notes {
			p.Warnings = append(p.Warnings, Warning{Code: WarnIstiodCurve, Component: string(results.ComponentIstiod), Message: "istiod curve: " + n})
		}
	}
	p.Assumptions = assumptions(m, sh, p.HoldoutLevel)
	return p
}

// projectMode projects one mode's components and sums them. Its components are those the mode has (modeParts)
// and any other it measured; a metric or kind that none of its fits covers is Missing, and each sum that would hold
// it is CaveatIncomplete. Reserved figures are projected when the mode has any request samples at all.
func projectMode(m *Model, mode string, sh Shape) ModeProjection {
	mp := ModeProjection{Mode: mode, Missing: m.Missing(mode)}
	reserved := m.hasReserved(mode)
	var meshU, allU, meshR, allR []part
	for _, comp := range m.components(mode) {
		units, x := unitsAt(scaling[comp], sh)
		cp := ComponentProjection{Component: comp, Per: scaling[comp], Units: units, LoadPerUnit: x}
		project := func(kind string) part {
			var r Resources
			var pt part
			for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
				f := m.Find(mode, comp, metric, kind)
				if f == nil {
					if metric == string(results.MetricCPU) {
						pt.missCPU = true
					} else {
						pt.missMemory = true
					}
					continue
				}
				e := projectFit(f, units, x, sh, &mp.Warnings)
				if metric == string(results.MetricCPU) {
					r.CPU = &e
				} else {
					r.Memory = &e
				}
			}
			if r.CPU != nil || r.Memory != nil {
				pt.r = &r
			}
			return pt
		}
		u := project(KindUsage)
		var rs part
		if reserved {
			rs = project(KindReserved)
		}
		missingWarning(&mp, comp)
		if u.r != nil || rs.r != nil {
			if u.r != nil {
				cp.Usage = *u.r
			}
			cp.Reserved = rs.r
			mp.Components = append(mp.Components, cp)
		}
		allU, allR = append(allU, u), append(allR, rs)
		if slices.Contains(meshComponents, comp) {
			meshU, meshR = append(meshU, u), append(meshR, rs)
		}
	}
	mp.Mesh, mp.Total = sumParts(meshU), sumParts(allU)
	if reserved {
		mr, tr := sumParts(meshR), sumParts(allR)
		mp.MeshReserved, mp.TotalReserved = &mr, &tr
	}
	return mp
}

// missingWarning says which of comp's figures the mode lacks, once per kind.
func missingWarning(mp *ModeProjection, comp string) {
	for _, kind := range []string{KindUsage, KindReserved} {
		var metrics []string
		for _, ms := range mp.Missing {
			if ms.Component == comp && ms.Kind == kind {
				metrics = append(metrics, ms.Metric)
			}
		}
		w := Warning{Code: WarnMissing, Mode: mp.Mode, Component: comp, Kind: kind}
		switch len(metrics) {
		case 0:
			continue
		case 1:
			w.Metric = metrics[0]
			w.Message = fmt.Sprintf("%s: no %s %s figures (only %s was measured, or its cases were left out): the mode's sums lack it and are marked incomplete", comp, metrics[0], kind, otherMetric(metrics[0]))
		default:
			w.Message = fmt.Sprintf("%s: not measured in this mode (no %s figures: no samples, or its cases were left out): the mode's sums lack it and are marked incomplete", comp, kind)
		}
		addWarning(&mp.Warnings, w)
	}
}

func otherMetric(metric string) string {
	if metric == string(results.MetricCPU) {
		return string(results.MetricMemory)
	}
	return string(results.MetricCPU)
}

// holdoutLevel is the top numeric level when holding it out leaves a line (3 or more levels), else "".
func holdoutLevel(m *Model) string {
	top := topLevel(m)
	if top == "" || len(m.Measured.Levels) < 3 {
		return ""
	}
	return top
}

// unitsAt is how many units of a scaling the shape has and the load on each.
func unitsAt(per string, sh Shape) (int, float64) {
	krps := sh.RPS / 1000
	switch per {
	case PerPod:
		return sh.Pods, krps / float64(sh.Pods)
	case PerNode:
		return sh.Nodes, krps / float64(sh.Nodes)
	case PerWaypoint:
		return sh.Namespaces, krps / float64(sh.Namespaces)
	}
	return 1, float64(sh.Pods)
}

// projectFit is units x the fit's prediction at x, in vCPU or GiB, with the caveats and warnings of going there. A
// usage fit without a slope used away from what it measured has no interval: its slope is unknown, and the
// interval of its mean would say the figure is known.
func projectFit(f *Fit, units int, x float64, sh Shape, warnings *[]Warning) Estimate {
	y, pi := f.Predict(x)
	scale := float64(units) / 1000 // millicores -> vCPU
	if f.Metric == string(results.MetricMemory) {
		scale = float64(units) / 1024 // MiB -> GiB
	}
	// Range warnings name the component only: its cpu and memory share the points. Requests do not follow the
	// load, so a reservation is never "extrapolated".
	what := f.Component
	var caveats []Caveat
	add := func(code WarningCode, metric, msg string) {
		w := Warning{Code: code, Mode: f.Mode, Component: f.Component, Metric: metric, Message: msg}
		if metric != "" {
			w.Kind = f.Kind
		}
		addWarning(warnings, w)
	}
	noSlope := f.Trust == TrustConstant && f.N > 0 && !f.InRange(x)
	switch {
	case f.Kind == KindReserved:
		noSlope = false
	case noSlope && f.Source == SourceIstiodCurve:
		add(WarnNoSlope, "", fmt.Sprintf("%s: the istiod curve measured one size (%s app pods): its figure there stands in for %g app pods, with no interval", what, rangeText(f), x))
	case noSlope && f.Per == PerMesh:
		add(WarnNoSlope, "", fmt.Sprintf("%s: one mesh size measured (%s app pods): its figure there stands in for %g app pods, with no interval (--istiod-curve gives a line)", what, rangeText(f), x))
	case noSlope && f.NarrowSpan:
		add(WarnNoSlope, "", fmt.Sprintf("%s: load levels too close for a slope (%s %s): their mean stands in at %.3g %s, with no interval", what, rangeText(f), f.LoadUnit, x, f.LoadUnit))
	case noSlope:
		add(WarnNoSlope, "", fmt.Sprintf("%s: one load level measured (%s %s): its figure stands in at %.3g %s, with no interval", what, rangeText(f), f.LoadUnit, x, f.LoadUnit))
	case f.Source == SourceIstiodCurve && !f.InRange(x):
		caveats = append(caveats, CaveatExtrapolated)
		add(WarnExtrapolated, "", fmt.Sprintf("%s: %g app pods is outside the istiod curve's measured %s pods: extrapolated along its line", what, x, rangeText(f)))
	case !f.InRange(x):
		caveats = append(caveats, CaveatExtrapolated)
		add(WarnExtrapolated, "", fmt.Sprintf("%s: %.3g %s is outside the measured %s: extrapolated", what, x, f.LoadUnit, rangeText(f)))
	}
	if noSlope {
		caveats, pi = append(caveats, CaveatNoSlope), nil
	}
	if f.Kind == KindUsage && f.Per == PerPod && len(sh.RPSPerPod) > 0 && f.Slope != nil {
		lo, hi := slices.Min(sh.RPSPerPod)/1000, slices.Max(sh.RPSPerPod)/1000
		if !f.InRange(lo) || !f.InRange(hi) {
			add(WarnPerPodRates, "", fmt.Sprintf("%s: the pods' rates (%.3g..%.3g krps per pod) leave the measured %s: the line is assumed to hold there", what, lo, hi, rangeText(f)))
		}
	}
	what = f.Component + " " + f.Metric
	if f.Kind == KindReserved {
		what += " reserved"
	}
	switch {
	case f.Trust == TrustNotLinear:
		caveats = append(caveats, CaveatNotLinear)
		add(WarnNotLinear, f.Metric, fmt.Sprintf("%s: the measured points are not on a line (%s): the projection is not to be trusted", what, lackOfFitText(f.Line)))
	case f.Trust == TrustUntested && f.Kind == KindUsage:
		caveats = append(caveats, CaveatUntested)
		add(WarnUntested, "", fmt.Sprintf("%s: linearity untested (%s): the line is assumed", f.Component, untestedWhy(f.Line)))
	}
	if pi == nil && !noSlope {
		add(WarnNoInterval, f.Metric, fmt.Sprintf("%s: %d point(s): no interval (needs %d)", what, f.N, minIntervalPoints))
	}
	half := math.NaN()
	if pi != nil {
		half = (pi.High - pi.Low) / 2
	}
	return estimate(y*scale, half*scale, caveats...)
}

// untestedWhy is why a line's linearity was not tested.
func untestedWhy(l Line) string {
	if l.Levels == 2 {
		return "2 load levels: a line always fits them; measure 3 or more"
	}
	return fmt.Sprintf("%d load levels without repetitions: no scatter to test the line against; repeat each level", l.Levels)
}

// lackOfFitText is a line's lack-of-fit p-value, and the adjusted one it is judged on when there is one.
func lackOfFitText(l Line) string {
	if l.LackOfFitPHolm == nil {
		return fmt.Sprintf("lack-of-fit p = %.3g", *l.LackOfFitP)
	}
	return fmt.Sprintf("lack-of-fit p = %.3g, %.3g after Holm's adjustment for the run's tests", *l.LackOfFitP, *l.LackOfFitPHolm)
}

func rangeText(f *Fit) string {
	if f.Per == PerMesh { // app pods: whole numbers, 2000 rather than 2e+03
		if f.LoadMin == f.LoadMax {
			return fmt.Sprintf("%g", f.LoadMin)
		}
		return fmt.Sprintf("%g..%g", f.LoadMin, f.LoadMax)
	}
	if f.LoadMin == f.LoadMax {
		return fmt.Sprintf("%.3g", f.LoadMin)
	}
	return fmt.Sprintf("%.3g..%.3g", f.LoadMin, f.LoadMax)
}

func assumptions(m *Model, sh Shape, holdout string) []string {
	conf := 100 * m.Confidence
	a := []string{
		"load: the load generator's achieved rate, not the configured qps; --rps is requests per second into the app, spread evenly over its pods, nodes and waypoints",
		"the production app fans out like the measured one: same calls per entry request, same payloads and protocols",
		fmt.Sprintf("ztunnel runs on each of the %d nodes; the run measured %s node(s)", sh.Nodes, ints(m.Measured.Nodes)),
	}
	if len(m.Measured.Waypoints) > 0 {
		a = append(a, fmt.Sprintf("one waypoint per namespace (%d); the run measured %s waypoint(s)", sh.Namespaces, ints(m.Measured.Waypoints)))
	}
	if c := m.IstiodCurve; c != nil {
		a = append(a, fmt.Sprintf("istiod: from the curve %s (run %s, %s), not the run's own figure: fixed + slope x app pods, measured at %s pods with %s window(s) per size; largest size %d pods, %d services, %d namespaces; the curve's mesh has one service per %s pods and no connected proxy (no xDS push cost)",
			c.File, c.RunID, c.Schema, ints(c.Sizes), repsText(c.Repetitions), c.Largest.Pods, c.Largest.Services, c.Largest.Namespaces, podsPerService(c.Largest)))
	} else if len(m.Measured.AppPods) < 2 {
		a = append(a, fmt.Sprintf("istiod: one mesh size measured (%s app pods): at another size its figure there stands in, not scaled with the mesh and with no interval (--istiod-curve takes istiod's line from hack/istiodscale's curve)", ints(m.Measured.AppPods)))
	} else {
		a = append(a, fmt.Sprintf("istiod: fitted against the app pods in the mesh, measured at %s", ints(m.Measured.AppPods)))
	}
	a = append(a,
		"fits use the load windows only: the idle window is not a load level (traffic-free behaviour can differ)",
		"mesh = sidecar + ztunnel + waypoint + istiod as measured in each mode (istio-cni and the load generator are not counted); total = mesh + app",
		fmt.Sprintf("intervals: %.0f %% prediction intervals of one new run; a fleet's interval is one unit's times the units (run-to-run variation shared by all units: conservative); sums combine intervals in quadrature (parts independent)", conf),
		"intervals assume the scatter between repetitions is the same at every load (constant noise); where it grows with the load, intervals beyond the measured load are too narrow (noise proportional to the load: CPU's 95 % intervals at 3-10x the top level held a new run's figure "+proportionalCoverage+" of the time in a synthetic study)"+holdoutText(holdout),
		fmt.Sprintf("a slope needs load levels at least %gx apart (highest over lowest load per unit); closer levels give a constant, not projected away from its load with an interval", MinLoadSpan),
		fmt.Sprintf("linearity: a lack-of-fit F test per fit with 3 or more levels and repetitions; %s", holmText(m.LinearityTests, conf)),
		fmt.Sprintf("a level is a shortfall when its cases achieved less than %.0f %% of its configured rate", 100*minAchievedShare),
		"break-even: sidecar per pod against ztunnel per node at the shape's rate per node; istiod left out (the same in both modes); it carries the caveats of the two fits where it uses them",
	)
	if sh.PriceCPU != nil && sh.PriceMemory != nil {
		a = append(a, fmt.Sprintf("prices: %g per vCPU-month, %g per GiB-month (1 GiB = 1024 MiB)", *sh.PriceCPU, *sh.PriceMemory))
	}
	return a
}

// proportionalCoverage is what TestStudyNoise measures: the coverage of the CPU fits' 95 % prediction intervals at 3x,
// 5x and 10x the top measured load when the noise grows in proportion to the load (memory, mostly fixed, keeps 94 %).
const proportionalCoverage = "71-74 %"

func holdoutText(level string) string {
	if level == "" {
		return "; with 3 or more load levels, meshbench project RUN_DIR --holdout TOP_LEVEL checks it on the run"
	}
	return fmt.Sprintf("; check it on this run: meshbench project RUN_DIR --holdout %s (the top level, refitted from the others: its points should fall inside their intervals)", level)
}

func holmText(tests int, conf float64) string {
	switch tests {
	case 0:
		return "no fit could be tested"
	case 1:
		return fmt.Sprintf("not linear when p < %.0f %%", 100-conf)
	}
	return fmt.Sprintf("not linear when its p, adjusted for the run's %d tests (Holm), is below %.0f %%: any false \"not linear\" in at most %.0f %% of runs (unadjusted, %d tests at %.0f %% would give one in %.0f %%)",
		tests, 100-conf, 100-conf, tests, 100-conf, 100*(1-math.Pow(conf/100, float64(tests))))
}

// repsText is "3" when every size has 3 windows, else each size's count.
func repsText(v []int) string {
	if len(v) > 0 && slices.Min(v) == slices.Max(v) {
		return fmt.Sprint(v[0])
	}
	return ints(v)
}

func podsPerService(s MeshSize) string {
	if s.Services == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g", float64(s.Pods)/float64(s.Services))
}

func ints(v []int) string {
	if len(v) == 0 {
		return "no"
	}
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(x)
	}
	return s
}
