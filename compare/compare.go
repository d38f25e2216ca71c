package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/results"
)

// direction says which way a metric improves.
type direction int

// Directions.
const (
	neutral        direction = iota // unknown metric: a significant change is reported as "changed"
	lowerIsBetter                   // cpu, memory, latency, response time, loss, jitter, errors
	higherIsBetter                  // qps, throughput, rr, crr
)

// directionOf returns the direction of a metric name.
func directionOf(metric results.Metric) direction {
	switch metric {
	case results.MetricCPU, results.MetricMemory, results.MetricLatency, results.MetricResponseTime, results.MetricLoss, results.MetricJitter,
		results.MetricErrors, results.MetricErrorRate, results.MetricRestarts, results.MetricRetransmits:
		return lowerIsBetter
	case results.MetricQPS, results.MetricThroughput, results.MetricRR, results.MetricCRR:
		return higherIsBetter
	}
	return neutral
}

// Verdict is what a row's change means.
type Verdict string

// Verdicts.
const (
	verdictBetter         Verdict = "better"
	verdictWorse          Verdict = "worse"
	verdictChanged        Verdict = "changed" // significant, metric of unknown direction
	verdictNotSignificant Verdict = "not significant"
	verdictInsufficient   Verdict = "insufficient data" // fewer than results.MinIntervalN repetitions on a side: no judgement
)

// Row compares one measured quantity (one results.Key) between two runs.
type Row struct {
	results.Key
	BaseN       int               `json:"baseN"`
	NewN        int               `json:"newN"`
	BaseMean    float64           `json:"baseMean"`
	NewMean     float64           `json:"newMean"`
	Diff        float64           `json:"diff"`                // NewMean - BaseMean
	DiffCI      *results.Interval `json:"diffCI,omitempty"`    // Welch interval of Diff
	Percent     *float64          `json:"percent,omitempty"`   // 100*Diff/|BaseMean|; nil when BaseMean is 0
	PercentCI   *results.Interval `json:"percentCI,omitempty"` // DiffCI scaled like Percent
	PValue      *float64          `json:"pValue,omitempty"`
	Significant bool              `json:"significant"` // DiffCI excludes 0, from results.MinIntervalN repetitions a side
	Verdict     Verdict           `json:"verdict"`
}

// RunRef names one side of a comparison.
type RunRef struct {
	RunID string `json:"runID"`
	Dir   string `json:"dir,omitempty"`
}

// Result is a whole comparison.
type Result struct {
	Base       RunRef        `json:"base"`
	New        RunRef        `json:"new"`
	Confidence float64       `json:"confidence"`
	Context    []string      `json:"context,omitempty"` // how the runs differ (versions, nodes, scenario)
	Rows       []Row         `json:"rows"`
	OnlyBase   []results.Key `json:"onlyBase,omitempty"` // measured in base only
	OnlyNew    []results.Key `json:"onlyNew,omitempty"`  // measured in new only
}

// Counts tallies the verdicts.
func (r Result) Counts() map[Verdict]int {
	c := map[Verdict]int{}
	for _, row := range r.Rows {
		c[row.Verdict]++
	}
	return c
}

// summaries compares two summaries key by key, rows in base's series order. confidence 0 means
// results.DefaultConfidence.
func summaries(base, next results.Summary, confidence float64) Result {
	if confidence == 0 {
		confidence = results.DefaultConfidence
	}
	res := Result{Base: RunRef{RunID: base.RunID}, New: RunRef{RunID: next.RunID}, Confidence: confidence}
	newIdx := make(map[results.Key]int, len(next.Series))
	for i, s := range next.Series {
		newIdx[s.Key] = i
	}
	seen := make(map[results.Key]bool, len(base.Series))
	for _, b := range base.Series {
		seen[b.Key] = true
		i, ok := newIdx[b.Key]
		if !ok {
			res.OnlyBase = append(res.OnlyBase, b.Key)
			continue
		}
		row := compareSeries(b, next.Series[i], confidence)
		if !finiteRow(row) {
			// Figures near float64's limits (a hand-edited summary.json): their difference is ±Inf, which is no finding
			// and no JSON.
			res.Context = append(res.Context, fmt.Sprintf("%s %s %s %s %s: not compared: the means (%g, %g) are beyond what a difference can be computed of",
				b.Mode, b.Component, b.Metric, b.Stat, b.Window, b.Mean, next.Series[i].Mean))
			continue
		}
		res.Rows = append(res.Rows, row)
	}
	for _, s := range next.Series {
		if !seen[s.Key] {
			res.OnlyNew = append(res.OnlyNew, s.Key)
		}
	}
	return res
}

