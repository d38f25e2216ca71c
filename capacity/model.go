package capacity

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Kinds of a fit: what the scheduler sees of a component.
const (
	KindUsage    = "usage"    // the "avg" samples: what the containers used
	KindReserved = "reserved" // the "request" samples: what the scheduler reserved for them
)

// Scaling units: what one fitted unit of a component is.
const (
	PerPod      = "pod"      // app and sidecar: one app pod
	PerNode     = "node"     // ztunnel: one node
	PerWaypoint = "waypoint" // waypoint: one waypoint
	PerMesh     = "mesh"     // istiod: the whole control plane, against the number of app pods in the mesh
)

// scaling says per what a component is fitted.
var scaling = map[string]string{
	string(results.ComponentApp):      PerPod,
	string(results.ComponentSidecar):  PerPod,
	string(results.ComponentZtunnel):  PerNode,
	string(results.ComponentWaypoint): PerWaypoint,
	string(results.ComponentIstiod):   PerMesh,
}

// meshComponents are summed into a mode's mesh cost (as results.Summarize's mesh total).
var meshComponents = []string{string(results.ComponentSidecar), string(results.ComponentZtunnel), string(results.ComponentWaypoint), string(results.ComponentIstiod)}

var componentOrder = []string{string(results.ComponentApp), string(results.ComponentSidecar), string(results.ComponentZtunnel), string(results.ComponentWaypoint), string(results.ComponentIstiod)}

// Fit is one fitted line of a mode, component, metric and kind.
type Fit struct {
	Mode      string `json:"mode"`
	Component string `json:"component"`
	Metric    string `json:"metric"` // cpu | memory
	Kind      string `json:"kind"`   // usage | reserved
	Per       string `json:"per"`    // pod | node | waypoint | mesh
	Unit      string `json:"unit"`   // of Y: millicores or MiB per Per
	LoadUnit  string `json:"loadUnit"`
	// Source is where the points come from: empty for the run, SourceIstiodCurve for an istiod curve.
	Source string `json:"source,omitempty"`
	Line
	Points []Point `json:"points"`
}

// Measured is the shape the run measured: the range every projection is judged against.
type Measured struct {
	AppPods   []int    `json:"appPods"`   // distinct app pod counts
	Nodes     []int    `json:"nodes"`     // distinct node counts
	Waypoints []int    `json:"waypoints"` // distinct waypoint counts (waypoint mode)
	Levels    []string `json:"levels"`    // configured load levels
	RPSMin    float64  `json:"rpsMin"`    // achieved rate range over all cases
	RPSMax    float64  `json:"rpsMax"`
}

