package compare

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

func readRun(t *testing.T, name string) *results.Run {
	t.Helper()
	run, err := results.Read(filepath.Join("..", "testdata", "runs", name))
	if err != nil {
		t.Fatalf("read fixture %s (go test ./report -run TestFixtures -update generates it): %v", name, err)
	}
	return run
}

func mustGates(t *testing.T, exprs ...string) []Gate {
	t.Helper()
	var gs []Gate
	for _, e := range exprs {
		g, err := ParseGate(e)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	return gs
}

// TestAA: two runs of the same scenario differ only by noise: every row is "not significant", no gate fails.
func TestAA(t *testing.T) {
	t.Parallel()
	res := Runs(readRun(t, "aa-1"), readRun(t, "aa-2"), 0.95)
	if len(res.Rows) < 100 {
		t.Fatalf("only %d rows compared", len(res.Rows))
	}
	if len(res.OnlyBase)+len(res.OnlyNew) != 0 {
		t.Errorf("keys in one run only: %v %v", res.OnlyBase, res.OnlyNew)
	}
	for _, r := range res.Rows {
		if r.Verdict != verdictNotSignificant {
			t.Errorf("%s: verdict %s (diff %v, CI %+v), want not significant", describeKey(r.Key), r.Verdict, r.Diff, r.DiffCI)
		}
	}
	outcomes, err := Evaluate(res, mustGates(t, "cpu.sidecar > +10%", "memory.mesh.load > +5%", "latency.p99.ambient > +1ms",
		"qps.none < -5%", "throughput.cross-node < -10%"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Violations(outcomes); err != nil {
		t.Errorf("A/A comparison failed a gate: %v", err)
	}
	for _, o := range outcomes {
		if o.Matched == 0 {
			t.Errorf("gate %s matched nothing", o.Expr)
		}
	}
	if !strings.Contains(strings.Join(res.Context, "\n"), "test stand-in") {
		t.Errorf("context does not mention the stand-in data plane: %q", res.Context)
	}
}

// TestRegression: sidecar CPU +25 % is significant, worse, and fails the gate with a GateError naming the metric.
func TestRegression(t *testing.T) {
	t.Parallel()
	res := Runs(readRun(t, "aa-1"), readRun(t, "regression"), 0.95)
	worse := 0
	for _, r := range res.Rows {
		sidecarCPU := r.Metric == "cpu" && (r.Component == "sidecar" || (r.Component == "mesh" && r.Mode == "sidecar"))
		switch {
		case sidecarCPU && r.Stat == "avg":
			if r.Verdict != verdictWorse || r.Percent == nil || *r.Percent < 20 || *r.Percent > 30 {
				t.Errorf("%s: verdict %s percent %v, want worse by about 25 %%", describeKey(r.Key), r.Verdict, r.Percent)
			}
			worse++
		case !sidecarCPU && r.Verdict != verdictNotSignificant && r.Component != "mesh":
			t.Errorf("%s: verdict %s, want not significant (unchanged)", describeKey(r.Key), r.Verdict)
		}
	}
	if worse == 0 {
		t.Fatal("no sidecar CPU rows")
	}
	outcomes, err := Evaluate(res, mustGates(t, "cpu.sidecar > +10%", "memory.sidecar > +10%", "cpu.sidecar > +30%"))
	if err != nil {
		t.Fatal(err)
	}
	gerr := Violations(outcomes)
	var ge *gateError
	if !errors.As(gerr, &ge) || !ge.GateFailed() {
		t.Fatalf("Violations = %v, want a *GateError", gerr)
	}
	msg := ge.Error()
	for _, want := range []string{"cpu.sidecar > +10%", "cpu avg of sidecar", "mode sidecar", "window load", "window idle"} {
		if !strings.Contains(msg, want) {
			t.Errorf("gate error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "memory.sidecar") || strings.Contains(msg, "+30%") {
		t.Errorf("gates that hold are named in the error:\n%s", msg)
	}
	if len(outcomes[1].Violations) != 0 || len(outcomes[2].Violations) != 0 {
		t.Errorf("memory gate or +30%% gate failed: %+v %+v", outcomes[1].Violations, outcomes[2].Violations)
	}
	table := Table(res, outcomes, true)
	if !strings.Contains(table, "FAIL") || !strings.Contains(table, "worse") {
		t.Errorf("table lacks the failure:\n%s", table)
	}
}

func TestEvaluateUnmatched(t *testing.T) {
	t.Parallel()
	res := Runs(readRun(t, "aa-1"), readRun(t, "regression"), 0.95)
	_, err := Evaluate(res, mustGates(t, "cpu.sidecr > +10%", "latency.p99.ambient > +1MiB"))
	if err == nil || !strings.Contains(err.Error(), "sidecr") || !strings.Contains(err.Error(), "convertible") {
		t.Errorf("Evaluate error = %v, want both gates reported", err)
	}
}

// TestGateSemantics pins the rule "significant AND crosses the threshold" on synthetic summaries.
func TestGateSemantics(t *testing.T) {
	t.Parallel()
	key := results.Key{Topology: "t", Mode: "ambient", Load: "1000", Window: "load", Component: "loadgen", Metric: "latency", Stat: "p99", Unit: "ms"}
	summary := func(vals ...float64) results.Summary {
		mean := 0.0
		for _, v := range vals {
			mean += v
		}
		mean /= float64(len(vals))
		return results.Summary{Series: []results.Series{{Key: key, N: len(vals), Mean: mean, Values: vals}}}
	}
	tests := []struct {
		name      string
		base, new []float64
		gate      string
		fail      bool
	}{
		{"significant and above", []float64{10, 10.1, 9.9}, []float64{12, 12.1, 11.9}, "latency.p99.ambient > +1ms", true},
		{"significant but below threshold", []float64{10, 10.1, 9.9}, []float64{10.5, 10.6, 10.4}, "latency.p99.ambient > +1ms", false},
		{"above threshold but noisy", []float64{10, 14, 6}, []float64{12, 16, 8}, "latency.p99.ambient > +1ms", false},
		{"unit converted", []float64{10, 10.1, 9.9}, []float64{12, 12.1, 11.9}, "latency.p99.ambient > +1500us", true},
		{"percent", []float64{10, 10.1, 9.9}, []float64{12, 12.1, 11.9}, "latency.p99.ambient >= +20%", true},
		{"percent not reached", []float64{10, 10.1, 9.9}, []float64{12, 12.1, 11.9}, "latency.p99.ambient > +25%", false},
		{"drop gate on a rise", []float64{10, 10.1, 9.9}, []float64{12, 12.1, 11.9}, "latency.p99.ambient < -5%", false},
		{"drop gate on a drop", []float64{10, 10.1, 9.9}, []float64{8, 8.1, 7.9}, "latency.p99.ambient < -5%", true},
		{"one repetition never fails", []float64{10}, []float64{20}, "latency.p99.ambient > +1ms", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := summaries(summary(tt.base...), summary(tt.new...), 0.95)
			out, err := Evaluate(res, mustGates(t, tt.gate))
			if err != nil {
				t.Fatal(err)
			}
			if got := Violations(out) != nil; got != tt.fail {
				t.Errorf("gate failed = %v, want %v (row %+v)", got, tt.fail, res.Rows[0])
			}
		})
	}
}

func TestVerdicts(t *testing.T) {
	t.Parallel()
	mk := func(metric string, base, next []float64) Verdict {
		k := results.Key{Window: "load", Component: "x", Metric: results.Metric(metric), Stat: "avg", Unit: "u"}
		res := summaries(results.Summary{Series: []results.Series{{Key: k, N: len(base), Mean: mean(base), Values: base}}},
			results.Summary{Series: []results.Series{{Key: k, N: len(next), Mean: mean(next), Values: next}}}, 0.95)
		return res.Rows[0].Verdict
	}
	lo, hi := []float64{10, 10.2, 9.8}, []float64{20, 20.2, 19.8}
	tests := []struct {
		metric    string
		base, new []float64
		want      Verdict
	}{
		{"cpu", lo, hi, verdictWorse}, {"cpu", hi, lo, verdictBetter}, {"latency", lo, hi, verdictWorse},
		{"qps", lo, hi, verdictBetter}, {"throughput", hi, lo, verdictWorse}, {"crr", lo, hi, verdictBetter},
		{"widgets", lo, hi, verdictChanged}, {"cpu", lo, []float64{10.1, 9.9, 10}, verdictNotSignificant}, {"cpu", []float64{1}, []float64{2}, verdictInsufficient},
		// Two repetitions give a (wide) interval that here excludes 0, but fewer than results.MinIntervalN on a side
		// is not judged.
		{"cpu", []float64{10, 10.1}, []float64{20, 20.1}, verdictInsufficient}, {"cpu", lo, []float64{20, 20.1}, verdictInsufficient},
	}
	for _, tt := range tests {
		if got := mk(tt.metric, tt.base, tt.new); got != tt.want {
			t.Errorf("%s %v -> %v: %s, want %s", tt.metric, tt.base, tt.new, got, tt.want)
		}
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestSummariesNeverInfinite: a base mean of 5e-324 gave a percentage of +Inf, and means near float64's limits (a
// hand-edited summary.json) a difference of -Inf: `compare -o json` then failed ("json: unsupported value: +Inf").
// Now the first has no percentage, the second is not compared and the context says so.
func TestSummariesNeverInfinite(t *testing.T) {
	t.Parallel()
	key := func(c string) results.Key {
		return results.Key{Mode: "sidecar", Window: results.WindowLoad, Component: results.Component(c), Metric: results.MetricCPU, Stat: "avg", Unit: "millicores"}
	}
	series := func(k results.Key, vs ...float64) results.Series {
		mean := 0.0
		for _, v := range vs {
			mean += v / float64(len(vs))
		}
		return results.Series{Key: k, N: len(vs), Mean: mean, Values: vs}
	}
	base := results.Summary{RunID: "b", Series: []results.Series{series(key("app"), 5e-324, 5e-324, 5e-324), series(key("sidecar"), 1e308, 1e308, 1e308)}}
	next := results.Summary{RunID: "n", Series: []results.Series{series(key("app"), 10, 11, 12), series(key("sidecar"), -1e308, -1e308, -1e308)}}
	res := summaries(base, next, 0)
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Component != "app" || res.Rows[0].Percent != nil {
		t.Errorf("rows %+v: want the app row without a percentage", res.Rows)
	}
	if c := strings.Join(res.Context, "\n"); !strings.Contains(c, "sidecar cpu avg load: not compared") {
		t.Errorf("context %q", c)
	}
}

// TestCheckComparable: a run with itself (or a copy of it) and a mesh run with a cni run are refused with the
// reason; two runs of a kind pass.
func TestCheckComparable(t *testing.T) {
	t.Parallel()
	aa1, aa2, cni := readRun(t, "aa-1"), readRun(t, "aa-2"), readRun(t, "cni-local")
	copyOfAA1 := *aa1
	copyOfAA1.Dir = "elsewhere/aa-1-copy"
	tests := []struct {
		name       string
		base, next *results.Run
		want       error
		text       string
	}{
		{"the same directory", aa1, aa1, errSameRun, "every difference is 0"},
		{"a copy of the run", aa1, &copyOfAA1, errSameRun, "both hold run 20261130-030000-aa1"},
		{"mesh with cni", aa1, cni, errDifferentKinds, "is a mesh (meshbench run) run and 20261128-020000-cni a pod network (meshbench cni) run"},
		{"cni with mesh", cni, aa2, errDifferentKinds, "share no measurement"},
		{"two mesh runs", aa1, aa2, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckComparable(tc.base, tc.next)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want it to say %q", err, tc.text)
			}
		})
	}
}
