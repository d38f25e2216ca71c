package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/capacity"
	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// capacitySection: the fitted lines of package capacity over the measured points, one chart per component and
// metric, when the run measured at least two load levels (one level has no slope: nothing to plan with).
func (r Report) capacitySection() (section, bool) {
	s := section{Title: "Capacity planning"}
	m, err := capacity.Build(&results.Run{Meta: r.Meta, Samples: r.samples, Cases: r.Cases}, r.Summary.Confidence)
	if err != nil || !slices.ContainsFunc(m.Fits, func(f capacity.Fit) bool { return f.Slope != nil }) {
		if m != nil && m.Hops != nil { // one load level but several chain depths: the per-hop figures alone
			hopSubsection(&s, m, false)
			return s, true
		}
		return s, false
	}
	s.para("Cost per unit as fixed + slope x load, fitted over every repetition of every load level (the load is the achieved rate, not the configured one); %s confidence intervals. `meshbench project RUN_DIR --pods N --nodes M --namespaces K --rps R` projects these lines to a production shape, with prediction intervals and the warnings of leaving the measured range.",
		confPct(m.Confidence))
	var rows [][]string
	for _, f := range m.Fits {
		if f.Kind == capacity.KindUsage {
			rows = append(rows, fitRow(f))
		}
	}
	notes := []string{fmt.Sprintf("trust: linear (3+ levels with repetitions, the lack-of-fit test does not reject a line: its p adjusted for the run's %d tests by Holm's method, so that one false \"not-linear\" in the table is a 5 %% event, not the rule), untested (2 levels, or no repetitions), not-linear (do not extrapolate), constant (one level or mesh size, or levels less than %gx apart: no slope)",
		m.LinearityTests, capacity.MinLoadSpan)}
	notes = append(notes, capacityNotes(m)...)
	s.table(table{ID: "capacity-fits", Header: []string{"mode", "component", "metric", "fixed", "slope", "measured load", "n", "levels", "trust"},
		Numeric: []bool{false, false, false, true, true, true, true, true, false}, Rows: rows, Notes: notes})
	s.para("The intervals assume the scatter between repetitions is the same at every load. Where it grows with the load, intervals beyond the measured load are too narrow; `meshbench project RUN_DIR --holdout LEVEL` with the top level refits the lines without it and shows how many of its points fall inside their intervals.")
	for _, comp := range []string{string(results.ComponentApp), string(results.ComponentSidecar), string(results.ComponentZtunnel), string(results.ComponentWaypoint)} {
		for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
			c := r.fitChart(m, comp, metric)
			if !c.Empty() {
				s.chart(chartBlock{ID: c.ID, Title: c.Title, File: chartFile(c.ID), SVG: c.SVG()})
			}
		}
	}
	if m.Hops != nil {
		hopSubsection(&s, m, true)
	}
	return s, true
}

// fitRow is a usage fit's row: fixed and slope with their intervals, the load range measured, n, levels and trust.
func fitRow(f capacity.Fit) []string {
	slope, measured := "no slope", fmt.Sprintf("%.3g %s", f.LoadMin, f.LoadUnit)
	if f.Slope != nil {
		// Cost per unit over load per unit: the unit cancels, e.g. millicores per krps.
		slope = coefText(*f.Slope) + " " + strings.TrimSuffix(f.Unit, " per "+f.Per) + " per krps"
	}
	if f.LoadMin != f.LoadMax {
		measured = fmt.Sprintf("%.3g..%.3g %s", f.LoadMin, f.LoadMax, f.LoadUnit)
	}
	trust := string(f.Trust)
	if f.NarrowSpan {
		trust += " (levels too close)"
	}
	return []string{f.Mode, f.Component, f.Metric, coefText(f.Fixed) + " " + f.Unit, slope,
		measured, fmt.Sprint(f.N), fmt.Sprint(f.Levels), trust}
}

