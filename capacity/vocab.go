package capacity

import (
	"slices"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Trust is how far a fitted line may be believed.
type Trust string

// Trust verdicts of a Line.
const (
	// TrustLinear: 3 or more load levels with repetitions, and the lack-of-fit test does not reject a line (in a
	// Model: its Holm-adjusted p over the model's tests).
	TrustLinear Trust = "linear"
	// TrustUntested: a line through 2 levels, or levels without repetitions: linearity not checked.
	TrustUntested Trust = "untested"
	// TrustNotLinear: the lack-of-fit test rejects a line: do not extrapolate.
	TrustNotLinear Trust = "not-linear"
	// TrustConstant: one level (or one size), or levels closer than a slope needs (Line.NarrowSpan): no slope, the
	// mean is used at every load.
	TrustConstant Trust = "constant"
)

// Caveat marks a projected figure that is less sure than its interval says; a sum carries the caveats of its parts.
type Caveat string

// Caveats of an Estimate, in the order they are listed.
const (
	// CaveatIncomplete: a sum that lacks a component (or one metric of it) that its mode has (ModeProjection.Missing):
	// understated by that part, and its interval does not cover it.
	CaveatIncomplete Caveat = "incomplete"
	// CaveatNoSlope: a fit without a slope (one load level, one mesh size, or levels closer than MinLoadSpan) used
	// away from what it measured: the measured mean stands in, and there is no interval (the slope is unknown).
	CaveatNoSlope Caveat = "no-slope"
	// CaveatNotLinear: the fit's points are not on a line (lack-of-fit test).
	CaveatNotLinear Caveat = "not-linear"
	// CaveatExtrapolated: a fit used outside its measured load (or mesh size), along its line.
	CaveatExtrapolated Caveat = "extrapolated"
	// CaveatUntested: the fit's linearity was not tested (2 levels, or no repetitions).
	CaveatUntested Caveat = "linearity-untested"
)

var caveatOrder = []Caveat{CaveatIncomplete, CaveatNoSlope, CaveatNotLinear, CaveatExtrapolated, CaveatUntested}

// mergeCaveats is the union of cs in caveatOrder; nil when there are none.
func mergeCaveats(cs ...[]Caveat) []Caveat {
	var out []Caveat
	for _, c := range caveatOrder {
		for _, l := range cs {
			if slices.Contains(l, c) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// WarningCode says what a Warning is about: programs decide on it, people read Message.
type WarningCode string

// Warning codes.
const (
	WarnRead          WarningCode = "read"               // results.Read tolerated something in the run directory
	WarnCaseLeftOut   WarningCode = "case-left-out"      // a case's samples are not in the fits (no achieved rate, pod or waypoint count)
	WarnCountedPods   WarningCode = "counted-pods"       // a per-pod figure sums more pods than the app has (an old run's load-client proxies)
	WarnLoadShortfall WarningCode = "load-shortfall"     // a level achieved far less than it asked (LoadShortfall)
	WarnNarrowSpan    WarningCode = "narrow-span"        // levels measured, but closer than a slope needs (MinLoadSpan)
	WarnPooledDepths  WarningCode = "pooled-depths"      // the cost fits pool several chain depths
	WarnMissing       WarningCode = "missing"            // a mode lacks a component, or one metric of it (ModeProjection.Missing)
	WarnExtrapolated  WarningCode = "extrapolated"       // a figure outside the measured range, along the line
	WarnNoSlope       WarningCode = "no-slope"           // a fit without a slope used off what it measured: no interval
	WarnPerPodRates   WarningCode = "per-pod-rates"      // --rps-per-pod rates outside the measured range
	WarnNotLinear     WarningCode = "not-linear"         // a fit rejected as a line
	WarnUntested      WarningCode = "linearity-untested" // a fit whose linearity was not tested
	WarnNoInterval    WarningCode = "no-interval"        // too few points for an interval
	WarnNoBaseline    WarningCode = "no-none"            // mode none was not measured: no difference from none
	WarnIstiodCurve   WarningCode = "istiod-curve"       // a note of the istiod curve (--istiod-curve)
	WarnNotChecked    WarningCode = "not-checked"        // CheckHoldout: a fit with too few other levels to refit
	WarnNoiseGrows    WarningCode = "noise-grows"        // the scatter at the top level is larger than at the others (ScatterCheck)
)

// Warning is one thing a reader of a model, projection or holdout check must know. Mode, Component, Metric and Kind
// say what it concerns, where it concerns one.
type Warning struct {
	Code      WarningCode `json:"code"`
	Mode      string      `json:"mode,omitempty"`
	Component string      `json:"component,omitempty"`
	Metric    string      `json:"metric,omitempty"`
	Kind      string      `json:"kind,omitempty"`
	Message   string      `json:"message"`
}

// addWarning appends w unless the same warning is there already.
func addWarning(ws *[]Warning, w Warning) {
	if !slices.Contains(*ws, w) {
		*ws = append(*ws, w)
	}
}

// Missing is a part of a mode's cost that the mode has but no fit measures: the sums it belongs to are
// CaveatIncomplete.
type Missing struct {
	Component string `json:"component"`
	Metric    string `json:"metric"` // cpu | memory
	Kind      string `json:"kind"`   // usage | reserved
}

// modeParts are the components that carry a mode's cost, as the collector measures them (orchestrate's meshScope:
// istiod with a mesh, the node agents' ztunnel in the ambient modes, the run's waypoints in waypoint mode).
var modeParts = map[scenario.Mode][]string{
	scenario.ModeNone:     {string(results.ComponentApp)},
	scenario.ModeSidecar:  {string(results.ComponentApp), string(results.ComponentSidecar), string(results.ComponentIstiod)},
	scenario.ModeAmbient:  {string(results.ComponentApp), string(results.ComponentZtunnel), string(results.ComponentIstiod)},
	scenario.ModeWaypoint: {string(results.ComponentApp), string(results.ComponentZtunnel), string(results.ComponentWaypoint), string(results.ComponentIstiod)},
}
