package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/results"
)

// chainFixtureDir is a fortio-chain run at chain depths 1, 2 and 4 (topologies single-d<depth>) x modes none,
// sidecar, ambient x 2 qps levels x 3 repetitions, written through the real results.Store by writeChainFixture
// (go test ./capacity -run TestChainFixture -update regenerates it). Its client latency is a known line in the
// depth per mode, level and percentile (chainLatency) with a few percent of noise, so BuildHops can be checked
// against the truth; its costs are lines in the entry rate with every pod carrying the full rate (as in a chain),
// which the per-pod cost fits pool across the depths (the limitation Build warns of).
const chainFixtureDir = "../testdata/runs/chain-depth"

var (
	chainDepthsFixture = []int{1, 2, 4}
	chainLevels        = []int{250, 500}
	chainModes         = []string{"none", "sidecar", "ambient"}
)

// chainNoneHop is mode none's latency per hop (ms, p50) and chainAdded what sidecar and ambient add to it per
// level; chainBase is the latency of the entry alone per level; chainStatScale scales p50 to p90 and p99.
var (
	chainNoneHop   = 0.30
	chainBase      = map[int]float64{250: 1.00, 500: 1.10}
	chainAdded     = map[string]map[int]float64{"none": {250: 0, 500: 0}, "sidecar": {250: 0.45, 500: 0.50}, "ambient": {250: 0.12, 500: 0.15}}
	chainStatScale = map[string]float64{"p50": 1, "p90": 1.8, "p99": 3.5}
)

// chainLatency is the true latency of mode at level, percentile and depth (ms).
func chainLatency(mode string, level int, stat string, depth float64) float64 {
	return chainStatScale[stat] * (chainBase[level] + (chainNoneHop+chainAdded[mode][level])*depth)
}

