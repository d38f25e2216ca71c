package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SharedComponents are the components one instance of which serves more than the app under test, with what one
// instance serves: their cost is split into a fixed and a load-driven part (SharedCost) instead of being read as the
// app's.
var SharedComponents = []struct {
	Component Component
	Serves    string
}{
	{ComponentZtunnel, "every ambient pod of its node (one per node)"},
	{ComponentWaypoint, "every workload of the namespaces or services that use it"},
	{ComponentIstiod, "every proxy of the mesh (control plane)"},
	{ComponentIstioCNI, "every pod of its node (node agent)"},
}

func sharedServes(component Component) (string, bool) {
	for _, s := range SharedComponents {
		if s.Component == component {
			return s.Serves, true
		}
	}
	return "", false
}

// SharedCost splits the average usage of a shared component in one topology, mode and load level into its fixed part
// (the idle window's average) and the part that grows with the load (the load window's average minus the idle one).
// Neither is the app's cost alone: the component serves more than the app (Serves).
type SharedCost struct {
	Topology  string    `json:"topology,omitempty"`
	Mode      Mode      `json:"mode,omitempty"`
	Load      string    `json:"load,omitempty"` // the load window's level; the idle window has none
	Component Component `json:"component"`
	Metric    Metric    `json:"metric"` // cpu | memory
	Unit      Unit      `json:"unit"`
	Serves    string    `json:"serves"`
	// Fixed is the idle window's average, Incremental the load window's minus it, one value per case (repetition)
	// that measured both windows.
	Fixed       Estimate `json:"fixed"`
	Incremental Estimate `json:"incremental"`
	// IncrementalPerKRPS is Incremental divided by the case's achieved rate in thousands of rps (unit e.g.
	// "millicores/krps"); nil when no case had an achieved rate.
	IncrementalPerKRPS *Estimate `json:"incrementalPerKRPS,omitempty"`
}

// Estimate is the mean of observations over repetitions with its confidence interval (as in Series).
type Estimate struct {
	Unit   Unit      `json:"unit,omitempty"` // set where it differs from the enclosing unit
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	StdDev float64   `json:"stddev"`
	CI     *Interval `json:"ci,omitempty"`
	Values []float64 `json:"values"`
}

// sharedCosts computes Summary.Shared; see Summarize. rps is the achieved request rate of a load-window sample's
// case (ok=false when unknown).
func (sz *summarizer) sharedCosts(kept []item, rank *ranker, rps func(*Sample) (float64, bool)) []SharedCost {
	totals, order := sharedWindowTotals(kept)
	groups, warnings := splitSharedWindows(totals, order, rps)
	for _, w := range warnings {
		sz.warn(w)
	}
	keys := make([]Key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, rank.compare)
	out := make([]SharedCost, 0, len(keys))
	for _, k := range keys {
		out = append(out, sz.sharedCost(k, groups[k]))
	}
	return out
}

// sharedWindow is one window of a shared component: per topology, mode, repetition, load level (none for idle),
// component and metric. The idle window is measured once per repetition, so each load level of the repetition is
// split against it.
type sharedWindow struct {
	topology  string
	mode      Mode
	load      string
	rep       int
	component Component
	metric    Metric
}

// sharedTotal is a sharedWindow's total over its samples, with the units and windows they came in.
type sharedTotal struct {
	first *Sample // the first sample: the case's key fields, unit, window
	value float64
	units []Unit
	wins  []windowID
}

// sharedWindowTotals adds up the kept CPU and memory averages of the shared components per sharedWindow, in the
// order the windows first appear; a load window without a level is left out (it cannot be told from the idle one). Pure.
func sharedWindowTotals(kept []item) (map[sharedWindow]*sharedTotal, []sharedWindow) {
	totals := map[sharedWindow]*sharedTotal{}
	var order []sharedWindow
	for _, s := range kept {
		if s.Stat != StatAvg || (s.Metric != MetricCPU && s.Metric != MetricMemory) || (s.Window.Kind != WindowIdle && s.Window.Kind != WindowLoad) {
			continue
		}
		if _, ok := sharedServes(s.Component); !ok {
			continue
		}
		k := sharedWindow{s.Topology, s.Mode, s.Load, s.Repetition, s.Component, s.Metric}
		if s.Window.Kind == WindowIdle {
			k.load = ""
		} else if k.load == "" {
			continue // a load window without a level cannot be told from the idle one
		}
		t := totals[k]
		if t == nil {
			t = &sharedTotal{first: s.Sample}
			totals[k] = t
			order = append(order, k)
		}
		t.value += s.Value
		if !slices.Contains(t.units, s.Unit) {
			t.units = append(t.units, s.Unit)
		}
		if w := windowOf(s.Sample); !slices.Contains(t.wins, w) {
			t.wins = append(t.wins, w)
		}
	}
	return totals, order
}

