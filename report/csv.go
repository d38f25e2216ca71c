package report

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/results"
)

// File is one output of the report.
type File struct {
	Name string // relative to the output directory, "/"-separated
	Data []byte
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

func ciCols(ci *results.Interval) []string {
	if ci == nil {
		return []string{"", ""}
	}
	return []string{num(ci.Low), num(ci.High)}
}

func writeCSV(rows [][]string) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.WriteAll(rows) // writing to a bytes.Buffer cannot fail
	return b.Bytes()
}

var keyHeader = []string{"topology", "mode", "load", "window", "component", "metric", "stat", "unit", "labels"}

func keyCols(k results.Key) []string {
	return []string{k.Topology, string(k.Mode), k.Load, k.Window, string(k.Component), string(k.Metric), string(k.Stat), string(k.Unit), k.Labels}
}

// seriesCSV has every Series, PerKRPS and Workloads series, one per line; values are the observations separated by ';'.
// Empty ci_low/ci_high mean fewer than 2 observations.
func (r Report) seriesCSV() []byte {
	rows := [][]string{append(append([]string{"table"}, keyHeader...), "n", "mean", "stddev", "min", "max", "ci_low", "ci_high", "values")}
	add := func(table string, ss []results.Series) {
		for _, s := range ss {
			vals := make([]string, len(s.Values))
			for i, v := range s.Values {
				vals[i] = num(v)
			}
			row := append([]string{table}, keyCols(s.Key)...)
			row = append(row, strconv.Itoa(s.N), num(s.Mean), num(s.StdDev), num(s.Min), num(s.Max))
			row = append(row, ciCols(s.CI)...)
			rows = append(rows, append(row, strings.Join(vals, ";")))
		}
	}
	add("series", r.Summary.Series)
	add("per_krps", r.Summary.PerKRPS)
	add("workloads", r.Summary.Workloads)
	return writeCSV(rows)
}

// deltasCSV has every Delta, PerKRPSDelta and WorkloadDelta. Empty percent columns mean a base mean of 0; empty CI columns fewer
// than 2 observations on a side.
func (r Report) deltasCSV() []byte {
	rows := [][]string{append(append([]string{"table", "base", "other"}, keyHeader...), "base_mean", "other_mean", "diff",
		"diff_ci_low", "diff_ci_high", "percent", "percent_ci_low", "percent_ci_high", "welch_df", "p_value", "significant")}
	add := func(table string, ds []results.Delta) {
		for _, d := range ds {
			row := append([]string{table, string(d.Base), string(d.Other)}, keyCols(d.Key)...)
			row = append(row, num(d.BaseMean), num(d.OtherMean), num(d.Diff))
			row = append(row, ciCols(d.DiffCI)...)
			row = append(row, optNum(d.Percent))
			row = append(row, ciCols(d.PercentCI)...)
			row = append(row, num(d.WelchDF), optNum(d.PValue), strconv.FormatBool(d.Significant))
			rows = append(rows, row)
		}
	}
	add("deltas", r.Summary.Deltas)
	add("per_krps", r.Summary.PerKRPSDeltas)
	add("workloads", r.Summary.WorkloadDeltas)
	return writeCSV(rows)
}

// casesCSV has the latest record of every case; reason is never empty for failed or skipped cases.
func (r Report) casesCSV() []byte {
	rows := [][]string{{"case", "status", "mode", "topology", "load", "repetition", "attempt", "start", "end", "reason"}}
	for _, c := range r.Cases {
		reason := c.Reason
		if c.Status != results.StatusOK && reason == "" {
			reason = "no reason recorded"
		}
		rows = append(rows, []string{c.CaseID, string(c.Status), string(c.Mode), c.Topology, c.Load, strconv.Itoa(c.Repetition), strconv.Itoa(c.Attempt),
			fmtTime(c.Start), fmtTime(c.End), reason})
	}
	return writeCSV(rows)
}