func writeChainFixture(dir string) error {
	start := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC) // before the other fixtures of 12-01: report.LatestRun's test expects aa-2 and regression latest
	nodes := make([]results.NodeFacts, 3)
	for i := range nodes {
		nodes[i] = results.NodeFacts{Name: fmt.Sprintf("node-%d", i+1), CPU: "4", Memory: "16Gi", KubeletVersion: "v1.37.2"}
	}
	var topos []map[string]any
	for _, d := range chainDepthsFixture {
		topos = append(topos, map[string]any{"kind": "single", "chainDepth": d})
	}
	spec, _ := json.Marshal(map[string]any{"apiVersion": "meshbench.dev/v1alpha1", "kind": "Scenario",
		"metadata": map[string]any{"name": "chain-depth"},
		"spec": map[string]any{"workload": map[string]any{"app": "fortio-chain", "chain": map[string]any{"depth": 2, "fanOut": 1}, "topologies": topos},
			"modes": chainModes, "load": map[string]any{"qps": chainLevels, "connections": 4},
			"windows": map[string]any{"idle": "1m0s", "load": "3m0s", "repetitions": 3}}})
	meta := results.RunMeta{RunID: "20261201-010000-chain", Command: "run", Start: start, Scenario: spec,
		Tool: results.ToolInfo{Version: "v0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8"},
		Cluster: results.ClusterFacts{KubernetesVersion: "v1.37.2", Nodes: nodes,
			Istio: &results.IstioFacts{Version: "1.28.1", AmbientCapable: true, DataPlane: results.DataPlaneIstio}},
		Prometheus: &results.PromFacts{Source: "prometheus", ScrapeInterval: 5 * time.Second, RateRange: 20 * time.Second}}
	st, err := results.Create(dir, meta)
	if err != nil {
		return err
	}
	var all []results.Sample
	var cases []results.CaseResult
	clock := start.Add(10 * time.Second)
	for _, depth := range chainDepthsFixture {
		topo := fmt.Sprintf("single-d%d", depth)
		pods := depth + 1
		for rep := 1; rep <= 3; rep++ {
			for _, mode := range chainModes {
				for _, q := range chainLevels {
					id := fmt.Sprintf("%s.%s.q%d.r%d", topo, mode, q, rep)
					load := results.Window{Kind: results.WindowLoad, Start: clock.Add(30 * time.Second), End: clock.Add(210 * time.Second)}
					c := results.CaseResult{CaseID: id, Mode: results.Mode(mode), Topology: topo, Load: strconv.Itoa(q), Repetition: rep,
						Status: results.StatusOK, Start: clock, End: load.End.Add(5 * time.Second), Windows: []results.Window{load},
						Facts: map[results.FactKey]string{"app-pods": strconv.Itoa(pods), results.FactChainDepth: strconv.Itoa(depth),
							"namespaces": "mb-" + topo, "waypoints": "0"}}
					achieved := math.Round(float64(q)*(1-0.002*math.Abs(gauss(id+"/qps")))*10) / 10
					krps := achieved / 1000
					var samples []results.Sample
					add := func(source, comp, metric, stat, unit string, v float64) {
						samples = append(samples, results.Sample{CaseID: id, Mode: results.Mode(mode), Topology: topo, Load: c.Load, Repetition: rep,
							Window: load, Source: source, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit), Value: v})
					}
					// Costs: every pod of a chain serves the full entry rate.
					comps := map[string][]string{"none": {"app"}, "sidecar": {"app", "sidecar", "istiod"}, "ambient": {"app", "ztunnel", "istiod"}}[mode]
					for _, comp := range comps {
						t := fixtureTruth[comp]
						units := map[string]float64{"app": float64(pods), "sidecar": float64(pods), "ztunnel": 3, "istiod": 1}[comp]
						cpu, mem := units*(t.cpuA+t.cpuB*krps), units*(t.memA+t.memB*krps)
						if comp == "ztunnel" { // a hop's two ends on some node: the rate crosses ztunnel once per hop
							cpu, mem = units*t.cpuA+t.cpuB*krps*float64(depth), units*t.memA+t.memB*krps*float64(depth)
						}
						if comp == "istiod" {
							cpu, mem = t.cpuA, t.memA
						}
						add("prometheus", comp, "cpu", "avg", "millicores", round4(cpu*(1+0.03*gauss(id+"/"+comp+"/cpu"))))
						add("prometheus", comp, "memory", "avg", "MiB", round4(mem*(1+0.01*gauss(id+"/"+comp+"/mem"))))
					}
					add("fortio", string(results.ComponentLoadgen), "qps", "value", "rps", achieved)
					for _, stat := range hopStats {
						// Noise of one size at every depth (4 % of the depth-2 value): the line's assumption.
						sd := 0.04 * chainLatency(mode, q, string(stat), 2)
						add("fortio", string(results.ComponentLoadgen), "latency", string(stat), "ms", round4(chainLatency(mode, q, string(stat), float64(depth))+sd*gauss(id+"/latency/"+string(stat))))
					}
					if err := st.AppendCase(c, samples); err != nil {
						return err
					}
					all, cases = append(all, samples...), append(cases, c)
					clock = c.End.Add(5 * time.Second)
				}
			}
		}
	}
	end := clock
	meta.End = &end
	if err := st.UpdateMeta(meta); err != nil {
		return err
	}
	if err := st.WriteSummary(results.Summarize(meta, all, cases, results.SummaryOptions{})); err != nil {
		return err
	}
	return st.Close()
}

// TestChainFixture regenerates the chain-depth fixture run and fails when the committed files differ.
func TestChainFixture(t *testing.T) {
	if goldenfile.Update() {
		if err := os.RemoveAll(chainFixtureDir); err != nil {
			t.Fatal(err)
		}
		if err := writeChainFixture(chainFixtureDir); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "chain-depth")
	if err := writeChainFixture(dir); err != nil {
		t.Fatal(err)
	}
	checkRegenerated(t, dir, chainFixtureDir, "TestChainFixture", results.RunFile, results.SamplesFile, results.CasesFile, results.SummaryFile)
}

