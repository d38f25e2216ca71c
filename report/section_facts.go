package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/results"
)

// factsSection is what was measured where: the run's own facts, the cluster, Istio, the resource source, the
// configured and measured windows, then the nodes.
func (r Report) factsSection() (section, bool) {
	s := section{Title: "Run facts"}
	c := r.Meta.Cluster
	rows := runFacts(r.Meta)
	rows = append(rows, clusterFacts(c)...)
	rows = append(rows, sourceFact(r.Meta.Prometheus))
	rows = append(rows, r.windowFacts()...)
	rows = append(rows, []string{"nodes", nodesText(c.Nodes)})
	if r.baseline != nil {
		rows = append(rows, r.baselineFact())
	}
	s.table(table{ID: "facts-table", Header: []string{"fact", "value"}, Rows: rows, Class: "facts"})
	if len(c.Nodes) > 0 {
		s.table(nodesTable(c.Nodes))
	}
	if r.recomputed {
		s.para("summary.json was missing: the summary was computed from samples.jsonl for this report.")
	}
	return s, true
}

// runFacts are the run's own rows: its ID, command, the meshbench that ran it, when it started and ended.
func runFacts(m results.RunMeta) [][]string {
	rows := [][]string{
		{"run ID", m.RunID},
		{"command", "meshbench " + orText(m.Command, "run")},
		{"meshbench", fmt.Sprintf("%s (commit %s, %s, built %s)", orText(m.Tool.Version, "unknown"), orText(m.Tool.Commit, "unknown"),
			orText(m.Tool.GoVersion, "unknown Go"), orText(m.Tool.BuildDate, "unknown date"))},
		{"started", fmtTime(m.Start)},
	}
	if m.End == nil {
		return append(rows, []string{"ended", "not recorded: the run was interrupted or is still running; figures cover the finished cases only"})
	}
	took := "took: unknown, see the warnings"
	if d, ok := m.Took(); ok {
		took = "took " + d.Round(time.Second).String()
	}
	rows = append(rows, []string{"ended", fmt.Sprintf("%s (%s)", fmtTime(*m.End), took)})
	if n := len(m.Invocations); n > 1 {
		rows = append(rows, []string{"invocations", invocationsText(m.Invocations)})
	}
	if in := m.Interrupted; in != nil {
		rows = append(rows, []string{"interrupted", fmt.Sprintf("%s at %s", in.Text(), fmtTime(in.At))})
	}
	return rows
}

// clusterFacts are the cluster's rows: Kubernetes, CNI, profile and the Istio the run found.
func clusterFacts(c results.ClusterFacts) [][]string {
	rows := [][]string{
		{"Kubernetes", orText(c.KubernetesVersion, "unknown (not recorded)")},
		{"CNI", orText(c.CNI, "not detected")},
		{"profile", orText(c.Profile, "not recorded")},
	}
	ist := c.Istio
	if ist == nil {
		return append(rows, []string{"Istio", "not detected (no mesh installed, or a cni-only run)"})
	}
	return append(rows,
		[]string{"Istio", fmt.Sprintf("%s (revision %s, profile %s)", orText(ist.Version, "unknown version"), orText(ist.Revision, "default"), orText(ist.Profile, "unknown"))},
		[]string{"data plane", dataPlaneText(*ist)},
		[]string{"ambient capable", strconv.FormatBool(ist.AmbientCapable)},
		[]string{"native sidecars", boolPtrText(ist.NativeSidecars)},
		[]string{"proxy image", orText(ist.ProxyImage, "not recorded")},
		[]string{"ztunnel image", orText(ist.ZtunnelImage, "not recorded")},
	)
}

// sourceFact is the row of the resource source: Prometheus or the kubelet fallback, its scrape interval, cAdvisor's
// sample spacing and the rate range.
func sourceFact(p *results.PromFacts) []string {
	if p == nil {
		return []string{"resource source", "not recorded"}
	}
	spacing := "sample spacing not measured"
	if p.SampleSpacing > 0 {
		spacing = "cAdvisor sample spacing " + p.SampleSpacing.String()
	}
	src := p.Source
	if p.URL != "" {
		src += " " + p.URL
	}
	return []string{"resource source", fmt.Sprintf("%s, scrape interval %s, %s, rate range %s", src, p.ScrapeInterval, spacing, p.RateRange)}
}