func compareSeries(b, n results.Series, confidence float64) Row {
	row := Row{Key: b.Key, BaseN: b.N, NewN: n.N, BaseMean: b.Mean, NewMean: n.Mean, Diff: n.Mean - b.Mean}
	if len(b.Values) > 0 && len(n.Values) > 0 {
		diff, ci, _, p := results.Welch(b.Values, n.Values, confidence)
		row.Diff, row.DiffCI, row.PValue = diff, ci, p
	}
	// A base mean near 0 makes the percentage ±Inf: none then, as for a mean of 0.
	if scale := 100 / math.Abs(row.BaseMean); row.BaseMean != 0 && finite(row.Diff*scale) {
		pct := row.Diff * scale
		row.Percent = &pct
		if row.DiffCI != nil && finite(row.DiffCI.Low*scale) && finite(row.DiffCI.High*scale) {
			row.PercentCI = &results.Interval{Low: row.DiffCI.Low * scale, High: row.DiffCI.High * scale}
		}
	}
	row.Significant = judged(row) && (row.DiffCI.Low > 0 || row.DiffCI.High < 0)
	row.Verdict = verdict(row)
	return row
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// finiteRow reports whether every figure of a row is finite (JSON has no Inf or NaN).
func finiteRow(r Row) bool {
	ok := finite(r.BaseMean) && finite(r.NewMean) && finite(r.Diff)
	if r.DiffCI != nil {
		ok = ok && finite(r.DiffCI.Low) && finite(r.DiffCI.High)
	}
	if r.PValue != nil {
		ok = ok && finite(*r.PValue)
	}
	return ok
}

// judged reports whether a row has an interval worth judging: results.MinIntervalN repetitions on each side (from 2,
// a 95 % interval is wider than most values, and "significant" from it is luck).
func judged(r Row) bool {
	return r.DiffCI != nil && min(r.BaseN, r.NewN) >= results.MinIntervalN
}

func verdict(r Row) Verdict {
	switch {
	case !judged(r):
		return verdictInsufficient
	case !r.Significant:
		return verdictNotSignificant
	}
	switch directionOf(r.Metric) {
	case lowerIsBetter:
		if r.Diff < 0 {
			return verdictBetter
		}
		return verdictWorse
	case higherIsBetter:
		if r.Diff > 0 {
			return verdictBetter
		}
		return verdictWorse
	}
	return verdictChanged
}

// metaContext lists how two runs' facts differ: what a reader must keep in mind before blaming the data plane.
func metaContext(base, next results.RunMeta) []string {
	var out []string
	diff := func(what, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s differs: %s (base) vs %s (new)", what, orUnknown(a), orUnknown(b)))
		}
	}
	diff("meshbench version", base.Tool.Version, next.Tool.Version)
	diff("Kubernetes version", base.Cluster.KubernetesVersion, next.Cluster.KubernetesVersion)
	diff("CNI", base.Cluster.CNI, next.Cluster.CNI)
	diff("node count", fmt.Sprint(len(base.Cluster.Nodes)), fmt.Sprint(len(next.Cluster.Nodes)))
	bi, ni := istio(base), istio(next)
	diff("Istio version", bi.Version, ni.Version)
	diff("data plane", string(bi.DataPlane), string(ni.DataPlane))
	for _, comp := range []results.Component{results.ComponentSidecar, results.ComponentZtunnel, results.ComponentWaypoint} {
		b, _ := results.DataPlaneOf(bi.DataPlanes, comp)
		n, _ := results.DataPlaneOf(ni.DataPlanes, comp)
		diff(string(comp)+" data plane", b.Description, n.Description)
	}
	diff("ztunnel image", bi.ZtunnelImage, ni.ZtunnelImage)
	diff("proxy image", bi.ProxyImage, ni.ProxyImage)
	if !jsonEqual(base.Scenario, next.Scenario) {
		out = append(out, "scenario differs: the runs did not measure the same thing; compare with care")
	}
	for _, m := range []results.RunMeta{base, next} {
		for _, c := range istio(m).DataPlanes {
			if !c.Kind.Representative() {
				out = append(out, fmt.Sprintf("run %s: %s was %s: its figures are not Istio's own", m.RunID, c.Component, c.Description))
			}
		}
		if ist := istio(m); len(ist.DataPlanes) == 0 && ist.DataPlane == results.DataPlaneStandIn {
			out = append(out, fmt.Sprintf("run %s used the test stand-in data plane: its figures are not Istio's", m.RunID))
		}
	}
	return out
}

