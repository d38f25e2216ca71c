package report

import (
	"encoding/json"
	"fmt"
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
	samples []results.Sample
	// Cases is the latest record per case ID, in order of first appearance.
	Cases []results.CaseResult
	// warnings are the run's read warnings, then the summary's.
	warnings []string
	// recomputed is true when summary.json was missing and the summary was computed from the samples.
	recomputed bool
	// baseline is the pod network run (meshbench cni) of the same cluster a combined report holds (Combine); nil
	// otherwise.
	baseline *Report
}

// Build prepares a report from a run as results.Read returns it. When the run has no summary.json, the summary is
// computed with results.Summarize (default options).
func Build(run *results.Run) Report {
	r := Report{Dir: run.Dir, Meta: run.Meta, samples: run.Samples}
	if run.Summary != nil {
		r.Summary = *run.Summary
	} else {
		r.Summary = results.Summarize(run.Meta, run.Samples, run.Cases, results.SummaryOptions{})
		r.recomputed = true
	}
	r.Cases = latestCases(run.Cases)
	if len(r.Cases) == 0 {
		r.Cases = r.Summary.Cases
	}
	for _, w := range run.Warnings {
		r.warnings = append(r.warnings, w.String())
	}
	r.warnings = append(r.warnings, r.Summary.Warnings...)
	r.warnings = append(r.warnings, caseWarnings(r.Cases)...)
	r.warnings = append(r.warnings, remeasured(r.Cases)...)
	r.warnings = append(r.warnings, shortLoads(r.Cases)...)
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

// shortLoads says which cases achieved less than their requested rate (CaseResult.LoadShortfall): their figures are
// of a saturated system, not of the asked load.
func shortLoads(cases []results.CaseResult) []string {
	var out []string
	for _, c := range cases {
		if s := c.LoadShortfall; s != nil {
			out = append(out, fmt.Sprintf("case %s achieved %.6g of the %.6g requests per second it asked for (%.1f %% short, more than %g %%): it measured a saturated system, not the asked load",
				c.CaseID, s.AchievedQPS, s.RequestedQPS, s.Pct(), results.LoadShortfallPct))
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

// isStandIn reports whether the run's data plane, as one kind, was a test stand-in rather than Istio.
func (r Report) isStandIn() bool {
	return r.Meta.Cluster.Istio != nil && r.Meta.Cluster.Istio.DataPlane == results.DataPlaneStandIn
}

// dataPlaneOf is what ran component in this run (Istio's own when the run recorded nothing of it).
func (r Report) dataPlaneOf(component string) results.ComponentDataPlane {
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
	legacy := r.isStandIn() && len(r.Meta.Cluster.Istio.DataPlanes) == 0
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

// windowLoad is one window of a case: its kind and, for a load window, the load.
type windowLoad struct{ window, load string }

// windowsOf lists the windows of the series keep selects, in the summary's order (first appearance).
func windowsOf(ss []results.Series, keep func(results.Series) bool) []windowLoad {
	var out []windowLoad
	for _, x := range ss {
		if w := (windowLoad{x.Window, x.Load}); keep(x) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// componentWindow is one mode and window and the components measured in it.
type componentWindow struct {
	mode string
	windowLoad
	comps []string // in charts' order
}

// componentWindows lists the modes and windows of the series keep selects in the summary's order (first appearance),
// each with its components: the rows of a per-topology table.
func componentWindows(ss []results.Series, keep func(results.Series) bool) []componentWindow {
	var out []componentWindow
	for _, mode := range distinctKeys(ss, keep, func(k results.Key) string { return string(k.Mode) }) {
		inMode := func(x results.Series) bool { return keep(x) && string(x.Mode) == mode }
		for _, w := range windowsOf(ss, inMode) {
			inW := func(x results.Series) bool { return inMode(x) && x.Window == w.window && x.Load == w.load }
			comps := distinctKeys(ss, inW, func(k results.Key) string { return string(k.Component) })
			charts.SortComponents(comps)
			out = append(out, componentWindow{mode, w, comps})
		}
	}
	return out
}

func isResource(s results.Series) bool {
	return isUsage(s) && !results.IsBenchmarkComponent(s.Component) && s.Component != results.ComponentNode
}

// isUsage is a total CPU or memory series of an idle or load window, whatever its component.
func isUsage(s results.Series) bool {
	return (s.Metric == results.MetricCPU || s.Metric == results.MetricMemory) && s.Labels == "" &&
		(s.Window == results.WindowIdle || s.Window == results.WindowLoad)
}

// deltaN is the smaller repetition count of a delta's two series (0 when a series is not in the summary): a change
// is judged only from results.MinIntervalN repetitions on each side.
func (r Report) deltaN(d results.Delta) int { return minN(r.Summary.Series, d) }

// minN is the smaller repetition count of d's two series in ss (0 when one is missing).
func minN(ss []results.Series, d results.Delta) int {
	n := -1
	for _, s := range ss {
		k := s.Key
		if k.Mode != d.Base && k.Mode != d.Other {
			continue
		}
		k.Mode = ""
		if k == d.Key && (n < 0 || s.N < n) {
			n = s.N
		}
	}
	return max(n, 0)
}

// componentCaveats are the data-plane caveats of one component's figures (none for Istio's own, or for app and
// istiod, which are never stand-ins).
func (r Report) componentCaveats(comp string) []string {
	ist := r.Meta.Cluster.Istio
	if ist == nil {
		return nil
	}
	if len(ist.DataPlanes) == 0 {
		if ist.DataPlane == results.DataPlaneStandIn && slices.Contains([]string{string(results.ComponentSidecar), string(results.ComponentZtunnel), string(results.ComponentWaypoint)}, comp) {
			return results.SummaryDataPlaneNotes(ist.DataPlane, nil, nil)
		}
		return nil
	}
	return results.DataPlaneNotes(ist.DataPlanes, []results.Component{results.Component(comp)})
}

// unitOf is the unit the summary uses for a resource metric (the first seen).
func (r Report) unitOf(metric string) string {
	for _, x := range r.Summary.Series {
		if string(x.Metric) == metric && isResource(x) {
			return string(x.Unit)
		}
	}
	return "?"
}
