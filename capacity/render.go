package capacity

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// Text renders p for people: per mode the projected mesh and total, the difference from none and the monthly cost
// with their prediction intervals, then the break-even facts, the fits, the assumptions and the warnings.
func Text(p Projection) string {
	var b strings.Builder
	priced := p.Shape.PriceCPU != nil && p.Shape.PriceMemory != nil
	headerText(&b, p, priced)
	modesText(&b, p.Modes, priced)
	componentsText(&b, p.Modes)
	breakEvenText(&b, p.BreakEven)
	if p.Hops != nil {
		hopsText(&b, p.Hops)
	}
	fitsText(&b, p.Fits, p.Confidence)
	b.WriteString("\nAssumptions\n")
	for _, a := range p.Assumptions {
		fmt.Fprintf(&b, "- %s\n", a)
	}
	if warnings := warningLines(p); len(warnings) > 0 {
		b.WriteString("\nWarnings\n")
		for _, w := range warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	return b.String()
}

// headerText writes the run, the notes, the shape, the units (and prices when priced) and the legend of the marks.
func headerText(b *strings.Builder, p Projection, priced bool) {
	sh := p.Shape
	fmt.Fprintf(b, "Capacity projection from run %s", p.RunID)
	if p.DataPlane != "" {
		fmt.Fprintf(b, " (data plane: %s)", p.DataPlane)
	}
	b.WriteString("\n")
	for _, n := range p.Notes {
		fmt.Fprintf(b, "NOTE: %s\n", n)
	}
	fmt.Fprintf(b, "Shape: %d pods, %d nodes, %d namespaces, %g rps", sh.Pods, sh.Nodes, sh.Namespaces, sh.RPS)
	if len(sh.RPSPerPod) > 0 {
		b.WriteString(" (per pod from --rps-per-pod)")
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "Figures: value [%.0f %% prediction interval]; CPU in vCPU, memory in GiB", 100*p.Confidence)
	if priced {
		fmt.Fprintf(b, ", cost per month at %g per vCPU-month and %g per GiB-month", *sh.PriceCPU, *sh.PriceMemory)
	}
	b.WriteString("\n")
	b.WriteString("Marks: " + markLegend + "\n\n")
}

// modesText writes the table of mesh, total and vs-none per mode, a usage row and a reserved row when there is one;
// the cost columns only when priced.
func modesText(b *strings.Builder, modes []ModeProjection, priced bool) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	head := "MODE\tKIND\tMESH CPU\tMESH MEMORY\tTOTAL CPU\tTOTAL MEMORY\tVS NONE CPU\tVS NONE MEMORY"
	if priced {
		head += "\tMESH COST\tVS NONE COST"
	}
	fmt.Fprintln(tw, head)
	for _, mp := range modes {
		row := func(kind string, mesh, total, vs *Resources, cost, vsCost *Estimate) {
			cells := []string{mp.Mode, kind, est(mesh, true), est(mesh, false), est(total, true), est(total, false), est(vs, true), est(vs, false)}
			if priced {
				cells = append(cells, estOne(cost, 2), estOne(vsCost, 2))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		var cost, vsCost, costR, vsCostR *Estimate
		if mp.Cost != nil {
			cost, vsCost, costR, vsCostR = mp.Cost.Mesh, mp.Cost.VsNone, mp.Cost.MeshReserved, mp.Cost.VsNoneReserved
		}
		row(KindUsage, &mp.Mesh, &mp.Total, mp.VsNone, cost, vsCost)
		if mp.MeshReserved != nil {
			row(KindReserved, mp.MeshReserved, mp.TotalReserved, mp.VsNoneReserved, costR, vsCostR)
		}
	}
	_ = tw.Flush()
}

// componentsText writes the per-component table of each mode, then a "not measured" row for each component the
// mode runs but the run did not measure.
func componentsText(b *strings.Builder, modes []ModeProjection) {
	b.WriteString("\nPer component\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tCOMPONENT\tUNITS\tLOAD PER UNIT\tCPU\tMEMORY\tRESERVED CPU\tRESERVED MEMORY")
	for _, mp := range modes {
		for _, c := range mp.Components {
			load := fmt.Sprintf("%.3g krps", c.LoadPerUnit)
			if c.Per == PerMesh {
				load = fmt.Sprintf("%g app pods", c.LoadPerUnit)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d %s(s)\t%s\t%s\t%s\t%s\t%s\n", mp.Mode, c.Component, c.Units, c.Per, load,
				est(&c.Usage, true), est(&c.Usage, false), est(c.Reserved, true), est(c.Reserved, false))
		}
		for _, comp := range unmeasured(mp) {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\tnot measured\tnot measured\t-\t-\n", mp.Mode, comp)
		}
	}
	_ = tw.Flush()
}

// breakEvenText writes one line per break-even fact with its caveat marks; nothing when there is none.
func breakEvenText(b *strings.Builder, bes []BreakEven) {
	if len(bes) == 0 {
		return
	}
	b.WriteString("\nBreak-even (sidecar vs ambient)\n")
	for _, be := range bes {
		what := be.Metric + " " + be.Kind
		if len(be.Caveats) > 0 {
			what += " " + marks(be.Caveats)
		}
		fmt.Fprintf(b, "- %s: %s\n", what, be.Statement)
	}
}

// fitsText writes the table of per-unit fits (fixed + slope x load) at the given confidence.
func fitsText(b *strings.Builder, fits []Fit, confidence float64) {
	fmt.Fprintf(b, "\nFits (per unit: fixed + slope x load, %.0f %% intervals)\n", 100*confidence)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tCOMPONENT\tMETRIC\tKIND\tFIXED\tSLOPE\tLOAD\tMEASURED\tN\tLEVELS\tTRUST")
	for _, f := range fits {
		slope := "-"
		if f.Slope != nil {
			slope = coef(*f.Slope) + " per " + strings.TrimPrefix(f.LoadUnit, "krps per ")
			if strings.HasPrefix(f.LoadUnit, "krps") {
				slope = coef(*f.Slope) + "/krps"
			}
		}
		measured := rangeText(&f)
		if f.Source == SourceIstiodCurve {
			measured += " (curve)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s %s\t%s\t%s\t%s\t%d\t%d\t%s\n", f.Mode, f.Component, f.Metric, f.Kind,
			coef(f.Fixed), f.Unit, slope, f.LoadUnit, measured, f.N, f.Levels, trustText(f.Line))
	}
	_ = tw.Flush()
}

// warningLines lists the modes' warnings, then the projection's, each prefixed by its mode when it has one.
func warningLines(p Projection) []string {
	var warnings []string
	for _, mp := range p.Modes {
		for _, w := range mp.Warnings {
			warnings = append(warnings, mp.Mode+": "+w.Message)
		}
	}
	for _, w := range p.Warnings {
		msg := w.Message
		if w.Mode != "" {
			msg = w.Mode + ": " + msg
		}
		warnings = append(warnings, msg)
	}
	return warnings
}

// hopsText renders the latency added per hop of each mesh mode, then the per-mode slopes it comes from.
func hopsText(b *strings.Builder, h *Hops) {
	fmt.Fprintf(b, "\nAdded latency per hop (client latency against chain depth %s: a mode's slope minus none's; %.0f %% intervals, Welch-Satterthwaite df)\n",
		intsText(h.Depths), 100*h.Confidence)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tLOAD\tSTAT\tADDED PER HOP\tDF\tNOTE")
	for _, a := range h.Added {
		v, df := "-", "-"
		if a.Value != nil {
			v, df = coef(Coef{Value: *a.Value, CI: a.CI})+" ms", fmt.Sprintf("%.1f", a.DF)
		}
		note := a.Reason
		if note == "" {
			note = strings.Join(a.Notes, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Mode, a.Load, a.Stat, v, df, note)
	}
	_ = tw.Flush()
	b.WriteString("\nPer-hop fits (latency = fixed + slope x depth per mode and load level)\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tLOAD\tSTAT\tFIXED\tSLOPE\tDEPTHS\tN\tTRUST")
	for _, f := range h.Fits {
		slope := "-"
		if f.Slope != nil {
			slope = coef(*f.Slope) + " ms per hop"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ms\t%s\t%s\t%d\t%s\n", f.Mode, f.Load, f.Stat, coef(f.Fixed), slope, intsText(f.Depths), f.N, f.Trust)
	}
	_ = tw.Flush()
	for _, w := range h.Warnings {
		fmt.Fprintf(b, "WARNING: %s\n", w)
	}
}

func intsText(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func est(r *Resources, cpu bool) string {
	if r == nil {
		return "-"
	}
	if cpu {
		return estOne(r.CPU, 3)
	}
	return estOne(r.Memory, 3)
}

// estOne is a figure, its interval and the marks of its caveats; "-" when nothing measured it.
func estOne(e *Estimate, prec int) string {
	if e == nil {
		return "-"
	}
	s := fmt.Sprintf("%.*f [no interval]", prec, e.Value)
	if e.PI != nil {
		s = fmt.Sprintf("%.*f [%.*f, %.*f]", prec, e.Value, prec, e.PI.Low, prec, e.PI.High)
	}
	if len(e.Caveats) > 0 {
		s += " " + marks(e.Caveats)
	}
	return s
}

// caveatMarks are the one-letter marks of the caveats in the text tables.
var caveatMarks = map[Caveat]string{CaveatIncomplete: "i", CaveatNoSlope: "s", CaveatNotLinear: "n", CaveatExtrapolated: "x", CaveatUntested: "u"}

const markLegend = "i incomplete (a component the mode has is missing), s no slope (one load level, one mesh size or levels too close: no interval off it), " +
	"n not linear, x extrapolated beyond the measured load, u linearity untested (2 levels or no repetitions)"

func marks(cs []Caveat) string {
	m := make([]string, len(cs))
	for i, c := range cs {
		m[i] = caveatMarks[c]
	}
	return "(" + strings.Join(m, ",") + ")"
}

// unmeasured are the components the mode has and no fit measured, in order.
func unmeasured(mp ModeProjection) []string {
	var out []string
	for _, ms := range mp.Missing {
		if ms.Kind == KindUsage && !slices.Contains(out, ms.Component) &&
			!slices.ContainsFunc(mp.Components, func(c ComponentProjection) bool { return c.Component == ms.Component }) {
			out = append(out, ms.Component)
		}
	}
	return out
}

// trustText is a fit's trust, with why a constant is one when its levels were too close.
func trustText(l Line) string {
	if l.NarrowSpan {
		return string(l.Trust) + " (levels too close)"
	}
	return string(l.Trust)
}

func coef(c Coef) string {
	if c.CI == nil {
		return fmt.Sprintf("%.4g", c.Value)
	}
	return fmt.Sprintf("%.4g [%.4g, %.4g]", c.Value, c.CI.Low, c.CI.High)
}