// windowFacts are the app and the windows the scenario configured, then the window lengths the cases measured.
func (r Report) windowFacts() [][]string {
	var rows [][]string
	sc := r.scenario()
	if sc.App != "" {
		rows = append(rows, []string{"app", sc.App})
	}
	cfg := []string{}
	if sc.Idle != "" || sc.Load != "" {
		cfg = append(cfg, fmt.Sprintf("idle %s, load %s", orText(sc.Idle, "?"), orText(sc.Load, "?")))
	}
	if sc.Reps != "" {
		cfg = append(cfg, sc.Reps+" repetitions")
	}
	if sc.Interleave != "" {
		cfg = append(cfg, "interleave "+sc.Interleave)
	}
	if sc.QPS != "" {
		cfg = append(cfg, "qps "+sc.QPS)
	}
	if sc.Connections != "" {
		cfg = append(cfg, sc.Connections+" connections")
	}
	rows = append(rows, []string{"configured windows", orText(strings.Join(cfg, "; "), "not recorded (no config echo in run.json)")})
	ow := r.observedWindows()
	var obs []string
	for _, k := range []string{results.WindowIdle, results.WindowLoad, results.WindowTest} {
		if ds := ow[k]; len(ds) > 0 {
			var parts []string
			for _, d := range ds {
				parts = append(parts, d.String())
			}
			obs = append(obs, k+" "+strings.Join(parts, "/"))
		}
	}
	return append(rows, []string{"measured windows", orText(strings.Join(obs, ", "), "none recorded")})
}

// nodesTable lists the nodes as the run recorded them; the host column only for runs that recorded the nodes'
// machine and boot IDs (older runs did not).
func nodesTable(nodes []results.NodeFacts) table {
	hosts := slices.ContainsFunc(nodes, func(n results.NodeFacts) bool { return n.MachineID != "" })
	header := []string{"node", "kubelet", "kernel", "OS", "runtime", "CPU", "memory"}
	if hosts {
		header = append(header, "host")
	}
	var rows [][]string
	for _, n := range nodes {
		row := []string{n.Name, orText(n.KubeletVersion, "?"), orText(n.KernelVersion, "?"), orText(n.OSImage, "?"),
			orText(n.ContainerRuntime, "?"), orText(n.CPU, "?"), orText(n.Memory, "?")}
		if hosts {
			row = append(row, hostText(n, nodes))
		}
		rows = append(rows, row)
	}
	return table{ID: "nodes-table", Caption: "Nodes (allocatable CPU and memory)", Header: header, Rows: rows}
}

// dataPlaneText says what ran each data-plane component, or the run's one kind for runs recorded before the
// per-component facts.
func dataPlaneText(ist results.IstioFacts) string {
	if len(ist.DataPlanes) > 0 {
		parts := make([]string, 0, len(ist.DataPlanes))
		for _, c := range ist.DataPlanes {
			parts = append(parts, string(c.Component)+": "+orText(c.Description, string(c.Kind)))
		}
		return strings.Join(parts, "; ")
	}
	switch ist.DataPlane {
	case results.DataPlaneStandIn:
		return "test stand-in: figures are not Istio's"
	case "":
		return "not recorded"
	}
	return string(ist.DataPlane)
}

func boolPtrText(b *bool) string {
	if b == nil {
		return "not recorded"
	}
	return strconv.FormatBool(*b)
}

// hostText says which host a node runs on: its own, one shared with other nodes (whose whole-node figures are the
// same machine's), or unknown (no machine or boot ID recorded).
func hostText(n results.NodeFacts, nodes []results.NodeFacts) string {
	switch with := results.SharesHostWith(n.Name, nodes); {
	case len(with) > 0:
		return "one host with " + strings.Join(with, ", ")
	case n.MachineID == "" || n.BootID == "":
		return "unknown"
	}
	return "its own"
}

func nodesText(nodes []results.NodeFacts) string {
	if len(nodes) == 0 {
		return "not recorded"
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return fmt.Sprintf("%d (%s)", len(nodes), strings.Join(names, ", "))
}

// invocationsText describes the meshbench processes of a resumed run: how many, and each span with its outcome.
func invocationsText(invs []results.Invocation) string {
	parts := make([]string, 0, len(invs))
	for _, inv := range invs {
		span := fmtTime(inv.Start) + " to "
		if inv.End != nil {
			span += fmtTime(*inv.End) + " (" + inv.End.Sub(inv.Start).Round(time.Second).String() + ")"
		} else {
			span += "not recorded"
		}
		out := orText(inv.Outcome, "running")
		if inv.Signal != "" {
			out += ", " + inv.Signal
		}
		parts = append(parts, span+" "+out)
	}
	return fmt.Sprintf("%d (the first run and %d --resume; took counts only these spans): %s", len(invs), len(invs)-1, strings.Join(parts, "; "))
}
