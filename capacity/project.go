package capacity

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/results"
)

// SchemaVersion is the "schemaVersion" of `meshbench project -o json`.
const SchemaVersion = "meshbench.dev/capacity/v1"

// Estimate is a projected figure and its prediction interval (nil when a part has too few points for one).
type Estimate struct {
	Value float64           `json:"value"`
	PI    *results.Interval `json:"pi,omitempty"`
}

func (e Estimate) half() float64 {
	if e.PI == nil {
		return math.NaN()
	}
	return (e.PI.High - e.PI.Low) / 2
}

func estimate(v, half float64) Estimate {
	e := Estimate{Value: v}
	if !math.IsNaN(half) {
		e.PI = &results.Interval{Low: v - half, High: v + half}
	}
	return e
}

// sum adds estimates; the half-widths add in quadrature (the parts are treated as independent). One part without
// an interval leaves the sum without one.
func sum(es ...Estimate) Estimate {
	v, h2 := 0.0, 0.0
	for _, e := range es {
		v += e.Value
		h2 += e.half() * e.half()
	}
	return estimate(v, math.Sqrt(h2))
}

func (e Estimate) scale(k float64) Estimate { return estimate(e.Value*k, math.Abs(k)*e.half()) }

// Resources are CPU in vCPU and memory in GiB.
type Resources struct {
	CPU    Estimate `json:"cpu"`
	Memory Estimate `json:"memory"`
}

func addResources(rs ...Resources) Resources {
	var c, m []Estimate
	for _, r := range rs {
		c, m = append(c, r.CPU), append(m, r.Memory)
	}
	return Resources{CPU: sum(c...), Memory: sum(m...)}
}

func (r Resources) minus(o Resources) Resources {
	return addResources(r, Resources{CPU: o.CPU.scale(-1), Memory: o.Memory.scale(-1)})
}

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
	Mesh           Estimate  `json:"mesh"`
	MeshReserved   *Estimate `json:"meshReserved,omitempty"`
	VsNone         *Estimate `json:"vsNone,omitempty"`
	VsNoneReserved *Estimate `json:"vsNoneReserved,omitempty"`
}

// ModeProjection is one mode at the shape.
type ModeProjection struct {
	Mode       string                `json:"mode"`
	Components []ComponentProjection `json:"components"`
	// Mesh sums the mode's mesh components (sidecar, ztunnel, waypoint, istiod); Total adds the app.
	Mesh          Resources  `json:"mesh"`
	MeshReserved  *Resources `json:"meshReserved,omitempty"`
	Total         Resources  `json:"total"`
	TotalReserved *Resources `json:"totalReserved,omitempty"`
	// VsNone is Total minus mode none's Total (absent for none, or when none was not measured).
	VsNone         *Resources `json:"vsNone,omitempty"`
	VsNoneReserved *Resources `json:"vsNoneReserved,omitempty"`
	Cost           *Cost      `json:"cost,omitempty"`
	Warnings       []string   `json:"warnings,omitempty"`
}

// BreakEven is the pods per node above which ambient (one ztunnel per node) costs less than sidecar (one proxy per
// pod) for a metric and kind, at the shape's rate per node.
type BreakEven struct {
	Metric          string    `json:"metric"`
	Kind            string    `json:"kind"`
	KRPSPerNode     float64   `json:"krpsPerNode"`
	PodsPerNode     *Estimate `json:"podsPerNode,omitempty"` // nil: no break-even (see Statement)
	YourPodsPerNode float64   `json:"yourPodsPerNode"`
	Statement       string    `json:"statement"`
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
	// IstiodCurve is the istiod curve the istiod usage fits come from (--istiod-curve), absent without one.
	IstiodCurve *IstiodCurveFit `json:"istiodCurve,omitempty"`
	Assumptions []string        `json:"assumptions"`
	Warnings    []string        `json:"warnings,omitempty"`
	// Hops is the latency added per hop, when the run measured several chain depths (Model.Hops).
	Hops *Hops `json:"hops,omitempty"`
}

