package report

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/results"
)

// normal is a deterministic standard normal draw for (seed, key, rep): FNV-64a feeds Box–Muller.
func normal(seed, key string, rep int) float64 {
	u := func(salt string) float64 {
		h := fnv.New64a()
		_, _ = h.Write([]byte(seed + "\x00" + key + "\x00" + strconv.Itoa(rep) + "\x00" + salt))
		return (float64(h.Sum64()>>11) + 0.5) / (1 << 53)
	}
	return math.Sqrt(-2*math.Log(u("a"))) * math.Cos(2*math.Pi*u("b"))
}

// value draws one observation: base · (1 + sd·z), z reused from the mapped repetition, plus jitter.
func (f fixture) value(base, sd float64, key string, rep int) float64 {
	src := rep
	if f.repOf != nil {
		src = f.repOf(rep)
	}
	v := base * (1 + sd*normal("meshbench-fixture", key, src))
	if f.jitter == 0 {
		return round(v)
	}
	// Zero-sum jitter: each repetition moves, the mean over the repetitions stays exactly where it was. Not rounded,
	// so the means stay equal to the last bit that matters.
	mean := 0.0
	for r := 1; r <= f.reps; r++ {
		mean += normal(f.seed, key, r) / float64(f.reps)
	}
	return v + base*f.jitter*sd*(normal(f.seed, key, rep)-mean)
}

// round keeps 4 significant digits, like figures read from a dashboard.
func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func (f fixture) meta() results.RunMeta {
	dp, ver, prof := results.DataPlaneIstio, "1.28.1", "ambient"
	if f.standIn {
		dp, ver, prof = results.DataPlaneStandIn, "1.28.1-standin", "localcluster"
	}
	native := true
	nodes := []results.NodeFacts{}
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, results.NodeFacts{Name: fmt.Sprintf("node-%d", i), KubeletVersion: "v1.37.2", KernelVersion: "6.18.0",
			OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntime: "containerd://1.7.24", CPU: "4", Memory: "16Gi",
			InternalIP: fmt.Sprintf("10.0.0.%d", 10+i)})
	}
	var topos []map[string]any
	for _, t := range f.topos {
		m := map[string]any{"name": t.name, "kind": t.kind, "replicas": t.replicas}
		if t.kind == "multi" {
			m["namespaces"] = t.namespaces
		}
		topos = append(topos, m)
	}
	if f.command == "cni" {
		return f.cniMeta(nodes, ver, prof, dp, native)
	}
	spec := map[string]any{
		"profile":    f.profile,
		"workload":   map[string]any{"app": "bank-of-anthos", "topologies": topos, "replicas": 2, "namespacePrefix": "mb-"},
		"modes":      modes,
		"load":       map[string]any{"qps": []any{1000}, "connections": 4, "warmUp": "30s", "trimEnd": "5s", "clients": 1, "path": "/home"},
		"windows":    map[string]any{"idle": "5m0s", "load": "10m0s", "repetitions": f.reps, "interleave": "serpentine", "settle": "15s"},
		"prometheus": map[string]any{"url": "http://prometheus.monitoring.svc:9090", "scrapeInterval": "15s"},
	}
	if len(f.cni) > 0 {
		spec["cni"] = map[string]any{"tests": f.cni, "paths": f.cniPaths, "duration": "10s", "samples": 3, "udpBitrate": "0"}
	}
	echo, err := json.Marshal(map[string]any{"apiVersion": "meshbench.dev/v1alpha1", "kind": "Scenario",
		"metadata": map[string]any{"name": "bank-of-anthos-modes", "description": "study A: Istio data-plane modes on Bank of Anthos"},
		"spec":     spec})
	if err != nil {
		panic(err)
	}
	m := results.RunMeta{
		RunID:   f.runID,
		Command: "run",
		Tool:    results.ToolInfo{Version: "v0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8", BuildDate: "2026-11-29T18:00:00Z"},
		Start:   f.start,
		Cluster: results.ClusterFacts{KubernetesVersion: "v1.37.2", Profile: f.profile, CNI: "kindnet-like bridge", Nodes: nodes,
			Istio: &results.IstioFacts{Version: ver, Revision: "default", Profile: prof, AmbientCapable: true, NativeSidecars: &native,
				ZtunnelImage: "docker.io/istio/ztunnel:" + ver, ProxyImage: "docker.io/istio/proxyv2:" + ver, DataPlane: dp,
				GatewayAPIBundleVersion: "v1.4.0"}},
		Prometheus: &results.PromFacts{URL: "http://prometheus.monitoring.svc:9090", Source: "prometheus", ScrapeInterval: 15 * time.Second, SampleSpacing: 15 * time.Second, Step: 15 * time.Second, RateRange: time.Minute},
		Scenario:   echo,
	}
	if f.standIn {
		m.Cluster.CNI = "localcluster bridge"
		m.Notes = []string{"Istio data plane replaced by hack/localistio stand-ins (same pods, labels and ports; no Envoy): use this run to test meshbench, not to judge Istio"}
	}
	return m
}