// Model is every fit of one run.
type Model struct {
	RunID      string   `json:"runID"`
	DataPlane  string   `json:"dataPlane,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	Confidence float64  `json:"confidence"`
	Measured   Measured `json:"measured"`
	Modes      []string `json:"modes"`
	Fits       []Fit    `json:"fits"`
	// LinearityTests is how many lack-of-fit tests the fits hold: each fit's Trust follows its p-value adjusted
	// for them (Line.LackOfFitPHolm).
	LinearityTests int `json:"linearityTests"`
	// Shortfalls are the levels whose achieved rate fell below minAchievedShare of the configured one.
	Shortfalls []LoadShortfall `json:"shortfalls,omitempty"`
	// IstiodCurve is the curve that replaced the run's istiod usage fits (UseIstiodCurve), or nil.
	IstiodCurve *IstiodCurveFit `json:"istiodCurve,omitempty"`
	Warnings    []Warning       `json:"warnings,omitempty"`
	// Hops is the latency added per hop (BuildHops); nil unless the run measured several chain depths.
	Hops *Hops `json:"hops,omitempty"`
}

// minAchievedShare is the share of a level's configured rate below which its achieved rate is a shortfall: the load
// generator or the mode could not carry the level (saturated app, too few connections, a throttled client). The
// fits use the achieved rate, so the points are right, but the level is not what the scenario asked for.
const minAchievedShare = 0.9

// LoadShortfall is a mode's configured load level whose cases achieved less than minAchievedShare of it.
type LoadShortfall struct {
	Mode     string  `json:"mode"`
	Level    string  `json:"level"`
	Asked    float64 `json:"asked"`    // rps, the configured level
	Achieved float64 `json:"achieved"` // rps, the mean over the level's cases
	Cases    int     `json:"cases"`
}

// Find returns the fit of mode, component, metric and kind, or nil.
func (m *Model) Find(mode, component, metric, kind string) *Fit {
	for i := range m.Fits {
		f := &m.Fits[i]
		if f.Mode == mode && f.Component == component && f.Metric == metric && f.Kind == kind {
			return f
		}
	}
	return nil
}

// components are the components of mode's cost: those the mode has (modeParts) and any other it measured, in
// componentOrder.
func (m *Model) components(mode string) []string {
	var out []string
	for _, comp := range componentOrder {
		if slices.Contains(modeParts[scenario.Mode(mode)], comp) ||
			slices.ContainsFunc(m.Fits, func(f Fit) bool { return f.Mode == mode && f.Component == comp }) {
			out = append(out, comp)
		}
	}
	return out
}

func (m *Model) hasReserved(mode string) bool {
	return slices.ContainsFunc(m.Fits, func(f Fit) bool { return f.Mode == mode && f.Kind == KindReserved })
}

// Missing is what mode's cost lacks: each metric and kind of its components (components) that no fit covers; the
// reserved kind only when the mode has any reservation fit (a run without request samples has no reserved figures
// at all, and lacks none).
func (m *Model) Missing(mode string) []Missing {
	kinds := []string{KindUsage}
	if m.hasReserved(mode) {
		kinds = append(kinds, KindReserved)
	}
	var out []Missing
	for _, comp := range m.components(mode) {
		for _, kind := range kinds {
			for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
				if m.Find(mode, comp, metric, kind) == nil {
					out = append(out, Missing{Component: comp, Metric: metric, Kind: kind})
				}
			}
		}
	}
	return out
}

// Build fits run's load windows at the confidence level (0: results.DefaultConfidence) in three steps, filter
// (fitSample, caseUnits), group (group) and fit (fitAll); cases left out get a warning. Pure and deterministic.
func Build(run *results.Run, confidence float64) (*Model, error) {
	if confidence == 0 {
		confidence = results.DefaultConfidence
	}
	if !(confidence > 0 && confidence < 1) {
		return nil, fmt.Errorf("confidence %v is not in (0, 1)", confidence)
	}
	m := &Model{RunID: run.Meta.RunID, Notes: run.Meta.Notes, Confidence: confidence}
	for _, w := range run.Warnings {
		m.Warnings = append(m.Warnings, Warning{Code: WarnRead, Message: w.String()})
	}
	if run.Meta.Cluster.Istio != nil {
		m.DataPlane = string(run.Meta.Cluster.Istio.DataPlane)
	}
	points, used := m.group(run.Samples, newRunIndex(run))
	m.fitAll(points, confidence)
	m.addShortfalls(used)
	slices.Sort(m.Measured.AppPods)
	slices.Sort(m.Measured.Nodes)
	slices.Sort(m.Measured.Waypoints)
	slices.SortStableFunc(m.Measured.Levels, compareLevels)
	if m.Hops = BuildHops(run, confidence); m.Hops != nil {
		m.Warnings = append(m.Warnings, Warning{Code: WarnPooledDepths, Message: poolingWarning(m.Hops.Depths)})
	}
	if len(m.Fits) == 0 {
		return m, fmt.Errorf("run %s: no load-window cpu or memory samples of app, sidecar, ztunnel, waypoint or istiod in ok cases with an achieved rate: nothing to fit", m.RunID)
	}
	return m, nil
}

// runIndex is what the filter and group steps read of a run besides the samples.
type runIndex struct {
	latest    map[string]results.CaseResult // the latest record of each case
	rps       map[string]float64            // each case's achieved rate: its load window's unlabelled qps
	counted   map[podsKey]int               // the pods a component's figures sum (its allocation samples' pod count)
	waypoints map[string]int                // the waypoints each case measured (waypointCounts)
	nodes     int                           // run.json's cluster nodes, unless a case's results.FactNodes says otherwise
}

type podsKey struct{ caseID, component string }

func newRunIndex(run *results.Run) *runIndex {
	ix := &runIndex{latest: map[string]results.CaseResult{}, rps: map[string]float64{}, counted: map[podsKey]int{},
		waypoints: waypointCounts(run.Cases), nodes: len(run.Meta.Cluster.Nodes)}
	for _, c := range run.Cases {
		ix.latest[c.CaseID] = c
	}
	for _, s := range run.Samples {
		// Not a load target's part: those are parts of the run's unlabelled qps.
		if s.Component == results.ComponentLoadgen && s.Metric == results.MetricQPS && s.Stat == results.StatValue && s.Unit == results.UnitRPS && s.Window.Kind == results.WindowLoad &&
			!results.IsLoadTargetPart(s.Labels) {
			ix.rps[s.CaseID] += s.Value
		}
		if s.Metric == results.MetricPods && s.Stat == results.StatCount && s.Window.Kind == results.WindowLoad {
			ix.counted[podsKey{s.CaseID, string(s.Component)}] = int(s.Value)
		}
	}
	return ix
}

// fitSample (filter) says whether a fit takes sample s, and then per what its component scales and the kind of fit:
// a load window's cpu or memory of a scaled component, with a mode and a level, as usage ("avg") or reservation
// (allocation "request" samples, results.SourcePodSpec; runs without them give usage fits only).
func fitSample(s results.Sample) (per, kind string, ok bool) {
	if s.Window.Kind != results.WindowLoad || s.Mode == "" || s.Load == "" {
		return "", "", false
	}
	per, ok = scaling[string(s.Component)]
	if !ok || (s.Metric != results.MetricCPU && s.Metric != results.MetricMemory) {
		return "", "", false
	}
	switch s.Stat {
	case results.StatAvg:
		return per, KindUsage, true
	case results.StatRequest:
		return per, KindReserved, true
	}
	return "", "", false
}

// caseUnits is what scales the figures of one case.
type caseUnits struct {
	rps         float64 // achieved
	pods, nodes int
}

// caseUnits (filter) is the rate, app pods and nodes of the case a sample belongs to, when the fits take its samples.
// A case that is not ok is skipped silently (Read and Summarize already say so; a failed case measured only part of
// its windows); one without an achieved rate, app pod count or a readable node count gives the reason it is left out.
func (ix *runIndex) caseUnits(caseID string) (u caseUnits, leftOut string, ok bool) {
	c, ok := ix.latest[caseID]
	if !ok || c.Status != results.StatusOK {
		return caseUnits{}, "", false
	}
	u.rps = ix.rps[caseID]
	if u.rps <= 0 {
		return caseUnits{}, fmt.Sprintf("case %q: no achieved rate (loadgen qps samples in the load window): left out", caseID), false
	}
	pods, err := factInt(c, results.FactAppPods)
	if err == nil && pods < 1 {
		err = fmt.Errorf("fact %q is 0", results.FactAppPods)
	}
	if err != nil {
		return caseUnits{}, fmt.Sprintf("case %q: %v: left out", caseID, err), false
	}
	u.pods, u.nodes = pods, ix.nodes
	if _, ok := c.Facts[results.FactNodes]; ok {
		if u.nodes, err = factInt(c, results.FactNodes); err != nil {
			return caseUnits{}, fmt.Sprintf("case %q: %v: left out", caseID, err), false
		}
	}
	return u, "", true
}

// group (group) turns the samples the filter keeps into points per fit, in sample order, and records the measured
// range (Measured) and the modes as first measured; used are the cases in the fits, in order. A sample whose case
// lacks the count of its component's unit is left out with a warning.
func (m *Model) group(samples []results.Sample, ix *runIndex) (points map[fitKey][]Point, used []caseLoad) {
	points = map[fitKey][]Point{}
	leftOut := func(msg string) { addWarning(&m.Warnings, Warning{Code: WarnCaseLeftOut, Message: msg}) }
	seen := map[string]bool{}
	for _, s := range samples {
		per, kind, ok := fitSample(s)
		if !ok {
			continue
		}
		u, reason, ok := ix.caseUnits(s.CaseID)
		if reason != "" {
			leftOut(reason)
		}
		if !ok {
			continue
		}
		m.measure(u, s.Load)
		units, x, reason := m.perUnit(s, per, u, ix)
		if reason != "" {
			leftOut(reason)
			continue
		}
		k := fitKey{string(s.Mode), string(s.Component), string(s.Metric), kind}
		level := s.Load
		if per == PerMesh {
			level = strconv.Itoa(u.pods)
		}
		points[k] = append(points[k], Point{Level: level, Repetition: s.Repetition, X: x, Y: s.Value / float64(units)})
		addStr(&m.Modes, string(s.Mode))
		if !seen[s.CaseID] {
			seen[s.CaseID] = true
			used = append(used, caseLoad{string(s.Mode), s.Load, u.rps})
		}
	}
	return points, used
}

// measure widens the measured range by a case the fits take: its achieved rate, app pods and configured level.
func (m *Model) measure(u caseUnits, level string) {
	first := len(m.Measured.AppPods) == 0 // every kept sample adds its pods
	if first || u.rps < m.Measured.RPSMin {
		m.Measured.RPSMin = u.rps
	}
	if first || u.rps > m.Measured.RPSMax {
		m.Measured.RPSMax = u.rps
	}
	addInt(&m.Measured.AppPods, u.pods)
	addStr(&m.Measured.Levels, level)
}

// perUnit (group) is how many units of per sample s's figure sums and its x: the achieved krps per unit, or the app
// pods for the mesh. A reason instead when the case has no count of the unit (nodes, waypoints).
func (m *Model) perUnit(s results.Sample, per string, u caseUnits, ix *runIndex) (units int, x float64, leftOut string) {
	krps := u.rps / 1000
	switch per {
	case PerPod:
		units, x = u.pods, krps/float64(u.pods)
		if n := ix.counted[podsKey{s.CaseID, string(s.Component)}]; n > u.pods {
			// Runs recorded before the load clients' proxies had a component of their own summed them into the
			// sidecar figure: per pod over the pods the figure sums, never four proxies over three app pods.
			addWarning(&m.Warnings, Warning{Code: WarnCountedPods, Component: string(s.Component), Message: fmt.Sprintf("%s figures sum %d pods where the app has %d: recorded before the load clients' proxies were counted apart (%s), they include them; per pod over the %d",
				s.Component, n, u.pods, string(results.ComponentLoadgenProxy), n)})
			units = n
		}
	case PerNode:
		if u.nodes < 1 {
			return 0, 0, fmt.Sprintf("case %q: run.json lists no nodes: no per-node %s figures", s.CaseID, s.Component)
		}
		addInt(&m.Measured.Nodes, u.nodes)
		units, x = u.nodes, krps/float64(u.nodes)
	case PerWaypoint:
		w, ok := ix.waypoints[s.CaseID]
		if !ok || w < 1 {
			return 0, 0, fmt.Sprintf("case %q: %s samples but no waypoint count (fact %q): left out", s.CaseID, s.Component, results.FactWaypoints)
		}
		addInt(&m.Measured.Waypoints, w)
		units, x = w, krps/float64(w)
	case PerMesh:
		units, x = 1, float64(u.pods)
	}
	return units, x, ""
}

// fitKey identifies one fit of a Model.
type fitKey struct{ mode, component, metric, kind string }

// fitAll fits each key's points, in a stable order (modes as first measured, componentOrder, metric, usage before
// reserved), warns of load fits whose levels lie too close for a slope, and judges linearity over all the fits.
func (m *Model) fitAll(points map[fitKey][]Point, confidence float64) {
	keys := slices.Collect(maps.Keys(points))
	slices.SortFunc(keys, func(a, b fitKey) int {
		return cmp.Or(cmp.Compare(slices.Index(m.Modes, a.mode), slices.Index(m.Modes, b.mode)),
			cmp.Compare(slices.Index(componentOrder, a.component), slices.Index(componentOrder, b.component)),
			cmp.Compare(a.metric, b.metric), cmp.Compare(kindRank(a.kind), kindRank(b.kind)))
	})
	for _, k := range keys {
		pts := points[k]
		slices.SortStableFunc(pts, func(a, b Point) int { return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.Repetition, b.Repetition)) })
		f := Fit{Mode: k.mode, Component: k.component, Metric: k.metric, Kind: k.kind, Per: scaling[k.component],
			Unit: unitOf(k.metric) + " per " + scaling[k.component], LoadUnit: loadUnit(scaling[k.component]),
			Line: fitLoadLine(pts, confidence), Points: pts}
		m.Fits = append(m.Fits, f)
		if f.NarrowSpan && f.Kind == KindUsage {
			addWarning(&m.Warnings, Warning{Code: WarnNarrowSpan, Mode: f.Mode, Component: f.Component, Message: fmt.Sprintf(
				"%s: its %d load levels give %s %s, a span of %.3gx; a slope needs the highest at least %gx the lowest: no slope, measured as a constant (measure levels further apart)",
				f.Component, f.Levels, rangeText(&f), f.LoadUnit, f.LoadMax/f.LoadMin, MinLoadSpan)})
		}
	}
	lines := make([]*Line, len(m.Fits))
	for i := range m.Fits {
		lines[i] = &m.Fits[i].Line
	}
	m.LinearityTests = adjustLinearity(lines)
}

// caseLoad is a case's mode, configured level and achieved rate (rps).
type caseLoad struct {
	mode, level string
	achieved    float64
}

// addShortfalls records, with a warning each, the (mode, configured level) groups of cases whose mean achieved rate
// is below minAchievedShare of the level, in order of first appearance; levels that are not a number (max) ask for
// no rate.
func (m *Model) addShortfalls(cases []caseLoad) {
	type key struct{ mode, level string }
	sums := map[key]*LoadShortfall{}
	var order []key
	for _, c := range cases {
		asked, err := strconv.ParseFloat(c.level, 64)
		if err != nil || asked <= 0 {
			continue
		}
		k := key{c.mode, c.level}
		if sums[k] == nil {
			sums[k] = &LoadShortfall{Mode: c.mode, Level: c.level, Asked: asked}
			order = append(order, k)
		}
		sums[k].Achieved += c.achieved
		sums[k].Cases++
	}
	for _, k := range order {
		sf := *sums[k]
		if sf.Achieved /= float64(sf.Cases); sf.Achieved >= minAchievedShare*sf.Asked {
			continue
		}
		m.Shortfalls = append(m.Shortfalls, sf)
		m.Warnings = append(m.Warnings, Warning{Code: WarnLoadShortfall, Mode: sf.Mode, Message: fmt.Sprintf(
			"load level %s achieved %.4g rps on average over %d case(s), %.0f %% of the %g asked (below %.0f %%): the mode, the app or the load generator could not carry it; the fits use the achieved rate",
			sf.Level, sf.Achieved, sf.Cases, 100*sf.Achieved/sf.Asked, sf.Asked, 100*minAchievedShare)})
	}
}

func kindRank(k string) int {
	if k == KindUsage {
		return 0
	}
	return 1
}

func unitOf(metric string) string {
	if metric == string(results.MetricMemory) {
		return string(results.UnitMiB)
	}
	return string(results.UnitMillicores)
}

func loadUnit(per string) string {
	if per == PerMesh {
		return "app pods in the mesh"
	}
	return "krps per " + per
}

// waypointCounts is the waypoints each case measured, per case ID. The runner verifies a mode, and records the
// count (results.FactWaypoints), on the case that switched to it; the cases after it in the same topology and mode ran on
// the same waypoints, so they take the count of the latest case before them that recorded one (cases in file order).
func waypointCounts(cases []results.CaseResult) map[string]int {
	out := map[string]int{}
	last := map[string]int{} // topology/mode -> the count its latest verification recorded
	for _, c := range cases {
		key := c.Topology + "/" + string(c.Mode)
		if n, err := factInt(c, results.FactWaypoints); err == nil {
			last[key] = n
		}
		if n, ok := last[key]; ok {
			out[c.CaseID] = n
		}
	}
	return out
}

func factInt(c results.CaseResult, name results.FactKey) (int, error) {
	v, ok := c.Facts[name]
	if !ok {
		return 0, fmt.Errorf("no %q fact", name)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("fact %q is %q, not a count", name, v)
	}
	return n, nil
}

func addInt(s *[]int, v int) {
	if !slices.Contains(*s, v) {
		*s = append(*s, v)
	}
}

func addStr(s *[]string, v string) {
	if !slices.Contains(*s, v) {
		*s = append(*s, v)
	}
}