// Project scales m's fits to the shape (which must be valid: Shape.Validate). Pure.
func Project(m *Model, sh Shape) Projection {
	p := Projection{SchemaVersion: SchemaVersion, RunID: m.RunID, DataPlane: m.DataPlane, Notes: m.Notes,
		Confidence: m.Confidence, Shape: sh, Measured: m.Measured, Fits: m.Fits, IstiodCurve: m.IstiodCurve, Warnings: slices.Clone(m.Warnings), Hops: m.Hops}
	var none *Resources
	var noneReserved *Resources
	for _, mode := range m.Modes {
		mp := ModeProjection{Mode: mode}
		var mesh, meshRes, app, appRes []Resources
		reservedComplete := true
		for _, comp := range componentOrder {
			cu, cm := m.Find(mode, comp, results.MetricCPU, KindUsage), m.Find(mode, comp, results.MetricMemory, KindUsage)
			if cu == nil || cm == nil {
				if cu != nil || cm != nil {
					mp.Warnings = append(mp.Warnings, fmt.Sprintf("%s: only one of cpu and memory was measured: left out", comp))
				}
				continue
			}
			units, x := unitsAt(scaling[comp], sh)
			cp := ComponentProjection{Component: comp, Per: scaling[comp], Units: units, LoadPerUnit: x}
			cp.Usage = Resources{CPU: projectFit(cu, units, x, sh, &mp.Warnings), Memory: projectFit(cm, units, x, sh, &mp.Warnings)}
			ru, rm := m.Find(mode, comp, results.MetricCPU, KindReserved), m.Find(mode, comp, results.MetricMemory, KindReserved)
			if ru != nil && rm != nil {
				r := Resources{CPU: projectFit(ru, units, x, sh, &mp.Warnings), Memory: projectFit(rm, units, x, sh, &mp.Warnings)}
				cp.Reserved = &r
			} else {
				reservedComplete = false
			}
			if slices.Contains(meshComponents, comp) {
				mesh = append(mesh, cp.Usage)
				if cp.Reserved != nil {
					meshRes = append(meshRes, *cp.Reserved)
				}
			} else {
				app = append(app, cp.Usage)
				if cp.Reserved != nil {
					appRes = append(appRes, *cp.Reserved)
				}
			}
			mp.Components = append(mp.Components, cp)
		}
		mp.Mesh = addResources(mesh...)
		mp.Total = addResources(append(slices.Clone(mesh), app...)...)
		if reservedComplete && len(mp.Components) > 0 {
			mr, tr := addResources(meshRes...), addResources(append(slices.Clone(meshRes), appRes...)...)
			mp.MeshReserved, mp.TotalReserved = &mr, &tr
		}
		if mode == "none" {
			none, noneReserved = &mp.Total, mp.TotalReserved
		}
		p.Modes = append(p.Modes, mp)
	}
	for i := range p.Modes {
		mp := &p.Modes[i]
		if none != nil && mp.Mode != "none" {
			d := mp.Total.minus(*none)
			mp.VsNone = &d
			if noneReserved != nil && mp.TotalReserved != nil {
				dr := mp.TotalReserved.minus(*noneReserved)
				mp.VsNoneReserved = &dr
			}
		}
		if sh.PriceCPU != nil && sh.PriceMemory != nil {
			price := func(r Resources) Estimate {
				return sum(r.CPU.scale(*sh.PriceCPU), r.Memory.scale(*sh.PriceMemory))
			}
			c := &Cost{Mesh: price(mp.Mesh)}
			if mp.MeshReserved != nil {
				e := price(*mp.MeshReserved)
				c.MeshReserved = &e
			}
			if mp.VsNone != nil {
				e := price(*mp.VsNone)
				c.VsNone = &e
			}
			if mp.VsNoneReserved != nil {
				e := price(*mp.VsNoneReserved)
				c.VsNoneReserved = &e
			}
			mp.Cost = c
		}
	}
	for _, metric := range []string{results.MetricCPU, results.MetricMemory} {
		for _, kind := range []string{KindUsage, KindReserved} {
			if be, ok := breakEven(m, sh, metric, kind); ok {
				p.BreakEven = append(p.BreakEven, be)
			}
		}
	}
	if none == nil {
		p.Warnings = append(p.Warnings, "mode none was not measured: no difference from none")
	}
	if m.IstiodCurve != nil {
		for _, n := range m.IstiodCurve.Notes {
			p.Warnings = append(p.Warnings, "istiod curve: "+n)
		}
	}
	p.Assumptions = assumptions(m, sh)
	return p
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

// projectFit is units x the fit's prediction at x, in vCPU or GiB, and the warnings of going there.
func projectFit(f *Fit, units int, x float64, sh Shape, warnings *[]string) Estimate {
	y, pi := f.Predict(x)
	half := math.NaN()
	if pi != nil {
		half = (pi.High - pi.Low) / 2
	}
	scale := float64(units) / 1000 // millicores -> vCPU
	if f.Metric == results.MetricMemory {
		scale = float64(units) / 1024 // MiB -> GiB
	}
	// Range warnings name the component only: its cpu and memory share the points. Requests do not follow the
	// load, so a reservation is never "extrapolated".
	what := f.Component
	add := func(msg string) {
		if !slices.Contains(*warnings, msg) {
			*warnings = append(*warnings, msg)
		}
	}
	switch {
	case f.Kind == KindReserved:
	case f.Source == SourceIstiodCurve && f.Trust == TrustConstant:
		add(fmt.Sprintf("%s: the istiod curve measured one size (%s app pods): projected as that constant for %g app pods, not scaled", what, rangeText(f), x))
	case f.Source == SourceIstiodCurve && !f.InRange(x):
		add(fmt.Sprintf("%s: %g app pods is outside the istiod curve's measured %s pods: extrapolated along its line", what, x, rangeText(f)))
	case f.Trust == TrustConstant && f.Per == PerMesh && !f.InRange(x):
		add(fmt.Sprintf("%s: one mesh size measured (%s app pods): projected as that constant for %g app pods, not scaled", what, rangeText(f), x))
	case f.Trust == TrustConstant && f.Per != PerMesh && !f.InRange(x) && f.N > 0:
		add(fmt.Sprintf("%s: one load level measured (%s %s): assumed the same at %.3g %s", what, rangeText(f), f.LoadUnit, x, f.LoadUnit))
	case !f.InRange(x):
		add(fmt.Sprintf("%s: %.3g %s is outside the measured %s: extrapolated", what, x, f.LoadUnit, rangeText(f)))
	}
	if f.Kind == KindUsage && f.Per == PerPod && len(sh.RPSPerPod) > 0 && f.Slope != nil {
		lo, hi := slices.Min(sh.RPSPerPod)/1000, slices.Max(sh.RPSPerPod)/1000
		if !f.InRange(lo) || !f.InRange(hi) {
			add(fmt.Sprintf("%s: the pods' rates (%.3g..%.3g krps per pod) leave the measured %s: the line is assumed to hold there", what, lo, hi, rangeText(f)))
		}
	}
	what = f.Component + " " + f.Metric
	if f.Kind == KindReserved {
		what += " reserved"
	}
	if f.Trust == TrustNotLinear {
		add(fmt.Sprintf("%s: the measured points are not on a line (lack-of-fit p = %.3g): the projection is not to be trusted", what, *f.LackOfFitP))
	}
	if pi == nil {
		add(fmt.Sprintf("%s: %d point(s): no interval (needs %d)", what, f.N, MinIntervalPoints))
	}
	return estimate(y*scale, half*scale)
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

// breakEven solves p·(a_s + b_s·r/p) = a_z + b_z·r for p (pods per node), with r the shape's krps per node, from the
// sidecar fit of mode sidecar and the ztunnel fit of mode ambient; its interval is the delta method's over the two
// fits' coefficient covariances (independent fits), at the smaller of their degrees of freedom. istiod is left out:
// the same control plane runs in both modes.
func breakEven(m *Model, sh Shape, metric, kind string) (BreakEven, bool) {
	s, z := m.Find("sidecar", results.ComponentSidecar, metric, kind), m.Find("ambient", results.ComponentZtunnel, metric, kind)
	if s == nil || z == nil {
		return BreakEven{}, false
	}
	r := sh.RPS / 1000 / float64(sh.Nodes)
	be := BreakEven{Metric: metric, Kind: kind, KRPSPerNode: r, YourPodsPerNode: float64(sh.Pods) / float64(sh.Nodes)}
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
	half := math.NaN()
	if s.HasInterval() && z.HasInterval() {
		vaS, vbS, cS := s.cov()
		vaZ, vbZ, cZ := z.cov()
		varNum := vaZ + r*r*vbZ + 2*r*cZ + r*r*vbS
		covND := -r * cS
		v := (varNum - 2*pstar*covND + pstar*pstar*vaS) / (den * den)
		df := math.Min(s.df, z.df)
		half = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-(1-m.Confidence)/2) * math.Sqrt(math.Max(v, 0))
	}
	e := estimate(pstar, half)
	be.PodsPerNode = &e
	ci := "no interval"
	if e.PI != nil {
		ci = fmt.Sprintf("%.0f %% interval %.2f..%.2f", 100*m.Confidence, e.PI.Low, e.PI.High)
	}
	cheaper := "ambient"
	if be.YourPodsPerNode < pstar {
		cheaper = "sidecar"
	}
	if pstar <= 0 && (e.PI == nil || e.PI.High <= 0) {
		be.Statement = fmt.Sprintf("ambient %s less %s than sidecar at any pods per node at %.3g krps per node (break-even %.2f, %s)",
			verb, metricWord(metric), r, pstar, ci)
		return be, true
	}
	be.Statement = fmt.Sprintf("above %.2f pods per node (%s) ambient %s less %s than sidecar, at %.3g krps per node; your shape has %.3g pods per node: %s %s less",
		pstar, ci, verb, metricWord(metric), r, be.YourPodsPerNode, cheaper, verb)
	if e.PI != nil && be.YourPodsPerNode >= e.PI.Low && be.YourPodsPerNode <= e.PI.High {
		be.Statement += " (within the interval: too close to call)"
	}
	return be, true
}

func metricWord(metric string) string {
	if metric == results.MetricMemory {
		return "memory"
	}
	return "CPU"
}

func assumptions(m *Model, sh Shape) []string {
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
		a = append(a, fmt.Sprintf("istiod: one mesh size measured (%s app pods): its cost is that constant, not scaled with the mesh (issue 13 section 3 measures the curve)", ints(m.Measured.AppPods)))
	} else {
		a = append(a, fmt.Sprintf("istiod: fitted against the app pods in the mesh, measured at %s", ints(m.Measured.AppPods)))
	}
	a = append(a,
		"fits use the load windows only: the idle window is not a load level (traffic-free behaviour can differ)",
		"mesh = sidecar + ztunnel + waypoint + istiod as measured in each mode (istio-cni and the load generator are not counted); total = mesh + app",
		fmt.Sprintf("intervals: %.0f %% prediction intervals of one new run; a fleet's interval is one unit's times the units (run-to-run variation shared by all units: conservative); sums combine intervals in quadrature (parts independent)", conf),
		"break-even: sidecar per pod against ztunnel per node at the shape's rate per node; istiod left out (the same in both modes)",
	)
	if sh.PriceCPU != nil && sh.PriceMemory != nil {
		a = append(a, fmt.Sprintf("prices: %g per vCPU-month, %g per GiB-month (1 GiB = 1024 MiB)", *sh.PriceCPU, *sh.PriceMemory))
	}
	return a
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