// cniMeta is run.json of a `meshbench cni` run: the scenario echo has only the cni section, the plan only CNI cases.
func (f fixture) cniMeta(nodes []results.NodeFacts, ver, prof string, dp results.DataPlaneKind, native bool) results.RunMeta {
	// The local cluster: node-1 and node-2 (the test nodes) are one machine, the same machine and boot ID; node-3 a
	// machine of its own. meshbench cni's run notes say so (results.SharedHostNotes of the test nodes).
	nodes = slices.Clone(nodes)
	for i := range nodes {
		nodes[i].MachineID, nodes[i].BootID = "4c1f0e9d2b7a4e6f8a3b5c7d9e1f2a3b", "b0071d00-5e1f-4c2a-9d3b-7e6f5a4b3c2d"
	}
	nodes[2].MachineID, nodes[2].BootID = "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "1d2c3b4a-5f6e-4d7c-8b9a-0f1e2d3c4b5a"
	echo, err := json.Marshal(map[string]any{"apiVersion": "meshbench.dev/v1alpha1", "kind": "Scenario",
		"metadata": map[string]any{"name": "pod-network", "description": "the pod network underneath the mesh"},
		"spec": map[string]any{"profile": f.profile,
			"cni":        map[string]any{"tests": f.cni, "paths": f.cniPaths, "duration": "10s", "samples": 3, "udpBitrate": "0"},
			"prometheus": map[string]any{"url": "http://prometheus.monitoring.svc:9090", "scrapeInterval": "15s"}}})
	if err != nil {
		panic(err)
	}
	var cases []map[string]any
	for _, path := range f.cniPaths {
		for _, test := range f.cni {
			cases = append(cases, map[string]any{"id": path + "/" + test, "path": path, "test": test, "samples": 3})
		}
	}
	plan, err := json.Marshal(map[string]any{"scenario": "pod-network", "cni": map[string]any{"cases": cases}})
	if err != nil {
		panic(err)
	}
	m := results.RunMeta{
		RunID: f.runID, Command: "cni", Start: f.start, Scenario: echo, Plan: plan,
		Tool: results.ToolInfo{Version: "v0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8", BuildDate: "2026-11-29T18:00:00Z"},
		Cluster: results.ClusterFacts{KubernetesVersion: "v1.37.2", Profile: f.profile, CNI: "localcluster bridge", Nodes: nodes,
			Istio: &results.IstioFacts{Version: ver, Revision: "default", Profile: prof, AmbientCapable: true, NativeSidecars: &native, DataPlane: dp}},
		Prometheus: &results.PromFacts{URL: "http://prometheus.monitoring.svc:9090", Source: "prometheus", ScrapeInterval: 15 * time.Second, RateRange: time.Minute},
		Notes:      results.SharedHostNotes(nodes[:2]),
	}
	return m
}

