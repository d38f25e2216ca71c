package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// Report is everything the renderers need, computed from a run directory's contents alone.
type Report struct {
	Dir     string
	Meta    results.RunMeta
	Summary results.Summary
	Samples []results.Sample
	// Cases is the latest record per case ID, in order of first appearance.
	Cases []results.CaseResult
	// Warnings are the run's read warnings, then the summary's.
	Warnings []string
	// Recomputed is true when summary.json was missing and the summary was computed from the samples.
	Recomputed bool
	// Baseline is the pod network run (meshbench cni) of the same cluster a combined report holds (Combine); nil
	// otherwise.
	Baseline *Report
}

// Build prepares a report from a run as results.Read returns it. When the run has no summary.json, the summary is
// computed with results.Summarize (default options).
func Build(run *results.Run) Report {
	r := Report{Dir: run.Dir, Meta: run.Meta, Samples: run.Samples}
	if run.Summary != nil {
		r.Summary = *run.Summary
	} else {
		r.Summary = results.Summarize(run.Meta, run.Samples, run.Cases, results.SummaryOptions{})
		r.Recomputed = true
	}
	r.Cases = latestCases(run.Cases)
	if len(r.Cases) == 0 {
		r.Cases = r.Summary.Cases
	}
	for _, w := range run.Warnings {
		r.Warnings = append(r.Warnings, w.String())
	}
	r.Warnings = append(r.Warnings, r.Summary.Warnings...)
	r.Warnings = append(r.Warnings, caseWarnings(r.Cases)...)
	r.Warnings = append(r.Warnings, remeasured(r.Cases)...)
	return r
}

// remeasured says which cases were measured again because a window came back incomplete, and why: the figures
// are the last measurement's, and a reader of a scheduled run should see that its monitoring missed scrapes.
func remeasured(cases []results.CaseResult) []string {
	var out []string
	for _, c := range cases {
		n, _ := strconv.Atoi(c.Facts[results.FactAttempts])
		for i := 1; i < n; i++ {
			if why := c.Facts[results.FactAttempt(i)]; why != "" {
				out = append(out, fmt.Sprintf("case %s was measured again (measurement %d of %d not kept: %s)", c.CaseID, i, n, why))
			}
		}
	}
	return out
}

// caseWarnings lists the collector warnings the cases recorded (CaseResult.CollectorWarnings), each
// once with the cases that had it, in order of first appearance: a reader must see that a figure came with a caveat.
func caseWarnings(cases []results.CaseResult) []string {
	var order []string
	ids := map[string][]string{}
	for _, c := range cases {
		for _, w := range c.CollectorWarnings {
			if w == "" || slices.Contains(ids[w], c.CaseID) {
				continue
			}
			if ids[w] == nil {
				order = append(order, w)
			}
			ids[w] = append(ids[w], c.CaseID)
		}
	}
	out := make([]string, 0, len(order))
	for _, w := range order {
		out = append(out, fmt.Sprintf("%s (case %s)", w, strings.Join(ids[w], ", ")))
	}
	return out
}

func latestCases(cases []results.CaseResult) []results.CaseResult {
	idx := map[string]int{}
	var out []results.CaseResult
	for _, c := range cases {
		if i, ok := idx[c.CaseID]; ok {
			out[i] = c
			continue
		}
		idx[c.CaseID] = len(out)
		out = append(out, c)
	}
	return out
}

// StandIn reports whether the run's figures come from a test stand-in rather than Istio, or carry caveats.
func (r Report) StandIn() bool {
	return r.Meta.Cluster.Istio != nil && r.Meta.Cluster.Istio.DataPlane == results.DataPlaneStandIn
}

// DataPlaneOf is what ran component in this run (Istio's own when the run recorded nothing of it).
func (r Report) DataPlaneOf(component string) results.ComponentDataPlane {
	if ist := r.Meta.Cluster.Istio; ist != nil {
		if c, ok := results.DataPlaneOf(ist.DataPlanes, results.Component(component)); ok {
			return c
		}
		if len(ist.DataPlanes) == 0 && ist.DataPlane == results.DataPlaneStandIn { // runs recorded before per-component facts
			return results.ComponentDataPlane{Component: results.Component(component), Kind: results.DataPlaneStandIn, Description: string(results.DataPlaneStandIn)}
		}
	}
	return results.ComponentDataPlane{Component: results.Component(component), Kind: results.DataPlaneIstio}
}

// Banner returns the caveat lines every rendering shows first; empty when there are none.
func (r Report) Banner() []string {
	const standIn = "data plane: test stand-in, figures are not Istio's" // runs recorded before per-component facts
	var out []string
	if in := r.Meta.Interrupted; in != nil {
		line := "this run was " + in.Text() + ": its figures cover the recorded cases only"
		if r.Meta.Command == "" || r.Meta.Command == "run" {
			line += " (meshbench run --resume RUN_DIR runs the rest)"
		}
		out = append(out, line)
	}
	legacy := r.StandIn() && len(r.Meta.Cluster.Istio.DataPlanes) == 0
	if legacy {
		out = append(out, standIn)
	} else if len(r.Meta.Notes) > 0 {
		out = append(out, "this run carries caveats: read the notes before using its figures")
	}
	for _, n := range r.Meta.Notes {
		if n != standIn || !legacy { // the runner records the same sentence in run.json: show it once
			out = append(out, n)
		}
	}
	return out
}

// scenarioFacts reads a few fields of the config echo without depending on the scenario package (report works from
// files alone, whatever version of meshbench wrote them).
type scenarioFacts struct {
	Name        string
	App         string
	Description string
	Idle        string
	Load        string
	Reps        string
	Interleave  string
	QPS         string
	Connections string
}