// sharedSplit is one repetition's split of a load window: the idle total (fixed), the load total minus it (inc) and
// that per krps when the case's rate is known; rep, start and seq order the splits of a key.
type sharedSplit struct {
	rep              int
	start            time.Time
	seq              int
	fixed, inc, perK float64
	hasPerK          bool
}

// splitSharedWindows splits each load window against its repetition's idle window, grouped by summary key, and
// returns a warning per key some repetitions of which could not be split (no idle average, different units, more
// than one window), in the order of order. Pure.
func splitSharedWindows(totals map[sharedWindow]*sharedTotal, order []sharedWindow, rps func(*Sample) (float64, bool)) (map[Key][]sharedSplit, []string) {
	groups := map[Key][]sharedSplit{}
	unsplit := map[Key][]string{} // why repetitions of a key have no split
	var unsplitOrder []Key
	for i, k := range order {
		if k.load == "" {
			continue
		}
		load := totals[k]
		ik := k
		ik.load = ""
		idle, ok := totals[ik]
		s := load.first
		key := Key{Topology: s.Topology, Mode: s.Mode, Load: s.Load, Window: WindowLoad, Component: k.component, Metric: k.metric, Stat: StatAvg, Unit: s.Unit}
		why := ""
		switch {
		case !ok:
			why = "no idle average"
		case len(load.units) > 1 || len(idle.units) > 1 || load.units[0] != idle.units[0]:
			why = "different units"
		case len(load.wins) > 1 || len(idle.wins) > 1:
			why = "more than one idle or load window"
		}
		if why != "" {
			if unsplit[key] == nil {
				unsplitOrder = append(unsplitOrder, key)
			}
			unsplit[key] = append(unsplit[key], fmt.Sprintf("r%d: %s", k.rep, why))
			continue
		}
		o := sharedSplit{rep: s.Repetition, start: s.Window.Start, seq: i, fixed: idle.value, inc: load.value - idle.value}
		if r, ok := rps(s); ok {
			o.perK, o.hasPerK = o.inc/(r/1000), true
		}
		groups[key] = append(groups[key], o)
	}
	warnings := make([]string, 0, len(unsplitOrder))
	for _, k := range unsplitOrder {
		warnings = append(warnings, fmt.Sprintf("shared %s %s of %s: no split into a fixed and a load-driven part for %s",
			k.Component, k.Metric, describeKey(Key{Topology: k.Topology, Mode: k.Mode, Load: k.Load}), strings.Join(unsplit[k], ", ")))
	}
	return groups, warnings
}

// sharedCost is key k's SharedCost: the estimates of its splits' fixed, incremental and per-krps parts, taken in
// the order of repetition, window start and appearance.
func (sz *summarizer) sharedCost(k Key, list []sharedSplit) SharedCost {
	slices.SortFunc(list, func(a, b sharedSplit) int {
		return cmp.Or(cmp.Compare(a.rep, b.rep), a.start.Compare(b.start), cmp.Compare(a.seq, b.seq))
	})
	var fixed, inc, perK []float64
	for _, o := range list {
		fixed = append(fixed, o.fixed)
		inc = append(inc, o.inc)
		if o.hasPerK {
			perK = append(perK, o.perK)
		}
	}
	serves, _ := sharedServes(k.Component)
	c := SharedCost{Topology: k.Topology, Mode: k.Mode, Load: k.Load, Component: k.Component, Metric: k.Metric, Unit: k.Unit,
		Serves: serves, Fixed: sz.estimate(fixed, ""), Incremental: sz.estimate(inc, "")}
	if len(perK) > 0 {
		e := sz.estimate(perK, k.Unit+perKRPSUnit)
		c.IncrementalPerKRPS = &e
	}
	return c
}

func (sz *summarizer) estimate(values []float64, unit Unit) Estimate {
	mean, sd, ci := meanCI(values, sz.tq)
	return Estimate{Unit: unit, N: len(values), Mean: mean, StdDev: sd, CI: ci, Values: values}
}