// cniIdleCase is the idle window of a cni run: the test pods of each path and each test node, no traffic.
func (f fixture) cniIdleCase(at time.Time) (results.CaseResult, []results.Sample) {
	w := results.Window{Kind: results.WindowIdle, Start: at, End: at.Add(90 * time.Second)}
	c := results.CaseResult{CaseID: "idle", Status: results.StatusOK, Start: at, End: w.End, Windows: []results.Window{w}}
	var out []results.Sample
	add := func(comp string, labels map[string]string, metric, unit string, base float64) {
		for _, st := range []struct {
			name   string
			factor float64
		}{{"min", 0.9}, {"max", 1.2}, {"avg", 1}} {
			key := fmt.Sprintf("cni/idle/%s/%v/%s/%s", comp, labels, metric, st.name)
			out = append(out, results.Sample{CaseID: "idle", Window: w, Source: "prometheus", Component: results.Component(comp), Metric: results.Metric(metric),
				Stat: results.Stat(st.name), Unit: results.Unit(unit), Value: f.value(base*st.factor, 0.01, key, 1), Labels: labels})
		}
	}
	for _, path := range f.cniPaths {
		add(string(results.ComponentCNITest), map[string]string{"path": path}, "cpu", "millicores", 3.2)
		add(string(results.ComponentCNITest), map[string]string{"path": path}, "memory", "MiB", 21)
	}
	for _, node := range []string{"node-1", "node-2"} {
		labels := map[string]string{"path": "all", "node": node, "series": "cadvisor-root"}
		add(string(results.ComponentNode), labels, "cpu", "millicores", 410)
		add(string(results.ComponentNode), labels, "memory", "MiB", 5120)
	}
	return c, out
}

// generate writes the fixture run into dir through results.Store.
func (f fixture) generate(dir string) error {
	meta := f.meta()
	if f.interruptAfter > 0 {
		meta.Invocations = []results.Invocation{{Start: f.start}} // as orchestrate starts a run
	}
	st, err := results.Create(dir, meta)
	if err != nil {
		return err
	}
	var all []results.Sample
	var cases []results.CaseResult
	clock := f.start.Add(20 * time.Second)
	appendCase := func(c results.CaseResult, samples []results.Sample) error {
		if err := st.AppendCase(c, samples); err != nil {
			return err
		}
		all = append(all, samples...)
		cases = append(cases, c)
		return nil
	}
	var planned []string
	for _, t := range f.topos {
		for rep := 1; rep <= f.reps; rep++ {
			order := modes
			if rep%2 == 0 { // serpentine
				order = []string{modes[3], modes[2], modes[1], modes[0]}
			}
			for _, mode := range order {
				c, _ := f.meshCase(t, mode, rep, clock)
				planned = append(planned, c.CaseID)
			}
		}
	}
	for _, t := range f.topos {
		for rep := 1; rep <= f.reps; rep++ {
			order := modes
			if rep%2 == 0 { // serpentine
				order = []string{modes[3], modes[2], modes[1], modes[0]}
			}
			for _, mode := range order {
				if f.interruptAfter > 0 && len(cases) == f.interruptAfter {
					// SIGINT 2 minutes into this case's load; cleanup takes 40 s; the case is not recorded.
					at := clock.Add(6*time.Minute + 2*time.Minute)
					intr := &results.Interruption{Signal: "SIGINT", At: at, Case: planned[len(cases)], Phase: "load",
						Completed: len(cases), Planned: len(planned), NotRun: planned[len(cases):]}
					meta = results.EndInvocation(meta, at.Add(40*time.Second), results.OutcomeInterrupted, "SIGINT", intr)
					if err := st.UpdateMeta(meta); err != nil {
						return err
					}
					if f.resumeAfter == 0 {
						return f.finish(st, meta, all, cases)
					}
					clock = meta.End.Add(f.resumeAfter)
					meta = results.StartInvocation(meta, cases, clock)
					if err := st.UpdateMeta(meta); err != nil {
						return err
					}
				}
				c, samples := f.meshCase(t, mode, rep, clock)
				clock = c.End.Add(5 * time.Second)
				if err := appendCase(c, samples); err != nil {
					return err
				}
			}
		}
	}
	if f.command == "cni" {
		c, samples := f.cniIdleCase(clock)
		clock = c.End.Add(5 * time.Second)
		if err := appendCase(c, samples); err != nil {
			return err
		}
	}
	for _, test := range f.cni {
		for _, path := range f.cniPaths {
			c, samples := f.cniCase(path, test, clock)
			clock = c.End.Add(5 * time.Second)
			if err := appendCase(c, samples); err != nil {
				return err
			}
		}
	}
	end := clock
	if f.interruptAfter > 0 {
		meta = results.EndInvocation(meta, end, results.OutcomeCompleted, "", nil)
	} else {
		meta.End = &end // as runs recorded before invocations existed
	}
	if err := st.UpdateMeta(meta); err != nil {
		return err
	}
	return f.finish(st, meta, all, cases)
}

