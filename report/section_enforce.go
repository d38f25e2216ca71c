package report

import (
	"math"
	"strconv"

	"github.com/meshbench/meshbench/results"
)

// enforceSection: how long a deny policy took to be enforced and lifted under load in each mode
// (results.Enforcement.Figures), mean ± interval over the repetitions. Only for runs with enforce cases.
func (r Report) enforceSection() (section, bool) {
	s := section{Title: "Time to enforce"}
	var modes []results.Mode
	figs := map[results.Mode][]results.EnforceFigures{}
	failed := map[results.Mode]int{}
	for _, c := range r.Cases {
		e := c.Enforcement
		if e == nil {
			continue
		}
		if _, ok := figs[e.Mode]; !ok {
			modes = append(modes, e.Mode)
			figs[e.Mode] = nil
		}
		if c.Status != results.StatusOK {
			failed[e.Mode]++
			continue
		}
		figs[e.Mode] = append(figs[e.Mode], e.Figures())
	}
	if len(modes) == 0 {
		return s, false
	}
	results.SortModes(modes)
	conf := r.Summary.Confidence
	if conf == 0 {
		conf = results.DefaultConfidence
	}
	s.para("Under a fixed-rate load, half of it carrying the header x-meshbench-deny: yes, meshbench applied an AuthorizationPolicy denying those requests (in sidecar mode namespace-wide, in waypoint mode attached to the waypoint) and removed it later. Seconds from the policy's creation (or deletion) to the end of the second in which the load first saw it (some requests of the slice refused, or let through again) and from which it saw it everywhere (every request of the slice, to the next change or the end): upper bounds to the one-second resolution of the record, covering istiod's push and every proxy's update. Mean ± half the %s confidence interval over the repetitions; \"never\" counts repetitions whose record never showed it. The allowed slice's errors must be 0.", confPct(conf))
	var rows [][]string
	for _, m := range modes {
		fs := figs[m]
		n := strconv.Itoa(len(fs))
		if failed[m] > 0 {
			n += " (" + strconv.Itoa(failed[m]) + " failed)"
		}
		col := func(get func(results.EnforceFigures) float64) string { return meanOfFigures(fs, get, conf) }
		rows = append(rows, []string{string(m), n,
			col(func(f results.EnforceFigures) float64 { return f.FirstEnforced }),
			col(func(f results.EnforceFigures) float64 { return f.AllEnforced }),
			col(func(f results.EnforceFigures) float64 { return f.FirstLifted }),
			col(func(f results.EnforceFigures) float64 { return f.AllLifted }),
			col(func(f results.EnforceFigures) float64 { return float64(f.AllowedErrors) }),
		})
	}
	s.table(table{ID: "enforce", Header: []string{"mode", "n", "first enforced (s)", "enforced everywhere (s)", "first lifted (s)", "lifted everywhere (s)", "allowed slice errors"},
		Numeric: []bool{false, false, true, true, true, true, true}, Rows: rows})
	return s, true
}

// meanOfFigures is the mean ± interval of get over fs where it is a number, saying how many it was not ("never").
func meanOfFigures[F any](fs []F, get func(F) float64, conf float64) string {
	var v []float64
	never := 0
	for _, f := range fs {
		if x := get(f); !math.IsNaN(x) {
			v = append(v, x)
		} else {
			never++
		}
	}
	if len(v) == 0 {
		return "n/a"
	}
	mean, _, ci := results.MeanCI(v, conf)
	out := fmtMean(results.Series{N: len(v), Mean: mean, CI: ci})
	if never > 0 {
		out += " (" + strconv.Itoa(never) + " never)"
	}
	return out
}