// ScenarioName is metadata.name of the scenario the run recorded ("" when run.json has no config echo).
func (r Report) ScenarioName() string { return r.scenario().Name }

func (r Report) scenario() scenarioFacts {
	var doc struct {
		Metadata struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"metadata"`
		Spec struct {
			Workload struct {
				App string `json:"app"`
			} `json:"workload"`
			Windows struct {
				Idle        any    `json:"idle"`
				Load        any    `json:"load"`
				Repetitions int    `json:"repetitions"`
				Interleave  string `json:"interleave"`
			} `json:"windows"`
			Load struct {
				QPS         []any `json:"qps"`
				Connections int   `json:"connections"`
			} `json:"load"`
		} `json:"spec"`
	}
	if len(r.Meta.Scenario) == 0 || json.Unmarshal(r.Meta.Scenario, &doc) != nil {
		return scenarioFacts{}
	}
	f := scenarioFacts{Name: doc.Metadata.Name, Description: doc.Metadata.Description, App: doc.Spec.Workload.App,
		Idle: anyText(doc.Spec.Windows.Idle), Load: anyText(doc.Spec.Windows.Load), Interleave: doc.Spec.Windows.Interleave}
	if doc.Spec.Windows.Repetitions > 0 {
		f.Reps = strconv.Itoa(doc.Spec.Windows.Repetitions)
	}
	var qps []string
	for _, q := range doc.Spec.Load.QPS {
		qps = append(qps, anyText(q))
	}
	f.QPS = strings.Join(qps, ", ")
	if doc.Spec.Load.Connections > 0 {
		f.Connections = strconv.Itoa(doc.Spec.Load.Connections)
	}
	return f
}

func anyText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// observedWindows lists the distinct measured window lengths per kind, from the case records.
func (r Report) observedWindows() map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, c := range r.Cases {
		for _, w := range c.Windows {
			d := w.Duration().Round(time.Second)
			if !slices.Contains(out[w.Kind], d) {
				out[w.Kind] = append(out[w.Kind], d)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// series finds a Series by key.
func (r Report) series(k results.Key) (results.Series, bool) {
	for _, s := range r.Summary.Series {
		if s.Key == k {
			return s, true
		}
	}
	return results.Series{}, false
}

// topologies, modes and loads in the summary's order (first appearance), for keys matching keep.
func distinctKeys(ss []results.Series, keep func(results.Series) bool, field func(results.Key) string) []string {
	var out []string
	for _, s := range ss {
		if keep(s) && !slices.Contains(out, field(s.Key)) {
			out = append(out, field(s.Key))
		}
	}
	return out
}

func isResource(s results.Series) bool {
	return isUsage(s) && !results.IsBenchmarkComponent(s.Component) && s.Component != results.ComponentNode
}

// isUsage is a total CPU or memory series of an idle or load window, whatever its component.
func isUsage(s results.Series) bool {
	return (s.Metric == charts.MetricCPU || s.Metric == charts.MetricMemory) && s.Labels == "" &&
		(s.Window == results.WindowIdle || s.Window == results.WindowLoad)
}

// fmtMean renders a series' mean with the half width of its interval: "412 ± 15", or "412 (n=2: no interval)" below
// results.MinIntervalN repetitions (an interval from 2 is routinely wider than the value: 0.720 ± 0.960).
func fmtMean(s results.Series) string {
	if s.CI == nil || s.N < results.MinIntervalN {
		return charts.FormatValue(s.Mean) + " (" + noInterval(s.N) + ")"
	}
	half := (s.CI.High - s.CI.Low) / 2
	return charts.FormatValue(s.Mean) + " ± " + charts.FormatValue(half)
}

// noInterval says why a figure has no interval: "n=2: no interval".
func noInterval(n int) string { return "n=" + strconv.Itoa(n) + ": no interval" }

// deltaN is the smaller repetition count of a delta's two series (0 when a series is not in the summary): a change
// is judged only from results.MinIntervalN repetitions on each side.
func (r Report) deltaN(d results.Delta) int {
	n := -1
	for _, s := range r.Summary.Series {
		k := s.Key
		if k.Mode != d.Base && k.Mode != d.Other {
			continue
		}
		k.Mode = ""
		if k == d.Key {
			if n < 0 || s.N < n {
				n = s.N
			}
		}
	}
	return max(n, 0)
}

// fmtCI renders an interval: "[395, 425]".
func fmtCI(ci *results.Interval) string {
	if ci == nil {
		return "n/a (fewer than 2 observations)"
	}
	return "[" + charts.FormatValue(ci.Low) + ", " + charts.FormatValue(ci.High) + "]"
}

// signed renders v with an explicit sign.
func signed(v float64) string {
	if v > 0 || (v == 0 && !math.Signbit(v)) {
		return "+" + charts.FormatValue(v)
	}
	return charts.FormatValue(v)
}

// fmtDeltaPct renders a delta as "-68.8 % [-70.1, -67.5] significant"; n is deltaN.
func fmtDeltaPct(d results.Delta, n int) string {
	change, verdict := deltaPctParts(d, n)
	return change + " " + verdict
}

// fmtDeltaAbs renders a delta in its unit: "+1.10 ms [+0.9, +1.3]"; n is deltaN.
func fmtDeltaAbs(d results.Delta, n int) string {
	s := signed(d.Diff) + " " + string(d.Unit)
	if d.DiffCI == nil || n < results.MinIntervalN {
		return s + " (" + noInterval(n) + ")"
	}
	s += " [" + signed(d.DiffCI.Low) + ", " + signed(d.DiffCI.High) + "]"
	if !d.Significant {
		s += " not significant"
	}
	return s
}

func windowLabel(window, load string) string {
	if window == results.WindowIdle || load == "" {
		return window
	}
	return "load " + load + " qps"
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
