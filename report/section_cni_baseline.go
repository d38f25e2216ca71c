package report

import "fmt"

// cniBaselineSection is the cni run's pod network table (and charts) inside a combined report.
func (r Report) cniBaselineSection() (section, bool) {
	if r.baseline == nil {
		return section{}, false
	}
	s, ok := r.baseline.cniSection()
	if !ok {
		return s, false
	}
	s.Title = "Pod network underneath (cni run " + r.baseline.Meta.RunID + ")"
	for i, b := range s.Blocks {
		if b.Chart != nil { // the mesh run may have network charts of its own: keep the files apart
			c := *b.Chart
			c.ID = "baseline-" + c.ID
			c.File = chartFile(c.ID)
			s.Blocks[i].Chart = &c
		}
	}
	blocks := []block{{Text: fmt.Sprintf("Measured by meshbench cni on the same cluster (run %s, started %s): the network every mode's traffic runs on.",
		r.baseline.Meta.RunID, fmtTime(r.baseline.Meta.Start))}}
	s.Blocks = append(blocks, s.Blocks...)
	return s, true
}
