package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
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