func (f fixture) finish(st *results.Store, meta results.RunMeta, all []results.Sample, cases []results.CaseResult) error {
	if err := st.WriteSummary(results.Summarize(meta, all, cases, results.SummaryOptions{})); err != nil {
		return err
	}
	return st.Close()
}

func (f fixture) meshCase(t topo, mode string, rep int, at time.Time) (results.CaseResult, []results.Sample) {
	id := fmt.Sprintf("%s/%s/1000/r%d", t.name, mode, rep)
	idle := results.Window{Kind: results.WindowIdle, Start: at.Add(45 * time.Second), End: at.Add(45*time.Second + 5*time.Minute)}
	loadStart := idle.End.Add(30 * time.Second)
	load := results.Window{Kind: results.WindowLoad, Start: loadStart, End: loadStart.Add(10 * time.Minute)}
	waypoints := "0"
	if mode == "waypoint" {
		waypoints = strconv.Itoa(t.namespaces)
	}
	c := results.CaseResult{
		CaseID: id, Mode: results.Mode(mode), Topology: t.name, Load: "1000", Repetition: rep, Status: results.StatusOK,
		Start: at, End: load.End.Add(5 * time.Second), Windows: []results.Window{idle, load},
		Timings: map[string]string{"mode-switch": "31.4s", "verify": "2.1s", "warm-up": "30s"},
		Facts:   map[results.FactKey]string{"replicas": strconv.Itoa(t.replicas), "namespaces": strconv.Itoa(t.namespaces), "waypoints": waypoints},
	}
	var out []results.Sample
	add := func(w results.Window, load, source, comp, metric, stat, unit string, v float64) {
		s := results.Sample{CaseID: id, Mode: results.Mode(mode), Topology: t.name, Load: load, Repetition: rep, Window: w, Source: source,
			Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Value: v, Unit: results.Unit(unit)}
		if f.tweak != nil {
			f.tweak(&s)
		}
		out = append(out, s)
	}
	addLabelled := func(w results.Window, load, comp, metric, stat, unit string, v float64, labels map[string]string) {
		add(w, load, "prometheus", comp, metric, stat, unit, v)
		out[len(out)-1].Labels = labels
	}
	resources := func(w results.Window, load string, scale map[string][2]float64, comps []string) {
		for _, comp := range comps {
			base := scale[comp]
			if comp == "app" && mode == "sidecar" && w.Kind == results.WindowLoad {
				base[0] *= 1.04 // traffic redirection costs the app pods a little too
			}
			for mi, metric := range []string{"cpu", "memory"} {
				unit, sd := "millicores", 0.03
				if metric == "memory" {
					unit, sd = "MiB", 0.008
				}
				for _, st := range []struct {
					name   string
					factor float64
				}{{"min", 0.8}, {"max", 1.3}, {"avg", 1}} {
					if metric == "memory" {
						st.factor = 1 + (st.factor-1)/4 // memory moves less within a window than CPU
					}
					key := fmt.Sprintf("%s/%s/%s/%s/%s/%s", t.name, mode, w.Kind, comp, metric, st.name)
					add(w, load, "prometheus", comp, metric, st.name, unit, f.value(base[mi]*st.factor, sd, key, rep))
					wc, ok := results.ByWorkload(results.Component(comp))
					for _, wl := range t.workloads {
						if !ok {
							break
						}
						share := map[string][2]float64{"app": {wl.appShare, wl.appMemShare}, "sidecar": {wl.sideShare, wl.sideMem}}[comp][mi]
						addLabelled(w, load, string(wc), metric, st.name, unit, f.value(base[mi]*share*st.factor, 1.5*sd, key+"/"+wl.key, rep),
							map[string]string{results.LabelWorkload: wl.key})
					}
				}
			}
		}
	}
	resources(idle, "", t.idleScale, components(mode))
	// The benchmark's own: the load client, and its sidecar in sidecar mode.
	own := []string{"loadgen"}
	if mode == "sidecar" {
		own = append(own, "loadgen-proxy")
	}
	resources(load, "1000", t.loadScale, append(components(mode), own...))
	allocated := func(w results.Window, load string, comps []string) {
		for _, comp := range comps {
			a, n := allocation[comp], float64(allocPods(t, comp))
			add(w, load, results.SourcePodSpec, comp, "cpu", string(results.StatRequest), "millicores", a.reqCPU*n)
			add(w, load, results.SourcePodSpec, comp, "memory", string(results.StatRequest), "MiB", a.reqMem*n)
			for _, l := range []struct {
				metric, unit string
				v            float64
			}{{"cpu", "millicores", a.limCPU}, {"memory", "MiB", a.limMem}} {
				if l.v > 0 {
					add(w, load, results.SourcePodSpec, comp, l.metric, string(results.StatLimit), l.unit, l.v*n)
				} else {
					add(w, load, results.SourcePodSpec, comp, l.metric, string(results.StatNoLimit), string(results.UnitContainers), n)
				}
			}
			add(w, load, results.SourcePodSpec, comp, string(results.MetricPods), string(results.StatCount), string(results.UnitPods), n)
		}
	}
	if f.alloc {
		allocated(idle, "", components(mode))
		allocated(load, "1000", append(components(mode), own...))
	}
	add(load, "1000", "fortio", "loadgen", "qps", "value", "rps", f.value(999.6, 0.0002, t.name+"/"+mode+"/qps", rep))
	for i, st := range latencyStats {
		key := fmt.Sprintf("%s/%s/latency/%s", t.name, mode, st)
		add(load, "1000", "fortio", "loadgen", "latency", st, "ms", f.value(latencyMS(mode, i)*t.latency, 0.05, key, rep))
	}
	return c, out
}

