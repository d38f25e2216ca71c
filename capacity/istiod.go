package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/meshbench/meshbench/results"
)

// Schemas of hack/istiodscale's curve file (istiod-curve.json) that ParseIstiodCurve reads: v1 has one window per
// size (the point's own cpuMillicores and memoryMiB), v2 a list of repetitions per size.
const (
	istiodCurveV1 = "meshbench.dev/istiod-curve/v1"
	istiodCurveV2 = "meshbench.dev/istiod-curve/v2"
)

// SourceIstiodCurve marks the fits that UseIstiodCurve took from a curve instead of the run.
const SourceIstiodCurve = "istiod-curve"

// Stat3 is a window's statistic as the curve records it.
type Stat3 struct {
	Min float64 `json:"min"`
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
}

// CurveRepetition is one measurement window at one size.
type CurveRepetition struct {
	Repetition    int   `json:"repetition"`
	CPUMillicores Stat3 `json:"cpuMillicores"`
	MemoryMiB     Stat3 `json:"memoryMiB"`
}

// MeshSize is what a curve's mesh held at one size.
type MeshSize struct {
	Pods       int `json:"pods"`
	Services   int `json:"services"`
	Namespaces int `json:"namespaces"`
}

// CurveSize is one size of the sweep and its windows.
type CurveSize struct {
	MeshSize
	Repetitions []CurveRepetition `json:"repetitions"`
}

// IstiodCurve is what projections need of a curve file: the sizes and istiod's CPU and memory at each.
type IstiodCurve struct {
	Schema   string `json:"schema"`
	RunID    string `json:"runID"`
	Complete bool   `json:"complete"`
	// Error is why an incomplete sweep stopped (the sizes it reached are still measured).
	Error string      `json:"error,omitempty"`
	Sizes []CurveSize `json:"sizes"`
}

// The file's JSON: numbers as curveNumber, so that a missing field is told from a zero and every mistyped one is a
// problem with its path (encoding/json stops at the first, naming no index).
type (
	rawStat3 struct{ Min, Avg, Max curveNumber[float64] }
	rawRep   struct {
		Repetition    curveNumber[int] `json:"repetition"`
		CPUMillicores *rawStat3        `json:"cpuMillicores"`
		MemoryMiB     *rawStat3        `json:"memoryMiB"`
	}
	rawPoint struct {
		Pods          curveNumber[int] `json:"pods"`
		Services      curveNumber[int] `json:"services"`
		Namespaces    curveNumber[int] `json:"namespaces"`
		CPUMillicores *rawStat3        `json:"cpuMillicores"` // v1: the one window
		MemoryMiB     *rawStat3        `json:"memoryMiB"`
		Repetitions   []rawRep         `json:"repetitions"` // v2
	}
	rawCurve struct {
		Schema   string     `json:"schema"`
		RunID    string     `json:"runID"`
		Complete bool       `json:"complete"`
		Error    string     `json:"error"`
		Points   []rawPoint `json:"points"`
	}
)

// curveNumber is a number of the curve file as written: set when present and not null, bad the JSON of a value
// that is not a T ("many", 1.5 for a count).
type curveNumber[T int | float64] struct {
	set bool
	v   T
	bad string
}