func istio(m results.RunMeta) results.IstioFacts {
	if m.Cluster.Istio == nil {
		return results.IstioFacts{}
	}
	return *m.Cluster.Istio
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func jsonEqual(a, b []byte) bool {
	return strings.Join(strings.Fields(string(a)), "") == strings.Join(strings.Fields(string(b)), "")
}

// GateOutcome is one gate applied to a comparison.
type GateOutcome struct {
	Gate         Gate        `json:"-"`
	Expr         string      `json:"gate"`
	Matched      int         `json:"matched"`                // rows the gate selected
	NotEvaluable []string    `json:"notEvaluable,omitempty"` // rows the gate could not judge, with why
	Violations   []Violation `json:"violations,omitempty"`
}

// Violation is a row that failed a gate.
type Violation struct {
	Gate   string  `json:"gate"`
	Row    Row     `json:"row"`
	Change float64 `json:"change"` // percent for relative gates, else the difference in the gate's unit
	Unit   string  `json:"unit"`   // "%" or the unit of Change
}

// Evaluate applies gates to a comparison. A gate fails on a row only when the change is significant (its confidence
// interval excludes 0) and the point estimate crosses the threshold. A gate that selects no row at all is an error
// (a typo must not pass silently); the outcomes are returned either way.
func Evaluate(res Result, gates []Gate) ([]GateOutcome, error) {
	var errs []error
	out := make([]GateOutcome, 0, len(gates))
	for _, g := range gates {
		o := GateOutcome{Gate: g, Expr: g.String()}
		unitMismatch := 0
		for _, row := range res.Rows {
			if !g.Matches(row.Key) {
				continue
			}
			change, unit, why := gateChange(g, row)
			if why == "unit" {
				unitMismatch++
				continue
			}
			o.Matched++
			if why != "" {
				o.NotEvaluable = append(o.NotEvaluable, describeKey(row.Key)+": "+why)
				continue
			}
			if row.Significant && g.Op.holds(change, g.Threshold) {
				o.Violations = append(o.Violations, Violation{Gate: o.Expr, Row: row, Change: change, Unit: unit})
			}
		}
		if o.Matched == 0 {
			hint := "check the metric, stat, component or mode and window against `meshbench compare` output"
			if unitMismatch > 0 {
				hint = fmt.Sprintf("%d measurements matched but none in a unit convertible from %s", unitMismatch, g.Unit)
			}
			errs = append(errs, fmt.Errorf("gate %q selects no measurement in both runs: %s", o.Expr, hint))
		}
		out = append(out, o)
	}
	return out, errors.Join(errs...)
}

// insufficientWhy is why a gate cannot judge a row of fewer than results.MinIntervalN repetitions on a side.
var insufficientWhy = fmt.Sprintf("fewer than %d repetitions on a side, no interval", results.MinIntervalN)

// gateChange is the row's change in the gate's terms; why explains a row that cannot be judged ("unit" = the gate's
// unit does not apply to the row at all).
func gateChange(g Gate, row Row) (change float64, unit, why string) {
	if g.Relative {
		if row.Percent == nil {
			return 0, "%", "base mean is 0, no percent change"
		}
		if !judged(row) {
			return *row.Percent, "%", insufficientWhy
		}
		return *row.Percent, "%", ""
	}
	unit = string(row.Unit)
	f := 1.0
	if g.Unit != "" {
		var ok bool
		if f, ok = convertUnit(string(row.Unit), g.Unit); !ok {
			return 0, "", "unit"
		}
		unit = g.Unit
	}
	if !judged(row) {
		return row.Diff * f, unit, insufficientWhy
	}
	return row.Diff * f, unit, ""
}

// Violations returns a *GateError when any outcome has violations, else nil.
func Violations(outcomes []GateOutcome) error {
	var v []Violation
	for _, o := range outcomes {
		v = append(v, o.Violations...)
	}
	if len(v) == 0 {
		return nil
	}
	return &gateError{Violations: v}
}

// gateError is returned when a --fail-if gate is violated; the CLI maps it to exit code 3.
type gateError struct {
	Violations []Violation
}

// GateFailed marks the error as a gate failure for the CLI's exit-code mapping.
func (e *gateError) GateFailed() bool { return true }

func (e *gateError) Error() string {
	var gates []string
	for _, v := range e.Violations {
		if !slices.Contains(gates, v.Gate) {
			gates = append(gates, v.Gate)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "regression gate violated: %s", strings.Join(gates, "; "))
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "\n  %s: %s: %s", v.Gate, describeKey(v.Row.Key), describeChange(v))
	}
	return b.String()
}

