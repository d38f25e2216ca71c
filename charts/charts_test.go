package charts

import (
	"bytes"
	"encoding/xml"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/goldenfile"

	"github.com/meshbench/meshbench/results"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// wellFormed parses the SVG as XML and returns the element names it contains.
func wellFormed(t *testing.T, b []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return counts
			}
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

func ci(lo, hi float64) *results.Interval { return &results.Interval{Low: lo, High: hi} }

func series(topo, mode, load, window, comp, metric, stat, unit, labels string, mean float64, c *results.Interval) results.Series {
	return results.Series{
		Key:  results.Key{Topology: topo, Mode: results.Mode(mode), Load: load, Window: window, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit), Labels: labels},
		N:    3,
		Mean: mean,
		CI:   c,
	}
}

func testSummary() results.Summary {
	var s []results.Series
	add := func(x results.Series) { s = append(s, x) }
	// Resource, load window: a component absent from a mode simply has no bar.
	add(series("single", "none", "1000", "load", "app", "cpu", "avg", "millicores", "", 410, ci(395, 425)))
	add(series("single", "sidecar", "1000", "load", "app", "cpu", "avg", "millicores", "", 420, ci(400, 440)))
	add(series("single", "sidecar", "1000", "load", "sidecar", "cpu", "avg", "millicores", "", 530, ci(505, 555)))
	add(series("single", "sidecar", "1000", "load", "istiod", "cpu", "avg", "millicores", "", 12, ci(10, 14)))
	add(series("single", "ambient", "1000", "load", "app", "cpu", "avg", "millicores", "", 415, ci(401, 429)))
	add(series("single", "ambient", "1000", "load", "ztunnel", "cpu", "avg", "millicores", "", 160, ci(150, 170)))
	add(series("single", "ambient", "1000", "load", "istiod", "cpu", "avg", "millicores", "", 9, nil))
	add(series("single", "sidecar", "1000", "load", "mesh", "cpu", "avg", "millicores", "", 542, ci(515, 569)))
	add(series("single", "ambient", "1000", "load", "mesh", "cpu", "avg", "millicores", "", 169, ci(160, 178)))
	add(series("single", "sidecar", "", "idle", "sidecar", "memory", "avg", "MiB", "", 480, ci(470, 490)))
	add(series("single", "ambient", "", "idle", "ztunnel", "memory", "avg", "MiB", "", 38, ci(36, 40)))
	add(series("single", "sidecar", "1000", "load", "loadgen", "cpu", "avg", "millicores", "", 900, nil)) // not drawn
	for _, p := range []struct {
		stat string
		none float64
		sc   float64
	}{{"p50", 1.1, 2.3}, {"p90", 2.0, 3.9}, {"p99", 4.2, 8.8}, {"p99.9", 9.5, 21}} {
		add(series("single", "none", "1000", "load", "loadgen", "latency", p.stat, "ms", "", p.none, ci(p.none*0.9, p.none*1.1)))
		add(series("single", "sidecar", "1000", "load", "loadgen", "latency", p.stat, "ms", "", p.sc, ci(p.sc*0.9, p.sc*1.1)))
	}
	add(series("", "", "", "test", "cni-test", "throughput", "value", "Gbit/s", "path=host,test=tcp", 9.41, ci(9.3, 9.5)))
	add(series("", "", "", "test", "cni-test", "throughput", "value", "Gbit/s", "path=same-node,test=tcp", 9.2, ci(9.0, 9.4)))
	add(series("", "", "", "test", "cni-test", "throughput", "value", "Mbit/s", "path=cross-node,test=tcp", 8700, ci(8500, 8900)))
	add(series("", "", "", "test", "cni-test", "throughput", "value", "Gbit/s", "path=service,test=tcp", 6.1, ci(5.8, 6.4)))
	add(series("", "", "", "test", "cni-test", "rr", "value", "tps", "path=host,test=rr", 24000, ci(23500, 24500)))
	add(series("", "", "", "test", "cni-test", "rr", "value", "tps", "path=same-node,test=rr", 21500, ci(21000, 22000)))
	return results.Summary{Confidence: 0.95, Series: s}
}

