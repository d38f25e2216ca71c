package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// synthTruth is one component's true cost per unit: cpu = cpuA + cpuB·x + cpuC·x² millicores and memory = memA +
// memB·x MiB, x the load per unit in krps (for istiod, per mesh: cpuA and memA plus cpuB and memB per krps of the
// whole run, as the fixture's istiod).
type synthTruth struct{ cpuA, cpuB, cpuC, memA, memB float64 }

func (t synthTruth) at(metric string, x float64) float64 {
	if metric == string(results.MetricMemory) {
		return t.memA + t.memB*x
	}
	return t.cpuA + t.cpuB*x + t.cpuC*x*x
}

// synthNoise is how the scatter between repetitions behaves.
type synthNoise int

const (
	// noiseConstant: the same sd at every load (the model's assumption), a share of the value at refKRPS.
	noiseConstant synthNoise = iota
	// noiseProportional: an sd that is a share of the value at the case's own load.
	noiseProportional
)

// synthSpec is a synthetic run with a known truth: per mode, level and repetition a case whose components cost
// units x truth at the achieved load per unit, plus seeded normal noise (gauss, keyed by seed and sample).
type synthSpec struct {
	runID                  string
	seed                   int
	modes                  []string
	levels                 []float64 // configured qps
	reps                   int
	pods, nodes, waypoints int
	truth                  map[string]synthTruth
	noise                  synthNoise
	cpuSD, memSD           float64 // sd as a share of the value (at refKRPS total for noiseConstant)
	refKRPS                float64
	requests               bool // request samples (100m/128Mi per unit) beside the usage
	// achieved is the share of a level's rate the load generator reached; nil: all of it (less up to 0.2 %).
	achieved func(mode string, qps float64) float64
	// skip leaves a component's metric out of a mode (no samples at all).
	skip func(mode, comp, metric string) bool
}

func (sp synthSpec) units(comp string) float64 {
	switch scaling[comp] {
	case PerPod:
		return float64(sp.pods)
	case PerNode:
		return float64(sp.nodes)
	case PerWaypoint:
		return float64(sp.waypoints)
	}
	return 1
}

// perUnitX is the load per unit of comp at a total rate of krps (istiod: the run's krps, see synthTruth).
func (sp synthSpec) perUnitX(comp string, krps float64) float64 {
	if scaling[comp] == PerMesh {
		return krps
	}
	return krps / sp.units(comp)
}

// draw is a seeded standard normal draw for key.
func (sp synthSpec) draw(key string) float64 {
	return gauss(fmt.Sprintf("%s/%d/%s", sp.runID, sp.seed, key))
}

// newObservation is what a new run would measure of comp's metric per unit at x (load per unit): the truth plus one
// draw of the spec's noise there.
func (sp synthSpec) newObservation(comp, metric string, x float64, key string) float64 {
	t := sp.truth[comp]
	return t.at(metric, x) + sp.sd(comp, metric, x)*sp.draw("new/"+key)
}

// sd is the noise's sd per unit of comp's metric at load per unit x.
func (sp synthSpec) sd(comp, metric string, x float64) float64 {
	share := sp.cpuSD
	if metric == string(results.MetricMemory) {
		share = sp.memSD
	}
	if sp.noise == noiseConstant {
		x = sp.perUnitX(comp, sp.refKRPS)
	}
	return share * sp.truth[comp].at(metric, x)
}

// synthCase is one case of a synthetic run and its samples.
type synthCase struct {
	c       results.CaseResult
	samples []results.Sample
}