func describeChange(v Violation) string {
	r := v.Row
	s := fmt.Sprintf("%s → %s %s, change %s%s", fmtNum(r.BaseMean), fmtNum(r.NewMean), r.Unit, signed(v.Change), v.Unit)
	if v.Unit == "%" && r.PercentCI != nil {
		s += fmt.Sprintf(" (CI %s%% … %s%%)", signed(r.PercentCI.Low), signed(r.PercentCI.High))
	} else if r.DiffCI != nil {
		s += fmt.Sprintf(" (CI of the difference %s … %s %s)", signed(r.DiffCI.Low), signed(r.DiffCI.High), r.Unit)
	}
	return s
}

// describeKey names a measurement for humans: "cpu avg of sidecar, mode sidecar, topology single, load 1000 qps,
// window load".
func describeKey(k results.Key) string {
	parts := []string{fmt.Sprintf("%s %s of %s", k.Metric, k.Stat, k.Component)}
	if k.Mode != "" {
		parts = append(parts, "mode "+string(k.Mode))
	}
	if k.Topology != "" {
		parts = append(parts, "topology "+k.Topology)
	}
	if k.Load != "" {
		parts = append(parts, "load "+k.Load+" qps")
	}
	parts = append(parts, "window "+k.Window)
	if k.Labels != "" {
		parts = append(parts, k.Labels)
	}
	return strings.Join(parts, ", ")
}

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func signed(v float64) string {
	if v >= 0 {
		return "+" + fmtNum(v)
	}
	return fmtNum(v)
}

// Runs compares two runs as results.Read returns them: their summaries (computed from the samples when summary.json
// is missing), the context notes from their metadata, and their directories.
func Runs(base, next *results.Run, confidence float64) Result {
	res := summaries(summaryOf(base), summaryOf(next), confidence)
	res.Base = RunRef{RunID: base.Meta.RunID, Dir: base.Dir}
	res.New = RunRef{RunID: next.Meta.RunID, Dir: next.Dir}
	res.Context = append(metaContext(base.Meta, next.Meta), res.Context...)
	return res
}

func summaryOf(r *results.Run) results.Summary {
	if r.Summary != nil {
		return *r.Summary
	}
	return results.Summarize(r.Meta, r.Samples, r.Cases, results.SummaryOptions{})
}
