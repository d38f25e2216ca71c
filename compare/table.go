package compare

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
)

// VerdictOrder is the order verdicts are counted in.
var verdictOrder = []Verdict{verdictWorse, verdictBetter, verdictChanged, verdictNotSignificant, verdictInsufficient}

// Table renders a comparison for a terminal: context notes, one line per row (only significant rows when
// changedOnly), what only one run measured, the verdict counts and each gate's outcome.
func Table(res Result, outcomes []GateOutcome, changedOnly bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "base %s  vs  new %s  (%g %% confidence, Welch)\n", res.Base.RunID, res.New.RunID, 100*res.Confidence)
	for _, c := range res.Context {
		fmt.Fprintf(&b, "note: %s\n", c)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tSTAT\tCOMPONENT\tMODE\tTOPOLOGY\tLOAD\tWINDOW\tLABELS\tUNIT\tBASE\tNEW\tDELTA\tDELTA CI\tCHANGE\tVERDICT")
	shown := 0
	for _, r := range res.Rows {
		if changedOnly && !r.Significant {
			continue
		}
		shown++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Metric, r.Stat, r.Component, dash(string(r.Mode)), dash(r.Topology), dash(r.Load), r.Window, dash(r.Labels), r.Unit,
			fmtNum(r.BaseMean), fmtNum(r.NewMean), signed(r.Diff), ciText(r), pctText(r), r.Verdict)
	}
	_ = tw.Flush()
	if shown == 0 {
		b.WriteString("(no significant change)\n")
	}
	for _, k := range res.OnlyBase {
		fmt.Fprintf(&b, "only in base: %s\n", describeKey(k))
	}
	for _, k := range res.OnlyNew {
		fmt.Fprintf(&b, "only in new: %s\n", describeKey(k))
	}
	counts := res.Counts()
	var parts []string
	for _, v := range verdictOrder {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
		}
	}
	fmt.Fprintf(&b, "\n%d measurements: %s\n", len(res.Rows), strings.Join(parts, ", "))
	for _, o := range outcomes {
		status := "pass"
		if len(o.Violations) > 0 {
			status = fmt.Sprintf("FAIL (%d of %d measurements)", len(o.Violations), o.Matched)
		}
		fmt.Fprintf(&b, "gate %s: %s", o.Expr, status)
		if len(o.Violations) == 0 {
			fmt.Fprintf(&b, " (%d measurements checked)", o.Matched)
		}
		b.WriteByte('\n')
		for _, v := range o.Violations {
			fmt.Fprintf(&b, "  %s: %s\n", describeKey(v.Row.Key), describeChange(v))
		}
		for _, n := range o.NotEvaluable {
			fmt.Fprintf(&b, "  not evaluable: %s\n", n)
		}
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ciText(r Row) string {
	if !judged(r) {
		return "n/a (n=" + strconv.Itoa(min(r.BaseN, r.NewN)) + ": no interval)"
	}
	return "[" + signed(r.DiffCI.Low) + ", " + signed(r.DiffCI.High) + "]"
}

func pctText(r Row) string {
	if r.Percent == nil {
		return "n/a (base 0)"
	}
	return signed(*r.Percent) + "%"
}
