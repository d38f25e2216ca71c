package report

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestCapacitySection: a run with three load levels gets the capacity planning section, its fits table and one
// chart per component and metric with every repetition as a point and one fitted line per mode; a run with one
// level (sample) gets none.
func TestCapacitySection(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "capacity"))
	md := rep.Markdown()
	golden(t, "capacity/report.md", md)
	if !bytes.Contains(md, []byte("## Capacity planning")) {
		t.Fatal("no capacity planning section")
	}
	charts := map[string][]byte{}
	for _, f := range rep.Files() {
		if strings.HasPrefix(f.Name, "charts/capacity-") {
			charts[f.Name] = f.Data
		}
	}
	for name, want := range map[string]struct{ circles, solid int }{
		"charts/capacity-app-cpu.svg":         {36, 4}, // 4 modes x 3 levels x 3 repetitions
		"charts/capacity-sidecar-memory.svg":  {9, 1},
		"charts/capacity-ztunnel-cpu.svg":     {18, 2}, // ambient and waypoint
		"charts/capacity-waypoint-memory.svg": {9, 1},
	} {
		svg, ok := charts[name]
		if !ok {
			t.Errorf("no %s (have %d capacity charts)", name, len(charts))
			continue
		}
		circles, lines := 0, 0
		d := xml.NewDecoder(bytes.NewReader(svg))
		for {
			tok, err := d.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("%s: not well-formed: %v", name, err)
				}
				break
			}
			if se, ok := tok.(xml.StartElement); ok {
				switch se.Name.Local {
				case "circle":
					circles++
				case "line":
					for _, a := range se.Attr {
						if a.Name.Local == "stroke-width" && a.Value == "2" {
							lines++
						}
					}
				}
			}
		}
		if circles != want.circles || lines != want.solid {
			t.Errorf("%s: %d points and %d fitted lines, want %d and %d", name, circles, lines, want.circles, want.solid)
		}
	}
	if bytes.Contains(Build(readRun(t, "sample")).Markdown(), []byte("Capacity planning")) {
		t.Error("a run with one load level has a capacity planning section")
	}
}

// TestCapacityHops: a run of several chain depths gets the "Added latency per hop" subsection with one row per mesh
// mode, load level and percentile; a run of one depth does not.
func TestCapacityHops(t *testing.T) {
	t.Parallel()
	md := Build(readRun(t, "chain-depth")).Markdown()
	golden(t, "chain-depth/report.md", md)
	i := bytes.Index(md, []byte("### Added latency per hop"))
	if i < 0 || !bytes.Contains(md[:i], []byte("## Capacity planning")) {
		t.Fatal("no Added latency per hop subsection in the capacity planning section")
	}
	rows := 0
	for _, line := range strings.Split(string(md[i:]), "\n") {
		if strings.HasPrefix(line, "| sidecar |") || strings.HasPrefix(line, "| ambient |") {
			rows++
		}
	}
	if rows != 2*2*3 {
		t.Errorf("%d rows of sidecar and ambient, want 12 (2 levels x p50, p90, p99)", rows)
	}
	// One load level: no cost slope, but the per-hop figures still have their subsection.
	one := readRun(t, "chain-depth")
	one.Cases = slices.DeleteFunc(one.Cases, func(c results.CaseResult) bool { return c.Load != "250" })
	one.Samples = slices.DeleteFunc(one.Samples, func(s results.Sample) bool { return s.Load != "250" })
	if md := Build(one).Markdown(); !bytes.Contains(md, []byte("### Added latency per hop")) || bytes.Contains(md, []byte("| 500 | p50 |")) {
		t.Error("a run of one load level and several depths: no per-hop subsection, or one with the dropped level")
	}
	if bytes.Contains(Build(readRun(t, "capacity")).Markdown(), []byte("Added latency per hop")) {
		t.Error("a run of one chain depth has the per-hop subsection")
	}
}