func TestResourceCharts(t *testing.T) {
	t.Parallel()
	s := testSummary()
	sels := ResourceSelections(s)
	want := []ResourceSelection{
		{Topology: "single", Window: "idle", Metric: "cpu"}, {Topology: "single", Window: "idle", Metric: "memory"},
		{Topology: "single", Load: "1000", Window: "load", Metric: "cpu"}, {Topology: "single", Load: "1000", Window: "load", Metric: "memory"},
	}
	if len(sels) != len(want) {
		t.Fatalf("selections = %+v, want %+v", sels, want)
	}
	for i := range want {
		if sels[i] != want[i] {
			t.Errorf("selection %d = %+v, want %+v", i, sels[i], want[i])
		}
	}
	c := ResourceChart(s, ResourceSelection{Topology: "single", Load: "1000", Window: "load", Metric: "cpu"})
	if got, want := strings.Join(c.Groups, ","), "app,sidecar,ztunnel,istiod,mesh"; got != want {
		t.Errorf("groups = %s, want %s (loadgen excluded, canonical order)", got, want)
	}
	if got, want := strings.Join(c.Series, ","), "none,sidecar,ambient"; got != want {
		t.Errorf("series = %s, want %s", got, want)
	}
	b := c.SVG()
	n := wellFormed(t, b)
	if n["rect"] < 1+3+len(c.Bars) || n["title"] < 1+len(c.Bars) {
		t.Errorf("expected a background, legend swatches and one rect and title per bar, got %v", n)
	}
	if !bytes.Equal(b, c.SVG()) {
		t.Error("two renders differ")
	}
	if len(b) > 16<<10 {
		t.Errorf("chart is %d bytes; expected a few KB", len(b))
	}
	golden(t, "resource-cpu-load.svg", b)
}

func TestLatencyChart(t *testing.T) {
	t.Parallel()
	s := testSummary()
	sels := LatencySelections(s)
	if len(sels) != 1 || sels[0] != (LatencySelection{Topology: "single", Load: "1000"}) {
		t.Fatalf("latency selections = %+v", sels)
	}
	c := LatencyChart(s, sels[0])
	if got, want := strings.Join(c.Groups, ","), "p50,p90,p99,p99.9"; got != want {
		t.Errorf("groups = %s, want %s", got, want)
	}
	b := c.SVG()
	wellFormed(t, b)
	golden(t, "latency.svg", b)

	// With the response time in the summary the chart shows it, as the report's tables do, and says so.
	for _, se := range slices.Clone(s.Series) {
		if se.Metric == results.MetricLatency && se.Stat == results.StatP99 {
			se.Metric, se.Mean = results.MetricResponseTime, se.Mean*3
			s.Series = append(s.Series, se)
		}
	}
	rc := LatencyChart(s, sels[0])
	if len(rc.Bars) == 0 || !strings.HasPrefix(rc.Title, "Response time") || !strings.Contains(rc.Subtitle, "from when each request was due") {
		t.Fatalf("response-time chart %q / %q, %d bars", rc.Title, rc.Subtitle, len(rc.Bars))
	}
	if got := strings.Join(rc.Groups, ","); got != "p99" {
		t.Errorf("response-time groups = %s, want p99 (the service time's are not mixed in)", got)
	}
}

func TestCNIChart(t *testing.T) {
	t.Parallel()
	s := testSummary()
	sels := CNISelections(s)
	if len(sels) != 2 || sels[0] != (CNISelection{Metric: "throughput", Test: "tcp"}) || sels[1] != (CNISelection{Metric: "rr", Test: "rr"}) {
		t.Fatalf("cni selections = %+v", sels)
	}
	c := CNIChart(s, sels[0], nil)
	if c.Baseline == nil || c.Baseline.Value != 9.41 {
		t.Fatalf("baseline = %+v, want host 9.41", c.Baseline)
	}
	if len(c.Bars) != 3 || c.Bars[1].Label != "cross-node" || math.Abs(c.Bars[1].Value-8.7) > 1e-9 {
		t.Fatalf("bars = %+v, want same-node, cross-node (8700 Mbit/s converted to 8.7 Gbit/s), service", c.Bars)
	}
	b := c.SVG()
	wellFormed(t, b)
	for _, band := range []string{`data-band="green"`, `data-band="yellow"`, `data-band="red"`} {
		if !bytes.Contains(b, []byte(band)) {
			t.Errorf("missing %s", band)
		}
	}
	golden(t, "cni-tcp.svg", b)

	rr := CNIChart(s, sels[1], map[string]string{"cross-node": "case cni-rr-cross-node failed: netserver not ready after 60s", "same-node": "unused"})
	if len(rr.Bars) != 2 || rr.Bars[1].Missing == "" {
		t.Fatalf("rr bars = %+v, want same-node measured and cross-node missing with its reason", rr.Bars)
	}
	rb := rr.SVG()
	wellFormed(t, rb)
	if !bytes.Contains(rb, []byte("netserver not ready")) {
		t.Error("missing reason not drawn")
	}
	long := CNIChart(s, sels[1], map[string]string{"cross-node": strings.Repeat("a very long reason ", 20)}).SVG()
	if !bytes.Contains(long, []byte("…</text>")) || !bytes.Contains(long, []byte(strings.Repeat("a very long reason ", 20))) {
		t.Error("a long reason must be cut in the drawing and kept whole in the tooltip")
	}
	golden(t, "cni-rr-missing.svg", rb)
}

func TestBandFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, base float64
		want        string
		ok          bool
	}{
		{9500, 10000, "green", true},
		{9499.9, 10000, "yellow", true},
		{9000, 10000, "yellow", true},
		{8999, 10000, "orange", true},
		{8000, 10000, "orange", true},
		{7999, 10000, "red", true},
		{12000, 10000, "green", true},
		{0, 10000, "red", true},
		{5, 0, "", false},
	}
	for _, tt := range tests {
		b, _, ok := BandFor(tt.value, tt.base)
		if ok != tt.ok || b.Name != tt.want {
			t.Errorf("BandFor(%v, %v) = %q %v, want %q %v", tt.value, tt.base, b.Name, ok, tt.want, tt.ok)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		max  float64
		want string
	}{
		{0, "0 1"},
		{1, "0 0.2 0.4 0.6 0.8 1"},
		{569, "0 100 200 300 400 500 600"},
		{9.5, "0 2 4 6 8 10"},
		{0.3, "0 0.05 0.1 0.15 0.2 0.25 0.3"},
		{24500, "0 5000 10000 15000 20000 25000"},
	}
	for _, tt := range tests {
		var parts []string
		for _, v := range niceTicks(tt.max, 5) {
			parts = append(parts, tickLabel(v))
		}
		if got := strings.Join(parts, " "); got != tt.want {
			t.Errorf("niceTicks(%v) = %s, want %s", tt.max, got, tt.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	t.Parallel()
	tests := map[float64]string{0: "0", 1234.56: "1235", 123.45: "123.5", 12.345: "12.35", 1.5: "1.50", 0.0123: "0.012", 0.00012: "0.00012", -3.2: "-3.20"}
	for in, want := range tests {
		if got := FormatValue(in); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestEscaping(t *testing.T) {
	t.Parallel()
	c := BarChart{ID: "x", Title: `a<b & "c"`, YLabel: "y", Groups: []string{"<g>"}, Series: []string{"s&"},
		Bars: []Bar{{Group: "<g>", Series: "s&", Value: 1}}}
	b := c.SVG()
	wellFormed(t, b)
	if bytes.Contains(b, []byte("<g>")) && !bytes.Contains(b, []byte("&lt;g&gt;")) {
		t.Error("group name not escaped")
	}
}

// A chart copied out of its report keeps what its figures are not: every chart of modes whose data-plane
// component is not Istio's own says so under the plot and in its description, per component.
func TestChartsCarryDataPlaneCaveats(t *testing.T) {
	t.Parallel()
	s := testSummary()
	s.DataPlane = results.DataPlaneStandIn
	s.DataPlanes = []results.ComponentDataPlane{
		{Component: results.ComponentSidecar, Kind: results.DataPlaneUpstreamEnvoy, Description: "upstream Envoy 1.40.0 (pilot-agent 1.31-dev; Istio telemetry filters off)"},
		{Component: results.ComponentZtunnel, Kind: results.DataPlaneStandIn, Description: "test stand-in (hack/localistio/cmd/hbone-node)"},
		{Component: results.ComponentWaypoint, Kind: results.DataPlaneIstio, Description: "Istio's proxy (Envoy) as waypoint"},
	}
	sidecar := "data plane: sidecar is upstream Envoy 1.40.0 (pilot-agent 1.31-dev; Istio telemetry filters off): a lower bound of Istio's own sidecar cost, not Istio's figure"
	ztunnel := "data plane: ztunnel is a test stand-in (hack/localistio/cmd/hbone-node): its figures are not ztunnel's"
	for _, c := range []BarChart{
		ResourceChart(s, ResourceSelection{Topology: "single", Load: "1000", Window: "load", Metric: results.MetricCPU}),
		LatencyChart(s, LatencySelection{Topology: "single", Load: "1000"}),
	} {
		svg := string(c.SVG())
		wellFormed(t, c.SVG())
		var wants []string
		if slices.Contains(c.Series, "sidecar") {
			wants = append(wants, sidecar)
		}
		if slices.Contains(c.Series, "ambient") || slices.Contains(c.Series, "waypoint") {
			wants = append(wants, ztunnel)
		}
		if len(wants) == 0 || len(wants) != len(c.Caveats) {
			t.Errorf("%s (modes %v): caveats %q, want %q", c.ID, c.Series, c.Caveats, wants)
		}
		for _, want := range wants {
			if strings.Count(svg, esc(want)) != 2 { // drawn under the plot, and in <desc>
				t.Errorf("%s: caveat %q drawn %d times, want 2 (text and description)", c.ID, want, strings.Count(svg, esc(want)))
			}
		}
		if strings.Contains(svg, "waypoint is") {
			t.Errorf("%s: a caveat for Istio's own waypoint", c.ID)
		}
	}
	// Istio's own proxies: no caveat at all.
	s.DataPlane, s.DataPlanes = results.DataPlaneIstio, []results.ComponentDataPlane{{Component: results.ComponentSidecar, Kind: results.DataPlaneIstio}}
	if c := ResourceChart(s, ResourceSelection{Topology: "single", Load: "1000", Window: "load", Metric: results.MetricCPU}); len(c.Caveats) != 0 {
		t.Errorf("caveats on Istio's own data plane: %q", c.Caveats)
	}
}
