package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/results"
)

// fixtureDir is a run with 3 qps levels x 3 repetitions x modes none/sidecar/ambient/waypoint, written through the
// real results.Store by fixtureRun (go test ./capacity -run TestFixture -update regenerates it). Its costs are
// known lines per unit with a few percent of noise, so the fits can be checked against the truth:
//
//	app and sidecar per pod, ztunnel per node, waypoint per waypoint: fixed + slope x krps per unit;
//	istiod: a constant plus a little load (the fit, with one mesh size, must call it a constant).
//
// Allocation samples (source pod-spec, as collectors/prom.AllocationSamples writes them: request, limit or no-limit,
// pod count) are the Istio 1.28 chart defaults (proxy and waypoint 100m/128Mi requested, 2000m/1024Mi limit;
// ztunnel 200m/512Mi and istiod 500m/2Gi requested, no limit); the app asks 100m/128Mi without a limit. As in a real
// run, the idle window is measured once per mode and repetition: in the case of the lowest level.
const fixtureDir = "../testdata/runs/capacity"

const (
	fixturePods      = 10
	fixtureNodes     = 3
	fixtureWaypoints = 1
)

var fixtureLevels = []int{250, 500, 1000}

// truth is fixed (per unit) and slope (per krps per unit) for cpu (millicores) and memory (MiB).
type truth struct{ cpuA, cpuB, memA, memB, reqCPU, reqMem, limCPU, limMem float64 } // lim 0: no limit

var fixtureTruth = map[string]truth{
	"app":      {4, 380, 92, 6, 100, 128, 0, 0},
	"sidecar":  {5.5, 850, 48, 30, 100, 128, 2000, 1024},
	"ztunnel":  {2.8, 130, 11.5, 4, 200, 512, 0, 0},
	"waypoint": {3.5, 310, 38, 22, 100, 128, 2000, 1024},
	"istiod":   {8.6, 0, 88, 0, 500, 2048, 0, 0},
}

func fixtureComponents(mode string) []string {
	switch mode {
	case "sidecar":
		return []string{"app", "sidecar", "istiod"}
	case "ambient":
		return []string{"app", "ztunnel", "istiod"}
	case "waypoint":
		return []string{"app", "ztunnel", "waypoint", "istiod"}
	}
	return []string{"app"}
}

// gauss is a deterministic standard normal draw for key (FNV-64a, splitmix64's finalizer, Box-Muller), stable
// across Go versions. The finalizer matters: FNV's high bits barely move between keys that differ in one
// character, and the draws of neighbouring cases came out correlated without it.
func gauss(key string) float64 {
	u := func(salt string) float64 {
		h := fnv.New64a()
		_, _ = h.Write([]byte(key + "\x00" + salt))
		z := h.Sum64()
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		return (float64(z>>11) + 0.5) / (1 << 53)
	}
	return math.Sqrt(-2*math.Log(u("a"))) * math.Cos(2*math.Pi*u("b"))
}

