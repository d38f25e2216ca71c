package export

import (
	"fmt"
	"io"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/meshbench/meshbench/report"
)

// Labels every exported series carries, so that many runs backfilled into one Prometheus stay apart and each figure
// can be found by its run.
const (
	LabelRunID    = "run_id"
	LabelScenario = "scenario"
)

// OpenMetrics writes the gauges of every report (Registry) as one OpenMetrics exposition: each series labelled with
// its run's ID and scenario and stamped with the run's end (its start when it did not finish), families merged
// across runs, ending in "# EOF". That is the input of `promtool tsdb create-blocks-from openmetrics`, which turns it
// into TSDB blocks a Prometheus loads: history of runs in the team's own Prometheus. Two reports of one run are
// refused (their series would collide).
func OpenMetrics(w io.Writer, reps ...report.Report) error {
	fams, err := merged(reps)
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("write %s: %w", mf.GetName(), err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil { // writes "# EOF"
			return fmt.Errorf("write the end of the exposition: %w", err)
		}
	}
	return nil
}

// merged gathers each report's families, labels and stamps their series, and merges them by name, sorted. It is
// pure.
func merged(reps []report.Report) ([]*dto.MetricFamily, error) {
	byName := map[string]*dto.MetricFamily{}
	seen := map[string]bool{}
	for _, r := range reps {
		id := r.Meta.RunID
		if id == "" {
			return nil, fmt.Errorf("a run without an ID (run.json runId) cannot be told apart from others")
		}
		if seen[id] {
			return nil, fmt.Errorf("run %s given twice: its series would collide", id)
		}
		seen[id] = true
		fams, err := Registry(r).Gather()
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		at := r.Meta.Start
		if r.Meta.End != nil {
			at = *r.Meta.End
		}
		ms := at.UnixMilli()
		for _, mf := range fams {
			for _, m := range mf.Metric {
				m.Label = withLabel(m.Label, LabelRunID, id)
				m.Label = withLabel(m.Label, LabelScenario, r.ScenarioName())
				m.TimestampMs = proto.Int64(ms)
			}
			if cur, ok := byName[mf.GetName()]; ok {
				cur.Metric = append(cur.Metric, mf.Metric...)
			} else {
				byName[mf.GetName()] = mf
			}
		}
	}
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		out = append(out, mf)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// withLabel is ls with name=value, unless ls already has name (run_info carries the run's ID itself), sorted by name
// as the exposition wants them.
func withLabel(ls []*dto.LabelPair, name, value string) []*dto.LabelPair {
	if slices.ContainsFunc(ls, func(l *dto.LabelPair) bool { return l.GetName() == name }) {
		return ls
	}
	ls = append(ls, &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)})
	slices.SortFunc(ls, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return ls
}