func (n *curveNumber[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	n.set = true
	if err := json.Unmarshal(b, &n.v); err != nil {
		n.bad = string(b)
	}
	return nil
}

// problem is what is wrong with the number at path ("" when it is fine); want names what it must be.
func (n curveNumber[T]) problem(path, want string) string {
	switch {
	case !n.set:
		return path + ": missing"
	case n.bad != "":
		return fmt.Sprintf("%s: %s is not %s", path, n.bad, want)
	}
	return ""
}

// ParseIstiodCurve reads an istiod-curve.json of schema v1 or v2. Every error names the field (points[2].pods,
// points[0].repetitions[1].memoryMiB.avg); a v1 point becomes one repetition.
func ParseIstiodCurve(r io.Reader) (*IstiodCurve, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("istiod curve: %w", err)
	}
	var raw rawCurve
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("istiod curve: not JSON of an istiod-curve.json: %w", err)
	}
	if raw.Schema != istiodCurveV1 && raw.Schema != istiodCurveV2 {
		return nil, fmt.Errorf("istiod curve: schema %q: want %s or %s (hack/istiodscale writes it)", raw.Schema, istiodCurveV2, istiodCurveV1)
	}
	c := &IstiodCurve{Schema: raw.Schema, RunID: raw.RunID, Complete: raw.Complete, Error: raw.Error}
	var errs []error
	seen := map[int]int{}
	for i, p := range raw.Points {
		at := fmt.Sprintf("points[%d]", i)
		s := CurveSize{}
		for _, f := range []struct {
			name string
			v    curveNumber[int]
			to   *int
		}{{"pods", p.Pods, &s.Pods}, {"services", p.Services, &s.Services}, {"namespaces", p.Namespaces, &s.Namespaces}} {
			switch msg := f.v.problem(at+"."+f.name, "a whole number"); {
			case msg != "":
				errs = append(errs, errors.New(msg))
			case f.v.v < 0:
				errs = append(errs, fmt.Errorf("%s.%s: %d: not a count", at, f.name, f.v.v))
			default:
				*f.to = f.v.v
			}
		}
		if p.Pods.set && p.Pods.bad == "" {
			if j, dup := seen[p.Pods.v]; dup {
				errs = append(errs, fmt.Errorf("%s.pods: %d pods again (also points[%d]): one point per size", at, p.Pods.v, j))
			}
			seen[p.Pods.v] = i
		}
		reps := p.Repetitions
		if raw.Schema == istiodCurveV1 {
			reps = []rawRep{{Repetition: curveNumber[int]{set: true, v: 1}, CPUMillicores: p.CPUMillicores, MemoryMiB: p.MemoryMiB}}
		} else if len(reps) == 0 {
			errs = append(errs, fmt.Errorf("%s.repetitions: missing or empty (schema %s lists the windows of every size)", at, raw.Schema))
		}
		for j, rr := range reps {
			rat := fmt.Sprintf("%s.repetitions[%d]", at, j)
			if raw.Schema == istiodCurveV1 {
				rat = at
			}
			rep := CurveRepetition{Repetition: j + 1}
			switch {
			case rr.Repetition.bad != "":
				errs = append(errs, fmt.Errorf("%s.repetition: %s is not a whole number", rat, rr.Repetition.bad))
			case rr.Repetition.set:
				rep.Repetition = rr.Repetition.v
			}
			var e1, e2 error
			rep.CPUMillicores, e1 = stat3(rr.CPUMillicores, rat+".cpuMillicores")
			rep.MemoryMiB, e2 = stat3(rr.MemoryMiB, rat+".memoryMiB")
			errs = append(errs, e1, e2)
			s.Repetitions = append(s.Repetitions, rep)
		}
		c.Sizes = append(c.Sizes, s)
	}
	if len(raw.Points) == 0 {
		errs = append(errs, errors.New("points: no sizes measured"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("istiod curve:\n%w", err)
	}
	slices.SortStableFunc(c.Sizes, func(a, b CurveSize) int { return a.Pods - b.Pods })
	return c, nil
}

func stat3(s *rawStat3, at string) (Stat3, error) {
	if s == nil {
		return Stat3{}, fmt.Errorf("%s: missing", at)
	}
	var out Stat3
	var errs []error
	for _, f := range []struct {
		name string
		v    curveNumber[float64]
		to   *float64
	}{{"min", s.Min, &out.Min}, {"avg", s.Avg, &out.Avg}, {"max", s.Max, &out.Max}} {
		switch msg := f.v.problem(at+"."+f.name, "a number"); {
		case msg != "":
			errs = append(errs, errors.New(msg))
		case f.v.v < 0 || math.IsInf(f.v.v, 0) || math.IsNaN(f.v.v):
			errs = append(errs, fmt.Errorf("%s.%s: %v: not a figure >= 0", at, f.name, f.v.v))
		default:
			*f.to = f.v.v
		}
	}
	if len(errs) == 0 && !(out.Min <= out.Avg && out.Avg <= out.Max) {
		errs = append(errs, fmt.Errorf("%s: min %g, avg %g, max %g: want min <= avg <= max", at, out.Min, out.Avg, out.Max))
	}
	return out, errors.Join(errs...)
}

// IstiodCurveFit is istiod's cost fitted against the mesh size of a curve: fixed + slope x pods for CPU (millicores)
// and memory (MiB), from the average of every window (each repetition at each size is one point, so the intervals
// and the lack-of-fit test come from the repetitions).
type IstiodCurveFit struct {
	File     string `json:"file"` // the curve file's name
	Schema   string `json:"schema"`
	RunID    string `json:"runID"`
	Complete bool   `json:"complete"`
	// Sizes are the measured pod counts; Largest is the largest size's pods, services and namespaces.
	Sizes       []int    `json:"sizes"`
	Repetitions []int    `json:"repetitions"` // windows per size, in the order of Sizes
	Largest     MeshSize `json:"largest"`
	CPU         Line     `json:"cpu"`
	Memory      Line     `json:"memory"`
	// RunCheck compares, per mode, what the run's own istiod used at the run's mesh size with the curve's
	// prediction there (UseIstiodCurve).
	RunCheck []CurveCheck `json:"runCheck,omitempty"`
	Notes    []string     `json:"notes,omitempty"`
}

// CurveCheck is one mode's istiod as the run measured it against the curve at the run's app pods.
type CurveCheck struct {
	Mode    string      `json:"mode"`
	AppPods float64     `json:"appPods"`
	CPU     CheckFigure `json:"cpu"`    // millicores
	Memory  CheckFigure `json:"memory"` // MiB
}

// CheckFigure is a measured mean and the curve's prediction with its interval for one new window.
type CheckFigure struct {
	Measured  float64  `json:"measured"`
	Predicted Estimate `json:"predicted"`
	// Inside is whether Measured lies in the prediction interval (false without one).
	Inside bool `json:"inside"`
}

// fitIstiodCurve fits c at the confidence level (in (0, 1)); file names it in the output. Pure.
func fitIstiodCurve(c *IstiodCurve, file string, confidence float64) IstiodCurveFit {
	f := IstiodCurveFit{File: file, Schema: c.Schema, RunID: c.RunID, Complete: c.Complete}
	for _, s := range c.Sizes {
		f.Sizes = append(f.Sizes, s.Pods)
		f.Repetitions = append(f.Repetitions, len(s.Repetitions))
	}
	if n := len(c.Sizes); n > 0 {
		f.Largest = c.Sizes[n-1].MeshSize
	}
	f.CPU = FitLine(curvePoints(c, string(results.MetricCPU)), confidence)
	f.Memory = FitLine(curvePoints(c, string(results.MetricMemory)), confidence)
	if !c.Complete {
		why := "no reason recorded"
		if c.Error != "" {
			why = c.Error
		}
		f.Notes = append(f.Notes, fmt.Sprintf("the sweep did not complete (%s): only the sizes it measured are fitted", why))
	}
	if len(f.Repetitions) > 0 && slices.Max(f.Repetitions) < 2 {
		f.Notes = append(f.Notes, "one window per size: the intervals come from the scatter around the line, linearity is not tested (hack/istiodscale -repetitions)")
	}
	return f
}

// UseIstiodCurve replaces the run's istiod usage fits (cpu and memory, every mode) by the curve's, measured at several
// mesh sizes; reserved fits stay the run's. file names the curve in the output. No istiod usage fits is an error.
func (m *Model) UseIstiodCurve(c *IstiodCurve, file string) error {
	cf := fitIstiodCurve(c, file, m.Confidence)
	cf.RunCheck = runCheck(m, cf)
	for _, ck := range cf.RunCheck {
		if !ck.CPU.Inside || !ck.Memory.Inside {
			cf.Notes = append(cf.Notes, fmt.Sprintf("mode %s: the run's istiod used %.3g millicores and %.3g MiB at %g app pods, the curve predicts %s millicores and %s MiB there: "+
				"outside its interval, so this istiod costs what the curve does not measure (connected proxies' xDS, other config) or the clusters differ",
				ck.Mode, ck.CPU.Measured, ck.Memory.Measured, ck.AppPods, estText(ck.CPU.Predicted), estText(ck.Memory.Predicted)))
		}
	}
	replaced := 0
	for i := range m.Fits {
		f := &m.Fits[i]
		if f.Component != string(results.ComponentIstiod) || f.Kind != KindUsage {
			continue
		}
		line := cf.CPU
		if f.Metric == string(results.MetricMemory) {
			line = cf.Memory
		}
		f.Line, f.Points, f.Source = line, curvePoints(c, f.Metric), SourceIstiodCurve
		replaced++
	}
	if replaced == 0 {
		return fmt.Errorf("istiod curve %s: the run has no istiod usage figures to replace", file)
	}
	m.IstiodCurve = &cf
	return nil
}

// curvePoints are the windows' averages of a metric: one point per repetition and size, the size's pods as X.
func curvePoints(c *IstiodCurve, metric string) []Point {
	var out []Point
	for _, s := range c.Sizes {
		for _, r := range s.Repetitions {
			y := r.CPUMillicores.Avg
			if metric == string(results.MetricMemory) {
				y = r.MemoryMiB.Avg
			}
			out = append(out, Point{Level: strconv.Itoa(s.Pods), Repetition: r.Repetition, X: float64(s.Pods), Y: y})
		}
	}
	return out
}

// runCheck is, per mode with istiod usage fits of the run, the run's mean at its mesh size against the curve's
// prediction there. Only a run that measured one mesh size is checked (with several, the run has its own line).
func runCheck(m *Model, cf IstiodCurveFit) []CurveCheck {
	var out []CurveCheck
	for _, mode := range m.Modes {
		cu, mu := m.Find(mode, string(results.ComponentIstiod), string(results.MetricCPU), KindUsage), m.Find(mode, string(results.ComponentIstiod), string(results.MetricMemory), KindUsage)
		if cu == nil || mu == nil || cu.Source != "" || cu.N == 0 || cu.LoadMin != cu.LoadMax {
			continue
		}
		x := cu.LoadMin
		out = append(out, CurveCheck{Mode: mode, AppPods: x, CPU: checkFigure(cu.At(x), cf.CPU, x), Memory: checkFigure(mu.At(x), cf.Memory, x)})
	}
	return out
}

func checkFigure(measured float64, l Line, x float64) CheckFigure {
	y, pi := l.Predict(x)
	return CheckFigure{Measured: measured, Predicted: Estimate{Value: y, PI: pi}, Inside: pi != nil && measured >= pi.Low && measured <= pi.High}
}

func estText(e Estimate) string {
	if e.PI == nil {
		return fmt.Sprintf("%.3g (no interval)", e.Value)
	}
	return fmt.Sprintf("%.3g [%.3g, %.3g]", e.Value, e.PI.Low, e.PI.High)
}
