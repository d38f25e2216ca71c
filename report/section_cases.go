package report

import (
	"strconv"

	"github.com/meshbench/meshbench/results"
)

// casesSection lists every failed or skipped case with its reason, and a count of the rest.
func (r Report) casesSection() (section, bool) {
	s := section{Title: "Failed and skipped cases"}
	counts := map[results.Status]int{}
	var rows [][]string
	for _, c := range r.Cases {
		counts[c.Status]++
		if c.Status == results.StatusOK {
			continue
		}
		load := orText(c.Load, "idle only")
		if c.Mode == "" {
			load = "n/a (cni)"
		}
		rows = append(rows, []string{c.CaseID, string(c.Status), orText(string(c.Mode), "n/a (cni)"), orText(c.Topology, "n/a (cni)"), load,
			strconv.Itoa(c.Repetition), orText(c.Reason, "no reason recorded (a bug: report it)")})
	}
	if in := r.Meta.Interrupted; in != nil {
		// Counting the recorded cases alone would read as a complete run ("1 cases: 1 ok ... No case failed").
		s.para("The run was %s; %d cases recorded: %d ok, %d failed, %d skipped. Samples of failed and skipped cases are left out of every figure.",
			in.Text(), len(r.Cases), counts[results.StatusOK], counts[results.StatusFailed], counts[results.StatusSkipped])
	} else {
		s.para("%d cases: %d ok, %d failed, %d skipped. Samples of failed and skipped cases are left out of every figure.",
			len(r.Cases), counts[results.StatusOK], counts[results.StatusFailed], counts[results.StatusSkipped])
	}
	switch {
	case len(rows) > 0:
		s.table(table{ID: "failed-cases", Header: []string{"case", "status", "mode", "topology", "load", "repetition", "reason"}, Rows: rows})
	case r.Meta.Interrupted != nil:
		s.para("No recorded case failed or was skipped.")
	default:
		s.para("No case failed or was skipped.")
	}
	if in := r.Meta.Interrupted; in != nil && len(in.NotRun) > 0 {
		s.heading("Cases not run")
		notRun := make([][]string, 0, len(in.NotRun))
		for _, id := range in.NotRun {
			why := "not reached"
			if id == in.Case && in.Phase != "" {
				why = "interrupted in " + in.Phase + ": not recorded"
			}
			notRun = append(notRun, []string{id, why})
		}
		s.table(table{ID: "not-run-cases", Header: []string{"case", "state"}, Rows: notRun})
		if r.Meta.Command == "" || r.Meta.Command == "run" {
			s.para("meshbench run --resume RUN_DIR runs them and keeps the recorded cases.")
		}
	}
	return s, true
}
