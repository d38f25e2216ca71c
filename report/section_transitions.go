package report

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/results"
)

// transitionsSection: what each move between modes under load cost (results.Transition.Figures), mean ± interval over
// its repetitions: how long the move took, the errors during and after it, the seconds with errors, the p99 before it
// and its worst second, and the time until the new mode's steady state. Only for runs with transition cases.
func (r Report) transitionsSection() (section, bool) {
	s := section{Title: "Migration under load"}
	type move struct{ from, to results.Mode }
	var moves []move
	figs := map[move][]results.TransitionFigures{}
	failed := map[move]int{}
	for _, c := range r.Cases {
		tr := c.Transition
		if tr == nil {
			continue
		}
		m := move{tr.From, tr.To}
		if _, ok := figs[m]; !ok {
			moves = append(moves, m)
			figs[m] = nil
		}
		if c.Status != results.StatusOK {
			failed[m]++
			continue
		}
		figs[m] = append(figs[m], tr.Figures())
	}
	if len(moves) == 0 {
		return s, false
	}
	conf := r.Summary.Confidence
	if conf == 0 {
		conf = results.DefaultConfidence
	}
	s.para("Each move ran under a fixed-rate load recorded per second (by the second each request completed in): the load ran in the old mode, the move started (labels applied, workloads whose injection changes restarted), the pods became Ready and every pod was proven in the new mode, and the load ran on. Mean ± half the %s confidence interval over the repetitions; \"steady after\" is from the move's start to the first second from which every second has no error and a p99 within %s x the new mode's (the median of the record's last third) + %s ms. The per-second records are in cases.jsonl (transition.seconds).",
		confPct(conf), strconv.FormatFloat(results.SteadyP99Factor, 'f', -1, 64), strconv.FormatFloat(results.SteadyP99SlackMs, 'f', -1, 64))
	var rows [][]string
	var notes []string
	for _, m := range moves {
		fs := figs[m]
		col := func(get func(results.TransitionFigures) float64) string { return meanOfFigures(fs, get, conf) }
		name := string(m.from) + " → " + string(m.to)
		n := strconv.Itoa(len(fs))
		if failed[m] > 0 {
			n += " (" + strconv.Itoa(failed[m]) + " failed)"
		}
		rows = append(rows, []string{name, n,
			col(func(f results.TransitionFigures) float64 { return f.MoveSeconds }),
			col(func(f results.TransitionFigures) float64 { return float64(f.ErrorsDuring) }),
			col(func(f results.TransitionFigures) float64 { return float64(f.ErrorsAfter) }),
			col(func(f results.TransitionFigures) float64 { return float64(f.ErrorSeconds) }),
			col(func(f results.TransitionFigures) float64 { return f.P99Before }),
			col(func(f results.TransitionFigures) float64 { return f.P99Worst }),
			col(func(f results.TransitionFigures) float64 { return f.SteadySeconds }),
		})
		kinds := map[string]int64{}
		for _, f := range fs {
			for k, v := range f.ErrorsByKind {
				kinds[k] += v
			}
		}
		if len(kinds) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(kinds)) {
				parts = append(parts, k+": "+strconv.FormatInt(kinds[k], 10))
			}
			notes = append(notes, name+": errors by kind over every repetition: "+strings.Join(parts, ", "))
		}
	}
	s.table(table{ID: "transitions", Header: []string{"move", "n", "move took (s)", "errors during", "errors after", "seconds with errors", "p99 before (ms)", "worst p99 (ms)", "steady after (s)"},
		Numeric: []bool{false, false, true, true, true, true, true, true, true}, Rows: rows, Notes: notes})
	return s, true
}
