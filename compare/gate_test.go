package compare

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

func TestParseGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Gate
		wantErr string
	}{
		{in: "cpu.sidecar > +10%", want: Gate{Metric: "cpu", Subject: "sidecar", Op: opGT, Threshold: 10, Relative: true}},
		{in: "memory.mesh.load > +5%", want: Gate{Metric: "memory", Subject: "mesh", Window: "load", Op: opGT, Threshold: 5, Relative: true}},
		{in: "latency.p99.ambient > +1ms", want: Gate{Metric: "latency", Stat: "p99", Subject: "ambient", Op: opGT, Threshold: 1, Unit: "ms"}},
		{in: "qps.none < -5%", want: Gate{Metric: "qps", Subject: "none", Op: opLT, Threshold: -5, Relative: true}},
		{in: "latency.p99.9.waypoint.load>=2.5ms", want: Gate{Metric: "latency", Stat: "p99.9", Subject: "waypoint", Window: "load", Op: opGE, Threshold: 2.5, Unit: "ms"}},
		{in: "  cpu.avg.ztunnel.idle <= -0.5 %  ", want: Gate{Metric: "cpu", Stat: "avg", Subject: "ztunnel", Window: "idle", Op: opLE, Threshold: -0.5, Relative: true}},
		{in: "throughput.cross-node < -10%", want: Gate{Metric: "throughput", Subject: "cross-node", Op: opLT, Threshold: -10, Relative: true}},
		{in: "throughput.service < -1Gbit/s", want: Gate{Metric: "throughput", Subject: "service", Op: opLT, Threshold: -1, Unit: "Gbit/s"}},
		{in: "memory.istiod > 20", want: Gate{Metric: "memory", Subject: "istiod", Op: opGT, Threshold: 20}},
		{in: "cpu.max.sidecar > -0%", want: Gate{Metric: "cpu", Stat: "max", Subject: "sidecar", Op: opGT, Threshold: 0, Relative: true}},
		{in: "error_rate.app > 1", want: Gate{Metric: "error_rate", Subject: "app", Op: opGT, Threshold: 1}},

		{in: "cpu.sidecar", wantErr: "no operator"},
		{in: "> 10%", wantErr: "missing selector"},
		{in: "cpu > 10%", wantErr: "at least <metric>.<component-or-mode>"},
		{in: "cpu.sidecar >", wantErr: "missing threshold"},
		{in: "cpu.sidecar > 10%%", wantErr: "unknown unit"},
		{in: "cpu.sidecar > abc", wantErr: "must start with a number"},
		{in: "cpu.sidecar > +", wantErr: "must start with a number"},
		{in: "cpu.sidecar > 1.2.3", wantErr: "is not a number"},
		{in: "cpu.sidecar > 10furlongs", wantErr: "unknown unit"},
		{in: "cpu.sidecar >> 10%", wantErr: "more than one operator"},
		{in: "cpu.sidecar => 10%", wantErr: "selector part"},
		{in: "cpu.sidecar.busy > 10%", wantErr: "not a window"},
		{in: "cpu.sidecar.load.x > 10%", wantErr: "unexpected"},
		{in: "latency.p99 > 1ms", wantErr: "is a stat"},
		{in: "p99.sidecar > 1", wantErr: "not a metric name"},
		{in: "cpu..sidecar > 1", wantErr: "selector part"},
		{in: "cpu.side car > 1", wantErr: "selector part"},
		{in: "9cpu.sidecar > 1", wantErr: "selector part"},
		{in: "cpu.sidecar = 1", wantErr: "no operator"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseGate(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseGate(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.in) {
					t.Errorf("error %q does not quote the expression", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGate(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseGate(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := ParseGate(got.String())
			if err != nil || again != got {
				t.Errorf("round trip through %q = %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestGateString(t *testing.T) {
	t.Parallel()
	g := Gate{Metric: "latency", Stat: "p99.9", Subject: "ambient", Window: "load", Op: opGE, Threshold: 1.5, Unit: "ms"}
	if got, want := g.String(), "latency.p99.9.ambient.load >= +1.5ms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestGateMatches(t *testing.T) {
	t.Parallel()
	key := func(mode, comp, metric, stat, window, labels string) results.Key {
		return results.Key{Topology: "single", Mode: results.Mode(mode), Load: "1000", Window: window, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: "x", Labels: labels}
	}
	tests := []struct {
		gate string
		key  results.Key
		want bool
	}{
		{"cpu.sidecar > 1%", key("ambient", "sidecar", "cpu", "avg", "load", ""), true},     // the component
		{"cpu.sidecar > 1%", key("sidecar", "app", "cpu", "avg", "idle", ""), true},         // the mode
		{"cpu.sidecar > 1%", key("ambient", "ztunnel", "cpu", "avg", "load", ""), false},    // neither
		{"cpu.sidecar > 1%", key("sidecar", "sidecar", "cpu", "max", "load", ""), false},    // default stat is avg/value
		{"cpu.sidecar > 1%", key("sidecar", "sidecar", "memory", "avg", "load", ""), false}, // metric
		{"cpu.max.sidecar > 1%", key("sidecar", "sidecar", "cpu", "max", "load", ""), true},
		{"cpu.sidecar.idle > 1%", key("sidecar", "sidecar", "cpu", "avg", "load", ""), false},
		{"latency.p99.9.none > 1ms", key("none", "loadgen", "latency", "p99.9", "load", ""), true},
		{"throughput.cross-node < -1%", key("", "cni-test", "throughput", "value", "test", "path=cross-node,test=tcp"), true},
		{"throughput.same-node < -1%", key("", "cni-test", "throughput", "value", "test", "path=cross-node,test=tcp"), false},
	}
	for _, tt := range tests {
		g, err := ParseGate(tt.gate)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Matches(tt.key); got != tt.want {
			t.Errorf("%s matches %+v = %v, want %v", tt.gate, tt.key, got, tt.want)
		}
	}
}

func TestConvertUnit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to string
		want     float64
		ok       bool
	}{
		{"ms", "ms", 1, true},
		{"s", "ms", 1000, true},
		{"us", "ms", 0.001, true},
		{"GiB", "MiB", 1024, true},
		{"millicores", "cores", 0.001, true},
		{"Mbit/s", "Gbit/s", 0.001, true},
		{"ms", "MiB", 0, false},
		{"rps", "tps", 0, false},
	}
	for _, tt := range tests {
		got, ok := convertUnit(tt.from, tt.to)
		if ok != tt.ok || (ok && (got-tt.want)/tt.want > 1e-12) {
			t.Errorf("convertUnit(%s, %s) = %v %v, want %v %v", tt.from, tt.to, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseGate(f *testing.F) {
	for _, s := range []string{"cpu.sidecar > +10%", "memory.mesh.load > +5%", "latency.p99.ambient > +1ms", "qps.none < -5%",
		"latency.p99.9.waypoint.load>=2.5ms", "throughput.service < -1Gbit/s", "a.b<=0", "cpu.x > 1e5", ">", ".", "p99.9.9 > 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGate(s)
		if err != nil {
			return
		}
		again, err := ParseGate(g.String())
		if err != nil {
			t.Fatalf("ParseGate(%q) = %+v, but its String %q does not parse: %v", s, g, g.String(), err)
		}
		if again != g {
			t.Fatalf("round trip of %q: %+v != %+v", s, again, g)
		}
	})
}