func round4(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func writeFixture(dir string) error {
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	nodes := make([]results.NodeFacts, fixtureNodes)
	for i := range nodes {
		nodes[i] = results.NodeFacts{Name: fmt.Sprintf("node-%d", i+1), CPU: "4", Memory: "16Gi", KubeletVersion: "v1.37.2"}
	}
	spec, _ := json.Marshal(map[string]any{"apiVersion": "meshbench.dev/v1alpha1", "kind": "Scenario",
		"metadata": map[string]any{"name": "capacity-levels"},
		"spec": map[string]any{"modes": []string{"none", "sidecar", "ambient", "waypoint"},
			"load":    map[string]any{"qps": fixtureLevels, "connections": 4},
			"windows": map[string]any{"idle": "2m0s", "load": "5m0s", "repetitions": 3}}})
	meta := results.RunMeta{RunID: "20261201-020000-capa", Command: "run", Start: start, Scenario: spec,
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
	modes := []string{"none", "sidecar", "ambient", "waypoint"}
	for rep := 1; rep <= 3; rep++ {
		for _, mode := range modes {
			for _, q := range fixtureLevels {
				id := fmt.Sprintf("single/%s/%d/r%d", mode, q, rep)
				idle := results.Window{Kind: results.WindowIdle, Start: clock.Add(30 * time.Second), End: clock.Add(150 * time.Second)}
				load := results.Window{Kind: results.WindowLoad, Start: idle.End.Add(40 * time.Second), End: idle.End.Add(340 * time.Second)}
				windows := []results.Window{idle, load}
				if q != fixtureLevels[0] {
					windows = windows[1:]
				}
				wp := "0"
				if mode == "waypoint" {
					wp = strconv.Itoa(fixtureWaypoints)
				}
				c := results.CaseResult{CaseID: id, Mode: results.Mode(mode), Topology: "single", Load: strconv.Itoa(q), Repetition: rep,
					Status: results.StatusOK, Start: clock, End: load.End.Add(5 * time.Second), Windows: windows,
					Facts: map[results.FactKey]string{"app-pods": strconv.Itoa(fixturePods), "namespaces": "mb-single", "waypoints": wp}}
				// Sidecars and waypoints slow the app a little at the top level: achieved below configured.
				achieved := float64(q) * (1 - 0.002*math.Abs(gauss(id+"/qps")))
				if mode != "none" && q == 1000 {
					achieved -= 4
				}
				achieved = math.Round(achieved*10) / 10
				krps := achieved / 1000
				var samples []results.Sample
				add := func(w results.Window, comp, metric, stat, unit string, v float64) {
					samples = append(samples, results.Sample{CaseID: id, Mode: results.Mode(mode), Topology: "single", Load: c.Load, Repetition: rep,
						Window: w, Source: "prometheus", Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit), Value: v})
				}
				for _, comp := range fixtureComponents(mode) {
					t := fixtureTruth[comp]
					units := map[string]float64{"app": fixturePods, "sidecar": fixturePods, "ztunnel": fixtureNodes, "waypoint": fixtureWaypoints, "istiod": 1}[comp]
					perUnit := krps / units
					cpuB := t.cpuB
					if comp == "app" && mode == "sidecar" {
						cpuB *= 1.04 // redirection through the sidecar costs the app a little
					}
					for _, w := range windows {
						x := 0.0
						if w.Kind == results.WindowLoad {
							x = perUnit
						}
						cpu := units * (t.cpuA + cpuB*x)
						mem := units * (t.memA + t.memB*x)
						if comp == "istiod" {
							cpu, mem = t.cpuA+1.2*krps, t.memA+0.8*krps
						}
						// Noise of the same size at every level (3 % CPU, 1 % memory of the mid level's
						// value): the model's assumption; a real run's may grow with the load.
						mid := 0.5 / units
						cpu += 0.03 * units * (t.cpuA + cpuB*mid) * gauss(id+"/"+w.Kind+"/"+comp+"/cpu")
						mem += 0.01 * units * (t.memA + t.memB*mid) * gauss(id+"/"+w.Kind+"/"+comp+"/mem")
						// A collector never reads CPU below 0 (results.Read leaves such a sample out): the noise of a
						// near-idle waypoint must not take it there.
						cpu = math.Max(cpu, 0.01)
						add(w, comp, "cpu", "min", "millicores", round4(cpu*0.85))
						add(w, comp, "cpu", "max", "millicores", round4(cpu*1.2))
						add(w, comp, "cpu", "avg", "millicores", round4(cpu))
						add(w, comp, "memory", "min", "MiB", round4(mem*0.98))
						add(w, comp, "memory", "max", "MiB", round4(mem*1.03))
						add(w, comp, "memory", "avg", "MiB", round4(mem))
						alloc := func(metric, stat, unit string, v float64) {
							add(w, comp, metric, stat, unit, v)
							samples[len(samples)-1].Source = results.SourcePodSpec
						}
						alloc("cpu", string(results.StatRequest), "millicores", units*t.reqCPU)
						alloc("memory", string(results.StatRequest), "MiB", units*t.reqMem)
						if t.limCPU > 0 {
							alloc("cpu", string(results.StatLimit), "millicores", units*t.limCPU)
							alloc("memory", string(results.StatLimit), "MiB", units*t.limMem)
						} else {
							alloc("cpu", string(results.StatNoLimit), string(results.UnitContainers), units)
							alloc("memory", string(results.StatNoLimit), string(results.UnitContainers), units)
						}
						alloc(string(results.MetricPods), string(results.StatCount), string(results.UnitPods), units)
					}
				}
				add(load, "loadgen", "cpu", "avg", "millicores", round4(240*krps+3))
				qs := results.Sample{CaseID: id, Mode: results.Mode(mode), Topology: "single", Load: c.Load, Repetition: rep, Window: load,
					Source: "fortio", Component: "loadgen", Metric: "qps", Stat: "value", Unit: "rps", Value: achieved}
				samples = append(samples, qs)
				if err := st.AppendCase(c, samples); err != nil {
					return err
				}
				all, cases = append(all, samples...), append(cases, c)
				clock = c.End.Add(5 * time.Second)
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

// TestFixture regenerates the fixture run and fails when the committed files differ (-update rewrites them).
func TestFixture(t *testing.T) {
	if goldenfile.Update() {
		if err := os.RemoveAll(fixtureDir); err != nil {
			t.Fatal(err)
		}
		if err := writeFixture(fixtureDir); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "capacity")
	if err := writeFixture(dir); err != nil {
		t.Fatal(err)
	}
	checkRegenerated(t, dir, fixtureDir, "TestFixture", results.RunFile, results.SamplesFile, results.CasesFile, results.SummaryFile)
}

// checkRegenerated fails for each file of names that differs between the freshly generated run directory got and
// the committed one want; test is the test whose -update rewrites it.
func checkRegenerated(t *testing.T, got, want, test string, names ...string) {
	t.Helper()
	for _, name := range names {
		g, err := os.ReadFile(filepath.Join(got, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(want, name))
		if err != nil {
			t.Fatalf("%v (run go test ./capacity -run %s -update)", err, test)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("%s is not what the generator writes: run go test ./capacity -run %s -update and review the diff", filepath.Join(filepath.Base(want), name), test)
		}
	}
}

// GoldenShape is the shape of the golden outputs (also used by cmd/meshbench/app's test of `meshbench project`).
func goldenShape() Shape {
	cpu, mem := 25.0, 3.5
	return Shape{Pods: 500, Nodes: 20, Namespaces: 10, RPS: 5000, PriceCPU: &cpu, PriceMemory: &mem}
}

// fixtureModel is the model of the fixture run, as `meshbench project` builds it.
func fixtureModel(t *testing.T) *Model {
	t.Helper()
	run, err := results.Read(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProjectGolden(t *testing.T) {
	m := fixtureModel(t)
	p := Project(m, goldenShape())
	goldenfile.Check(t, "testdata/project.txt", []byte(Text(p)))
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/project.json", append(b, '\n'))
}
