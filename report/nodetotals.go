package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/charts"
	"github.com/meshbench/meshbench/results"
)

// cniNodeTotalsTable adds up the test nodes' averages per window, path and test (results.CNINodeTotals): each total
// names the nodes it covers and the ones counted, one per host, with hostNotes.
func cniNodeTotalsTable(totals []results.CNINodeTotal, nodes []results.NodeFacts) (table, bool) {
	if len(totals) == 0 {
		return table{}, false
	}
	var rows [][]string
	var covered, notes [][]string
	for _, t := range totals {
		rows = append(rows, []string{t.Window, t.Path, orText(t.Test, "-"), string(t.Metric), charts.FormatValue(t.Avg), string(t.Unit),
			strings.Join(t.Nodes, ", "), strings.Join(t.Counted, ", ")})
		covered, notes = append(covered, t.Nodes), append(notes, t.Notes)
	}
	return table{ID: "study-b-node-totals", Caption: "Whole-node totals: the test nodes' averages added up, each host counted once",
		Header:  []string{"window", "path", "test", "metric", "avg", "unit", "nodes", "counted"},
		Numeric: []bool{false, false, false, false, true, false, false, false}, Rows: rows, Notes: hostNotes(covered, notes, nodes)}, true
}

// modeNodeTotalsTable is a mesh run's whole-node totals of one topology (results.ModeNodeTotals): per mode, window
// and metric the test nodes' averages added up, each host once, with hostNotes.
func modeNodeTotalsTable(topo string, totals []results.ModeNodeTotal, nodes []results.NodeFacts) (table, bool) {
	var rows [][]string
	var covered, notes [][]string
	for _, t := range totals {
		if t.Topology != topo {
			continue
		}
		rows = append(rows, []string{orText(string(t.Mode), "(none)"), windowLabel(t.Window, t.Load), string(t.Metric), charts.FormatValue(t.Avg), string(t.Unit),
			strings.Join(t.Nodes, ", "), strings.Join(t.Counted, ", ")})
		covered, notes = append(covered, t.Nodes), append(notes, t.Notes)
	}
	if len(rows) == 0 {
		return table{}, false
	}
	return table{ID: "study-a-" + slug(topo) + "-node-totals", Caption: "Whole-node totals: the test nodes' averages added up, each host counted once",
		Header:  []string{"mode", "window", "metric", "avg", "unit", "nodes", "counted"},
		Numeric: []bool{false, false, false, true, false, false, false}, Rows: rows, Notes: hostNotes(covered, notes, nodes)}, true
}

// hostNotes are the notes of a node totals table: the totals' own (which nodes share a host, once each), and, when a
// total adds up several nodes whose machine and boot IDs the run did not record, that they count as machines of
// their own.
func hostNotes(covered, totalNotes [][]string, nodes []results.NodeFacts) []string {
	ids := map[string]bool{}
	for _, n := range nodes {
		ids[n.Name] = n.MachineID != "" && n.BootID != ""
	}
	var notes, unknown []string
	for i := range covered {
		for _, n := range totalNotes[i] {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
		if len(covered[i]) < 2 {
			continue
		}
		for _, n := range covered[i] {
			if !ids[n] && !slices.Contains(unknown, n) {
				unknown = append(unknown, n)
			}
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		notes = append(notes, fmt.Sprintf("The run did not record the machine and boot IDs of %s (recorded before meshbench read them, or not reported): each is counted as a machine of its own; nodes on one host (a local cluster) would be counted once per node.",
			strings.Join(unknown, ", ")))
	}
	return notes
}