func (f fixture) cniCase(path, test string, at time.Time) (results.CaseResult, []results.Sample) {
	id := fmt.Sprintf("cni/%s/%s", path, test)
	labels := map[string]string{"path": path, "test": test}
	if f.command == "cni" { // as meshbench cni records them
		id = path + "/" + test
		labels["tool"] = cniValues(test, path)[0].source
	}
	c := results.CaseResult{
		CaseID: id, Repetition: 1, Status: results.StatusOK, Start: at,
		Facts: map[results.FactKey]string{"path": path, "test": test, "clientNode": "node-1", "serverNode": "node-2", "podMTU": "1450", "nodeMTU": "1500"},
	}
	if path == "host" {
		c.Facts["podMTU"] = "1500"
	}
	if path == "same-node" {
		c.Facts["serverNode"] = "node-1"
	}
	if path+"/"+test == f.failCNI {
		c.Status = results.StatusFailed
		c.Reason = "netperf TCP_CRR to ClusterIP 10.96.41.7:4444: connection refused 3 times in 30s (the Service has no ready endpoint: netserver pod on node-2 was evicted under memory pressure); re-run with --resume"
		c.End = at.Add(42 * time.Second)
		c.Timings = map[string]string{"wait-endpoints": "30s"}
		return c, nil
	}
	var out []results.Sample
	w := at.Add(5 * time.Second)
	for i := 0; i < 3; i++ {
		win := results.Window{Kind: results.WindowTest, Start: w, End: w.Add(10 * time.Second)}
		c.Windows = append(c.Windows, win)
		for _, m := range cniValues(test, path) {
			sd := 0.01
			if m.metric == "loss" || m.metric == "jitter" {
				sd = 0.2
			}
			key := fmt.Sprintf("cni/%s/%s/%s", path, test, m.metric)
			out = append(out, results.Sample{CaseID: id, Repetition: 1, Window: win, Source: m.source, Component: results.ComponentCNITest,
				Metric: results.Metric(m.metric), Stat: "value", Value: f.value(m.v, sd, key, i+1), Unit: results.Unit(m.unit),
				Labels: labels})
		}
		w = win.End.Add(2 * time.Second)
	}
	c.End = w
	return c, out
}