func chainModel(t *testing.T) *Model {
	t.Helper()
	run, err := results.Read(chainFixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProjectChainDepthGolden(t *testing.T) {
	p := Project(chainModel(t), goldenShape())
	goldenfile.Check(t, "testdata/project-chain-depth.txt", []byte(Text(p)))
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/project-chain-depth.json", append(b, '\n'))
}

// TestHopsRecoverTruth: on the fixture the generator's true per-hop slopes (3 modes x 2 levels x p50, p90, p99) and
// added latencies per hop (sidecar, ambient x 2 levels x 3 percentiles) are recovered: every one inside its 99 %
// interval (rebuilt from the 95 % one at the same degrees of freedom), and no more of the 30 outside its 95 %
// interval than such intervals miss by design (1.5 expected; this fixture's noise has one, ambient 500 p90).
func TestHopsRecoverTruth(t *testing.T) {
	t.Parallel()
	m := chainModel(t)
	h := m.Hops
	if h == nil {
		t.Fatal("no hops on a run of 3 chain depths")
	}
	if fmt.Sprint(h.Depths) != "[1 2 4]" || len(h.Fits) != 3*2*3 || len(h.Added) != 2*2*3 {
		t.Fatalf("depths %v, %d fits, %d added; want [1 2 4], 18, 12", h.Depths, len(h.Fits), len(h.Added))
	}
	misses := 0
	check := func(what string, want, value float64, ci *results.Interval, df float64) {
		t.Helper()
		if ci == nil {
			t.Errorf("%s: no interval", what)
			return
		}
		t95 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
		t99 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.995)
		half99 := (ci.High - ci.Low) / 2 / t95 * t99
		if math.Abs(value-want) > half99 {
			t.Errorf("%s: %.4g %v, truth %.4g outside the 99 %% interval ±%.4g", what, value, *ci, want, half99)
		}
		if want < ci.Low || want > ci.High {
			misses++
			t.Logf("%s: truth %.4g outside the 95 %% interval [%.4g, %.4g]", what, want, ci.Low, ci.High)
		}
	}
	for _, f := range h.Fits {
		q, _ := strconv.Atoi(f.Load)
		if f.Slope == nil || f.N != 9 {
			t.Errorf("%s %s %s: slope %v over %d points, want one over 9", f.Mode, f.Load, f.Stat, f.Slope, f.N)
			continue
		}
		check(f.Mode+" "+f.Load+" "+f.Stat+" slope", chainStatScale[f.Stat]*(chainNoneHop+chainAdded[f.Mode][q]), f.Slope.Value, f.Slope.CI, f.df)
	}
	for _, a := range h.Added {
		q, _ := strconv.Atoi(a.Load)
		what := a.Mode + " " + a.Load + " " + a.Stat + " added per hop"
		if a.Value == nil || a.Reason != "" {
			t.Errorf("%s: no value (%s)", what, a.Reason)
			continue
		}
		check(what, chainStatScale[a.Stat]*chainAdded[a.Mode][q], *a.Value, a.CI, a.DF)
		// Welch-Satterthwaite: between one fit's df (7 = 9 points - 2) and their sum (14).
		if a.DF < 7 || a.DF > 14 {
			t.Errorf("%s: df %.2f outside [7, 14]", what, a.DF)
		}
	}
	if misses > 2 {
		t.Errorf("%d of 30 truths outside their 95 %% interval; about 1.5 expected", misses)
	}
	if !slices.ContainsFunc(m.Warnings, func(w Warning) bool {
		return w.Code == WarnPooledDepths && strings.HasPrefix(w.Message, "the run measured chain depths 1, 2, 4: the cost fits pool")
	}) {
		t.Errorf("no warning that the cost fits pool the depths: %q", m.Warnings)
	}
}
