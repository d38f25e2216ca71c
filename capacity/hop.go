package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/results"
)

// hopStats are the latency percentiles fitted against the chain depth (loadgen's latency samples, 2xx only, ms).
var hopStats = []results.Stat{results.StatP50, results.StatP90, results.StatP99}

// HopFit is one mode's client latency percentile at one load level against the chain depth: Fixed is the latency
// of a chain of depth 0 extrapolated (the entry alone), Slope the milliseconds each further hop adds, in this mode.
// The points are the cases' repetitions (Level: the depth).
type HopFit struct {
	Mode   string  `json:"mode"`
	Load   string  `json:"load"` // the configured load level
	Stat   string  `json:"stat"` // p50 | p90 | p99
	Unit   string  `json:"unit"` // of Y: ms
	Depths []int   `json:"depths"`
	Line           // X: chain depth (hops), Y: latency in ms; Levels counts depths
	Points []Point `json:"points"`
}

// AddedPerHop is what a mesh mode adds to each hop: its per-hop slope minus mode none's at the same load level and
// percentile. Value is nil (and Reason says why) when either slope or its interval is missing.
type AddedPerHop struct {
	Mode  string   `json:"mode"`
	Load  string   `json:"load"`
	Stat  string   `json:"stat"`
	Unit  string   `json:"unit"` // ms per hop
	Value *float64 `json:"value,omitempty"`
	// CI is the confidence interval of the difference: Student t at the Welch-Satterthwaite degrees of freedom DF
	// of the two slopes' standard errors (the two fits are independent: different cases).
	CI     *results.Interval `json:"ci,omitempty"`
	DF     float64           `json:"df,omitempty"`
	Reason string            `json:"reason,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

// Hops is the per-hop latency of a run that measured several chain depths.
type Hops struct {
	Confidence float64       `json:"confidence"`
	Depths     []int         `json:"depths"` // distinct chain depths of the ok cases
	Fits       []HopFit      `json:"fits"`
	Added      []AddedPerHop `json:"added"`
	Warnings   []string      `json:"warnings,omitempty"`
}

// chainDepths are the distinct chain depths of run's latest ok cases (sorted) and the warnings of unreadable facts.
func chainDepths(run *results.Run) (map[string]int, []int, []string) {
	latest := map[string]results.CaseResult{}
	var order []string
	for _, c := range run.Cases {
		if _, ok := latest[c.CaseID]; !ok {
			order = append(order, c.CaseID)
		}
		latest[c.CaseID] = c
	}
	depth := map[string]int{}
	var depths []int
	var warnings []string
	for _, id := range order {
		c := latest[id]
		if c.Status != results.StatusOK {
			continue
		}
		if _, ok := c.Facts[results.FactChainDepth]; !ok {
			continue
		}
		d, err := factInt(c, results.FactChainDepth)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("case %q: %v: left out of the per-hop fits", id, err))
			continue
		}
		depth[id] = d
		addInt(&depths, d)
	}
	slices.Sort(depths)
	return depth, depths, warnings
}

// BuildHops fits, per mode, load level and latency percentile (p50, p90, p99), latency = fixed + slope x chain depth
// over run's ok cases with a chain-depth fact, and the latency each mesh mode adds per hop against mode none. It is
// nil when the run measured fewer than 2 chain depths (nothing to fit). Pure and deterministic.
func BuildHops(run *results.Run, confidence float64) *Hops {
	depth, depths, warnings := chainDepths(run)
	if len(depths) < 2 {
		return nil
	}
	h := &Hops{Confidence: confidence, Depths: depths, Warnings: warnings}
	type key struct{ mode, load, stat string }
	points := map[key][]Point{}
	for _, s := range run.Samples {
		if s.Window.Kind != results.WindowLoad || s.Component != results.ComponentLoadgen || s.Metric != results.MetricLatency ||
			s.Unit != results.UnitMs || len(s.Labels) > 0 || !slices.Contains(hopStats, s.Stat) || s.Mode == "" || s.Load == "" {
			continue
		}
		d, ok := depth[s.CaseID]
		if !ok {
			continue // not ok, or not a chain case (Build and Summarize name the failed ones)
		}
		k := key{string(s.Mode), s.Load, string(s.Stat)}
		points[k] = append(points[k], Point{Level: strconv.Itoa(d), Repetition: s.Repetition, X: float64(d), Y: s.Value})
	}
	keys := make([]key, 0, len(points))
	for k := range points {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(compareModes(a.mode, b.mode), compareLevels(a.load, b.load),
			cmp.Compare(slices.Index(hopStats, results.Stat(a.stat)), slices.Index(hopStats, results.Stat(b.stat))))
	})
	fits := map[key]*HopFit{}
	for _, k := range keys {
		pts := points[k]
		slices.SortStableFunc(pts, func(a, b Point) int { return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.Repetition, b.Repetition)) })
		f := HopFit{Mode: k.mode, Load: k.load, Stat: k.stat, Unit: string(results.UnitMs), Line: FitLine(pts, confidence), Points: pts}
		for _, p := range pts {
			addInt(&f.Depths, int(p.X))
		}
		h.Fits = append(h.Fits, f)
	}
	for i := range h.Fits {
		f := &h.Fits[i]
		fits[key{f.Mode, f.Load, f.Stat}] = f
	}
	for _, k := range keys {
		if k.mode == string(results.ModeNone) {
			continue
		}
		h.Added = append(h.Added, addedPerHop(fits[k], fits[key{string(results.ModeNone), k.load, k.stat}], confidence))
	}
	return h
}

// addedPerHop is m's slope minus none's with the Welch-Satterthwaite interval, or the reason there is none.
func addedPerHop(m, none *HopFit, confidence float64) AddedPerHop {
	a := AddedPerHop{Mode: m.Mode, Load: m.Load, Stat: m.Stat, Unit: "ms per hop"}
	switch {
	case none == nil:
		a.Reason = fmt.Sprintf("mode none has no %s latency at load %s: no baseline per-hop slope to subtract", m.Stat, m.Load)
		return a
	case m.Slope == nil:
		a.Reason = fmt.Sprintf("%s measured %d chain depth(s) at load %s: a per-hop slope needs 2", m.Mode, m.Levels, m.Load)
		return a
	case none.Slope == nil:
		a.Reason = fmt.Sprintf("none measured %d chain depth(s) at load %s: a per-hop slope needs 2", none.Levels, m.Load)
		return a
	case !m.HasInterval() || !none.HasInterval():
		a.Reason = fmt.Sprintf("too few repetitions for an interval (%s %d point(s), none %d over their depths; a slope's interval needs %d)",
			m.Mode, m.N, none.N, minIntervalPoints)
		return a
	}
	d := m.Slope.Value - none.Slope.Value
	vm, vn := m.ResidualSD*m.ResidualSD/m.sxx, none.ResidualSD*none.ResidualSD/none.sxx
	df := m.df + none.df // both exact (no noise): the sum, the interval is a point
	if vm+vn > 0 {
		df = (vm + vn) * (vm + vn) / (vm*vm/m.df + vn*vn/none.df)
	}
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-(1-confidence)/2) * math.Sqrt(vm+vn)
	a.Value, a.CI, a.DF = &d, &results.Interval{Low: d - half, High: d + half}, df
	for _, f := range []*HopFit{m, none} {
		if f.Trust == TrustNotLinear {
			a.Notes = append(a.Notes, fmt.Sprintf("%s %s is not linear in the depth (lack-of-fit p = %.3g): the per-hop figure is an average over the depths", f.Mode, f.Stat, *f.LackOfFitP))
		}
	}
	return a
}

func compareModes(a, b string) int {
	return results.Order(results.Modes)(results.Mode(a), results.Mode(b))
}

// compareLevels orders load levels numerically, numbers before names such as "max".
func compareLevels(a, b string) int {
	x, ea := strconv.ParseFloat(a, 64)
	y, eb := strconv.ParseFloat(b, 64)
	switch {
	case ea == nil && eb == nil:
		return cmp.Compare(x, y)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// poolingWarning is the limitation of Build's cost fits on a run of several chain depths.
func poolingWarning(depths []int) string {
	ds := make([]string, len(depths))
	for i, d := range depths {
		ds[i] = strconv.Itoa(d)
	}
	return fmt.Sprintf("the run measured chain depths %s: the cost fits pool the cases of every depth (a deeper chain has more pods, and each carries the full entry rate, not its share): per-pod figures are an average over the depths; measure one depth for a cost line of that depth",
		strings.Join(ds, ", "))
}