// fitChart draws the usage fits of one component and metric, a series per mode in charts' order: the points of every
// repetition and the fitted line.
func (r Report) fitChart(m *capacity.Model, comp, metric string) charts.FitChart {
	c := charts.FitChart{ID: "capacity-" + comp + "-" + metric, Title: fmt.Sprintf("%s %s per %s against load", comp, metric, perOf(comp)),
		Subtitle: "points: repetitions; solid: fitted over the measured range; dashed: extrapolated to no load",
		Caveats:  r.componentCaveats(comp)}
	var modes []string
	for _, f := range m.Fits {
		if f.Component == comp && f.Metric == metric && f.Kind == capacity.KindUsage {
			modes = append(modes, f.Mode)
		}
	}
	charts.SortModes(modes)
	for _, mode := range modes {
		f := m.Find(mode, comp, metric, capacity.KindUsage)
		c.XLabel, c.YLabel = f.LoadUnit, f.Unit
		fs := charts.FitSeries{Name: mode, Line: f.Slope != nil, Fixed: f.Fixed.Value, Note: string(f.Trust)}
		if f.Slope != nil {
			fs.Slope = f.Slope.Value
		}
		for _, p := range f.Points {
			fs.Points = append(fs.Points, charts.FitPoint{X: p.X, Y: p.Y})
		}
		c.Series = append(c.Series, fs)
	}
	return c
}

// capacityNotes are what the fits above lack or cannot say: load levels that fell short of their rate or lie too
// close for a slope, cases left out, and the components each mode lacks (the run's read warnings are in the report's
// Warnings already).
func capacityNotes(m *capacity.Model) []string {
	var out []string
	for _, w := range m.Warnings {
		switch w.Code {
		case capacity.WarnLoadShortfall, capacity.WarnNarrowSpan, capacity.WarnCaseLeftOut:
			msg := w.Message
			if w.Mode != "" {
				msg = w.Mode + ": " + msg
			}
			out = append(out, msg)
		}
	}
	for _, mode := range m.Modes {
		var parts []string
		for _, ms := range m.Missing(mode) {
			if ms.Kind == capacity.KindUsage {
				parts = append(parts, ms.Component+" "+ms.Metric)
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("%s: no fit of %s: this mode's cost lacks it (a projection marks its sums incomplete)", mode, strings.Join(parts, ", ")))
		}
	}
	return out
}

// hopSubsection: the latency each mesh mode adds per hop of the chain (capacity.BuildHops), and the limitation of
// the cost fits above on such a run.
func hopSubsection(s *section, m *capacity.Model, withFits bool) {
	h := m.Hops
	s.heading("Added latency per hop")
	pooled := ""
	if withFits {
		pooled = " The cost fits above pool the cases of every depth: their per-pod figures are an average over the depths."
	}
	depths := make([]string, len(h.Depths))
	for i, d := range h.Depths {
		depths[i] = fmt.Sprint(d)
	}
	s.para("Client latency of successful requests fitted as fixed + slope x chain depth (depths %s) per mode, load level and percentile over every repetition; a mesh mode's added latency per hop is its slope minus mode none's, with a %s confidence interval (Student t at the Welch-Satterthwaite degrees of freedom).%s",
		strings.Join(depths, ", "), confPct(h.Confidence), pooled)
	var rows [][]string
	slopes := map[string]string{}
	for _, f := range h.Fits {
		if f.Slope != nil {
			slopes[f.Mode+"/"+f.Load+"/"+f.Stat] = coefText(*f.Slope)
		}
	}
	for _, a := range h.Added {
		added, df := "no figure: "+a.Reason, "-"
		if a.Value != nil {
			added, df = coefText(capacity.Coef{Value: *a.Value, CI: a.CI}), fmt.Sprintf("%.1f", a.DF)
		}
		mode, none := slopes[a.Mode+"/"+a.Load+"/"+a.Stat], slopes["none/"+a.Load+"/"+a.Stat]
		rows = append(rows, []string{a.Mode, a.Load, a.Stat, orDash(mode), orDash(none), added, df})
	}
	s.table(table{ID: "capacity-hops", Caption: "Latency per hop in ms: each mode's slope against the chain depth, and what the mesh adds to none's",
		Header:  []string{"mode", "load", "stat", "mode ms per hop", "none ms per hop", "added ms per hop", "df"},
		Numeric: []bool{false, true, false, true, true, true, true}, Rows: rows, Notes: h.Warnings})
}

func orDash(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

func perOf(component string) string {
	switch results.Component(component) {
	case results.ComponentZtunnel:
		return capacity.PerNode
	case results.ComponentWaypoint:
		return capacity.PerWaypoint
	}
	return capacity.PerPod
}

func coefText(c capacity.Coef) string {
	if c.CI == nil {
		return fmt.Sprintf("%.4g (no interval)", c.Value)
	}
	return fmt.Sprintf("%.4g [%.4g, %.4g]", c.Value, c.CI.Low, c.CI.High)
}
