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

// TestCapacityGaps reads capacity's synthetic run capacity-gaps (testdata/runs, written by capacity's TestSynthRuns:
// known truth, seed 29): a sidecar CPU sample whose value is null, a NaN last line, no ztunnel in mode waypoint, no
// ztunnel memory in mode ambient, sidecar's 1000 qps level achieving 60 %. The report names both bad lines and never
// averages the null as 0 (issue 29 §2.2); its capacity section says what the fits lack (§2.1, §2.3).
func TestCapacityGaps(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "capacity-gaps"))
	warnings := strings.Join(rep.warnings, "\n")
	for _, want := range []string{`case "single/sidecar/500/r2" sidecar cpu avg: "value" is null`, "ignored truncated or corrupt last line"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("report warnings lack %q:\n%s", want, warnings)
		}
	}
	// Truth: 10 pods x (5.5 + 850 x 0.05 krps per pod) = 480 millicores, 3 % noise; a null read as 0 would pull the
	// mean of the 3 repetitions to about 320.
	i := slices.IndexFunc(rep.Summary.Series, func(s results.Series) bool {
		return s.Mode == "sidecar" && s.Load == "500" && s.Window == results.WindowLoad && s.Component == results.ComponentSidecar &&
			s.Metric == results.MetricCPU && s.Stat == "avg"
	})
	if i < 0 {
		t.Fatal("no sidecar cpu series at sidecar/500")
	}
	if s := rep.Summary.Series[i]; s.N != 2 || s.Mean < 450 || s.Mean > 510 || slices.Contains(s.Values, 0) {
		t.Errorf("sidecar cpu at 500 qps: n %d mean %.1f values %v, want the 2 measured repetitions near 480", s.N, s.Mean, s.Values)
	}
	md := string(rep.Markdown())
	for _, want := range []string{"waypoint: no fit of ztunnel cpu, ztunnel memory", "ambient: no fit of ztunnel memory",
		"sidecar: load level 1000 achieved 600 rps"} {
		if !strings.Contains(md, want) {
			t.Errorf("capacity section lacks %q", want)
		}
	}
}