// cases generates the spec's cases in run order (repetition, mode, level).
func (sp synthSpec) cases(start time.Time) []synthCase {
	var out []synthCase
	clock := start.Add(10 * time.Second)
	for rep := 1; rep <= sp.reps; rep++ {
		for _, mode := range sp.modes {
			for _, q := range sp.levels {
				load := strconv.FormatFloat(q, 'f', -1, 64)
				id := fmt.Sprintf("single/%s/%s/r%d", mode, load, rep)
				w := results.Window{Kind: results.WindowLoad, Start: clock.Add(40 * time.Second), End: clock.Add(340 * time.Second)}
				wp := "0"
				if mode == string(scenario.ModeWaypoint) {
					wp = strconv.Itoa(sp.waypoints)
				}
				c := results.CaseResult{CaseID: id, Mode: results.Mode(mode), Topology: "single", Load: load, Repetition: rep, Status: results.StatusOK,
					Start: clock, End: w.End.Add(5 * time.Second), Windows: []results.Window{w},
					Facts: map[results.FactKey]string{results.FactAppPods: strconv.Itoa(sp.pods), results.FactWaypoints: wp}}
				share := 1 - 0.002*math.Abs(sp.draw(id+"/qps"))
				if sp.achieved != nil {
					share = sp.achieved(mode, q)
				}
				achieved := math.Round(q*share*10) / 10
				krps := achieved / 1000
				var samples []results.Sample
				add := func(comp, metric, stat, unit, source string, v float64) {
					samples = append(samples, results.Sample{CaseID: id, Mode: results.Mode(mode), Topology: "single", Load: load, Repetition: rep,
						Window: w, Source: source, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit), Value: v})
				}
				for _, comp := range modeParts[scenario.Mode(mode)] {
					units, x := sp.units(comp), sp.perUnitX(comp, krps)
					for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
						if sp.skip != nil && sp.skip(mode, comp, metric) {
							continue
						}
						unit, req := "millicores", 100.0
						if metric == string(results.MetricMemory) {
							unit, req = "MiB", 128
						}
						v := units * (sp.truth[comp].at(metric, x) + sp.sd(comp, metric, x)*sp.draw(id+"/"+comp+"/"+metric))
						add(comp, metric, "avg", unit, "prometheus", round4(v))
						if sp.requests {
							add(comp, metric, string(results.StatRequest), unit, results.SourcePodSpec, units*req)
						}
					}
				}
				add(string(results.ComponentLoadgen), "qps", "value", "rps", "fortio", achieved)
				out = append(out, synthCase{c, samples})
				clock = c.End.Add(5 * time.Second)
			}
		}
	}
	return out
}

func (sp synthSpec) meta(start time.Time) results.RunMeta {
	nodes := make([]results.NodeFacts, sp.nodes)
	for i := range nodes {
		nodes[i] = results.NodeFacts{Name: fmt.Sprintf("node-%d", i+1), CPU: "4", Memory: "16Gi", KubeletVersion: "v1.37.2"}
	}
	return results.RunMeta{RunID: sp.runID, Command: "run", Start: start,
		Tool:    results.ToolInfo{Version: "v0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8"},
		Cluster: results.ClusterFacts{KubernetesVersion: "v1.37.2", Nodes: nodes, Istio: &results.IstioFacts{Version: "1.28.1", AmbientCapable: true, DataPlane: results.DataPlaneIstio}}}
}

// run is the spec's run in memory, as results.Read would return it.
func (sp synthSpec) run() *results.Run {
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	r := &results.Run{Meta: sp.meta(start)}
	for _, c := range sp.cases(start) {
		r.Cases = append(r.Cases, c.c)
		r.Samples = append(r.Samples, c.samples...)
	}
	return r
}

// write records the spec's run in dir through the real results.Store, as `meshbench run` does, then applies edit
// to samples.jsonl's lines (to write what Go's encoder cannot: a null value, a NaN).
func (sp synthSpec) write(dir string, edit func(lines []string) []string) error {
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	meta := sp.meta(start)
	st, err := results.Create(dir, meta)
	if err != nil {
		return err
	}
	var end time.Time
	for _, c := range sp.cases(start) {
		if err := st.AppendCase(c.c, c.samples); err != nil {
			return err
		}
		end = c.c.End
	}
	meta.End = &end
	if err := st.UpdateMeta(meta); err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	if edit == nil {
		return nil
	}
	path := filepath.Join(dir, results.SamplesFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := edit(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// synthFixtureTruth is the capacity fixture's truth (fixtureTruth) with the ztunnel and sidecar curved or not.
func synthFixtureTruth() map[string]synthTruth {
	out := map[string]synthTruth{}
	for comp, t := range fixtureTruth {
		out[comp] = synthTruth{cpuA: t.cpuA, cpuB: t.cpuB, memA: t.memA, memB: t.memB}
	}
	out[string(results.ComponentIstiod)] = synthTruth{cpuA: 8.6, cpuB: 1.2, memA: 88, memB: 0.8}
	return out
}

// jsonLine rewrites one field of a samples.jsonl line.
func jsonLine(line string, set func(m map[string]any)) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		panic(err)
	}
	set(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}
