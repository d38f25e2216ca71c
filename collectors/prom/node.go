package prom

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/podset"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Sources of whole-node series: the value of the series label of node samples.
const (
	// NodeSeriesCadvisor is cAdvisor's root cgroup (/metrics/cadvisor, id="/"): container_cpu_usage_seconds_total
	// and container_memory_working_set_bytes, the same data the pod components come from.
	NodeSeriesCadvisor = "cadvisor-root"
	// NodeSeriesResource is the kubelet's /metrics/resource: node_cpu_usage_seconds_total and
	// node_memory_working_set_bytes (the kubelet computes both from the same root cgroup).
	NodeSeriesResource = "kubelet-resource"
	// NodeSeriesNodeExporter is node-exporter: node_cpu_seconds_total of every mode but idle, iowait and steal
	// (kube-prometheus' own definition of busy), memory MemTotal - MemAvailable (not a working set: it leaves out
	// reclaimable caches differently, so compare node-exporter figures only with node-exporter figures).
	NodeSeriesNodeExporter = "node-exporter"
)

// Label keys of node samples.
const (
	LabelNode   = "node"   // the test node's name
	LabelSeries = "series" // NodeSeriesCadvisor | NodeSeriesResource | NodeSeriesNodeExporter
)

// nodeIdentityLabels are the target labels that tell whose series one is, and which scrape of it: a group of
// series equal on all of them is one node's data from one target. Absent labels count as "" (and are matched as
// such: exactly).
var nodeIdentityLabels = []string{"job", "instance", "node", "nodename", "kubernetes_io_hostname", "metrics_path", "service", "endpoint"}

// nodeSource is a candidate for whole-node CPU and memory, in the order of preference.
type nodeSource struct {
	name string
	// cpu are the core-seconds counters, selector templates ($sel, or {...,$match} with matchers of its own); mem
	// are the gauges in bytes, summed with their signs.
	cpu, mem []Term
	// cadvisorScope restricts the search to the cAdvisor job the pod components use, without /metrics/resource.
	cadvisorScope bool
	// absent is why the series is commonly missing, for the note of a node without data.
	absent string
}

func nodeSources() []nodeSource {
	return []nodeSource{
		{name: NodeSeriesCadvisor, cadvisorScope: true,
			cpu: []Term{{Series: `container_cpu_usage_seconds_total{id="/",$match}`, Sign: 1}},
			mem: []Term{{Series: `container_memory_working_set_bytes{id="/",$match}`, Sign: 1}},
			absent: `kube-prometheus-stack drops it: kubelet.serviceMonitor.cAdvisorMetricRelabelings drops [id, pod] matching '.+;', ` +
				`every cgroup without a pod label`},
		{name: NodeSeriesResource,
			cpu: []Term{{Series: `node_cpu_usage_seconds_total$sel`, Sign: 1}},
			mem: []Term{{Series: `node_memory_working_set_bytes$sel`, Sign: 1}},
			absent: `the kubelets' /metrics/resource is not scraped (kube-prometheus-stack: kubelet.serviceMonitor.resource is false by default; ` +
				`set it true, with resourcePath /metrics/resource)`},
		{name: NodeSeriesNodeExporter,
			cpu:    []Term{{Series: `node_cpu_seconds_total{mode!~"idle|iowait|steal",$match}`, Sign: 1}},
			mem:    []Term{{Series: `node_memory_MemTotal_bytes$sel`, Sign: 1}, {Series: `node_memory_MemAvailable_bytes$sel`, Sign: -1}},
			absent: `no node-exporter is scraped`},
	}
}

func (s nodeSource) catalog() []Signal { return catalogOf(s.cpu, s.mem) }

// NodeGroup is one target's series of a source: their identity labels and the most samples one of them has over
// the searched range.
type NodeGroup struct {
	Labels  map[string]string
	Samples int
}

// NodeCandidates is what Prometheus holds of one source: the groups of its CPU series, or why they could not be
// read.
type NodeCandidates struct {
	Source string
	Probe  string // the series searched, for notes
	Absent string // why they are commonly missing
	Groups []NodeGroup
	Err    error
}

// NodePick is the series chosen for one test node: groups of one source and one job.
type NodePick struct {
	Node   string
	Source string
	Groups []NodeGroup
}

// Selectors are the pick's exact selectors, one per group, every identity label matched exactly (absent ones as
// ""). It is pure.
func (p NodePick) Selectors() []string {
	out := make([]string, 0, len(p.Groups))
	for _, g := range p.Groups {
		out = append(out, "{"+g.matchers()+"}")
	}
	return out
}

func (g NodeGroup) matchers() string {
	ms := make([]string, len(nodeIdentityLabels))
	for i, k := range nodeIdentityLabels {
		ms[i] = k + "=" + strconv.Quote(g.Labels[k])
	}
	return strings.Join(ms, ",")
}

// short names the group by its non-empty identifying labels.
func (g NodeGroup) short() string {
	var ms []string
	for _, k := range []string{"job", "instance", "node", "nodename", "kubernetes_io_hostname"} {
		if v := g.Labels[k]; v != "" {
			ms = append(ms, k+"="+strconv.Quote(v))
		}
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// MaxSamples is the most samples one series of the pick has over the searched range.
func (p NodePick) MaxSamples() int {
	n := 0
	for _, g := range p.Groups {
		n = max(n, g.Samples)
	}
	return n
}

// chooseNodeSeries picks for every test node the first source (cands' order) whose series identify it and no other
// test node, of one job; a node none identifies gets a note saying why per source. Nothing is summed over nodes. It
// is pure and deterministic.
func chooseNodeSeries(nodes []podset.NodeRef, cands []NodeCandidates) ([]NodePick, []string) {
	var picks []NodePick
	var notes []string
	for _, n := range nodes {
		var why []string
		found := false
		for _, c := range cands {
			if c.Err != nil {
				why = append(why, fmt.Sprintf("%s %s: query failed: %v", c.Source, c.Probe, c.Err))
				continue
			}
			var mine []NodeGroup
			for _, g := range c.Groups {
				if !n.IdentifiedBy(g.Labels) {
					continue
				}
				var also []string
				for _, o := range nodes {
					if o.Name != n.Name && o.IdentifiedBy(g.Labels) {
						also = append(also, o.Name)
					}
				}
				if len(also) > 0 {
					notes = append(notes, fmt.Sprintf("node %s: %s series %s also match node(s) %s: not attributable, left out",
						n.Name, c.Source, g.short(), strings.Join(also, ", ")))
					continue
				}
				mine = append(mine, g)
			}
			if len(mine) == 0 {
				if len(c.Groups) == 0 {
					why = append(why, fmt.Sprintf("%s %s: no series (%s)", c.Source, c.Probe, c.Absent))
				} else {
					why = append(why, fmt.Sprintf("%s %s: only series of other targets (%s)", c.Source, c.Probe, shortGroups(c.Groups, 4)))
				}
				continue
			}
			var jobs []string
			for _, g := range mine {
				if !slices.Contains(jobs, g.Labels["job"]) {
					jobs = append(jobs, g.Labels["job"])
				}
			}
			slices.Sort(jobs)
			pick := NodePick{Node: n.Name, Source: c.Source}
			for _, g := range mine {
				if g.Labels["job"] == jobs[0] {
					pick.Groups = append(pick.Groups, g)
				}
			}
			slices.SortFunc(pick.Groups, func(a, b NodeGroup) int { return strings.Compare(a.matchers(), b.matchers()) })
			if len(jobs) > 1 {
				notes = append(notes, fmt.Sprintf("node %s: %s series of jobs %s identify it; using job %q only (both would count it twice)",
					n.Name, c.Source, strings.Join(jobs, ", "), jobs[0]))
			}
			if len(pick.Groups) > 1 {
				notes = append(notes, fmt.Sprintf("node %s: %d %s targets of job %q identify it (%s): counted together, as one target that changed labels; if they are one target scraped twice, its figures are doubled",
					n.Name, len(pick.Groups), c.Source, jobs[0], shortGroups(pick.Groups, 4)))
			}
			picks = append(picks, pick)
			found = true
			break
		}
		if !found {
			notes = append(notes, fmt.Sprintf(podset.NodeNotCollected+"%s not collected: no series identifies it by a node, instance, nodename or kubernetes_io_hostname label (%s): %s",
				n.Name, n.Describe(), strings.Join(why, "; ")))
		}
	}
	return picks, notes
}

func shortGroups(gs []NodeGroup, limit int) string {
	var s []string
	for i, g := range gs {
		if i == limit {
			s = append(s, fmt.Sprintf("and %d more", len(gs)-limit))
			break
		}
		s = append(s, g.short())
	}
	return strings.Join(s, ", ")
}

// groupsOf reads the result of the search query (one element per identity label set).
func groupsOf(v model.Value) []NodeGroup {
	vec, _ := v.(model.Vector)
	out := make([]NodeGroup, 0, len(vec))
	for _, s := range vec {
		g := NodeGroup{Labels: map[string]string{}, Samples: int(s.Value)}
		for _, k := range nodeIdentityLabels {
			if v := s.Metric[model.LabelName(k)]; v != "" {
				g.Labels[k] = string(v)
			}
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b NodeGroup) int { return strings.Compare(a.matchers(), b.matchers()) })
	return out
}

// nodeParams adapts p to a node source sparser than the cAdvisor step (node-exporter at a global 30 s): when the
// samples' spacing is clearly (1.5x) wider, the step becomes it and the rate range 4 of it, with a note. It is pure.
func nodeParams(p Params, look time.Duration, samples int) (Params, string) {
	if samples <= 0 {
		return p, ""
	}
	spacing := look / time.Duration(samples)
	if spacing <= p.Step+p.Step/2 {
		return p, ""
	}
	q := p
	// Rounded, not ceiled: the count over look is off by one either way, and 64 s / 31 samples must stay a 2 s step.
	q.Step = max(time.Second, spacing.Round(time.Second))
	q.Rate = max(p.Rate, 4*q.Step)
	note := fmt.Sprintf("samples about %s apart (step %s): CPU min/max use rates over %s at steps of %s", spacing.Round(100*time.Millisecond), p.Step, q.Rate, q.Step)
	if q.Rate > p.Window {
		note += fmt.Sprintf(", longer than the %s window: the CPU figures cover the %s up to its end", p.Window, q.Rate)
	}
	return q, note
}

// collectNodes measures each test node of a node set on its own: it searches every source's CPU series once over
// the window (and the rate range before it), picks per node (chooseNodeSeries), and runs the source's catalog with
// the pick's exact selectors, answered from one query per source and term for every node (nodeBatches). Samples are labelled with the node and the source.
func (c *Collector) collectNodes(ctx context.Context, out *podset.Collected, t *tally, set podset.PodSet, kind string, base Params) error {
	qw := out.Window
	look := qw.End.Sub(qw.Start) + base.Rate
	srcs := nodeSources()
	cands := make([]NodeCandidates, 0, len(srcs))
	for _, src := range srcs {
		scope := ""
		if src.cadvisorScope {
			scope = `metrics_path!="/metrics/resource"`
			if c.Interval.Job != "" {
				scope += ",job=" + strconv.Quote(c.Interval.Job)
			}
		}
		cand := NodeCandidates{Source: src.name, Probe: expandSel(src.cpu[0].Series, scope), Absent: src.absent}
		expr := fmt.Sprintf("max by (%s) (count_over_time(%s[%ds]))", strings.Join(nodeIdentityLabels, ", "), cand.Probe, int64(look/time.Second))
		v, warns, err := query(ctx, c.API, c.Retry, expr, qw.End)
		for _, wn := range warns {
			out.Warnings = append(out.Warnings, fmt.Sprintf("prometheus warning for node series %s: %s", src.name, wn))
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			cand.Err = err
		} else {
			cand.Groups = groupsOf(v)
		}
		cands = append(cands, cand)
	}
	picks, notes := chooseNodeSeries(set.Nodes, cands)
	out.Warnings = append(out.Warnings, notes...)
	params := make([]Params, len(picks))
	for i, pk := range picks {
		p := base
		p.Selectors = pk.Selectors()
		p, note := nodeParams(p, look, pk.MaxSamples())
		if note != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("node %s (%s): %s", pk.Node, pk.Source, note))
		}
		params[i] = p
	}
	fetch := c.nodeBatches(t, srcs, picks, params)
	for i, pk := range picks {
		src := srcs[slices.IndexFunc(srcs, func(s nodeSource) bool { return s.name == pk.Source })]
		labels := map[string]string{LabelNode: pk.Node, LabelSeries: pk.Source}
		if err := c.runCatalog(ctx, out, t, fetch, src.catalog(), params[i], set.Component, "node "+pk.Node+", "+pk.Source, labels, kind, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// nodeBatches is the fetcher that asks Prometheus once per source, parameters and term for all the picked nodes and
// answers each pick's selector with the series whose identity labels are exactly its group's, so a window's node
// queries do not grow with the nodes. A failed query is each of its nodes'; its warnings are reported once.
func (c *Collector) nodeBatches(t *tally, srcs []nodeSource, picks []NodePick, params []Params) fetcher {
	parts := nodeBatchParts(srcs, picks, params)
	answers := map[string]*batchAnswer{}
	direct := c.direct(t)
	return func(ctx context.Context, expr string, at time.Time) (model.Value, promv1.Warnings, error) {
		pt, ok := parts[expr]
		if !ok {
			return direct(ctx, expr, at)
		}
		a := answers[pt.union]
		if a == nil {
			a = &batchAnswer{}
			a.v, a.warns, a.err = direct(ctx, pt.union, at)
			if a.err == nil || ctx.Err() == nil {
				answers[pt.union] = a
			}
		} else {
			// Counted as the query it stands for, so that QueryErrors' "n of m" stays a share when a batch fails.
			t.queries++
		}
		return a.share(pt.group)
	}
}

// batchPart is what a pick's own range selector stands for: the union selector of its batch and the pick's group.
type batchPart struct {
	union string
	group NodeGroup
}

// nodeBatchParts maps each pick's rendered range selectors to their batch's: the picks of one source, rate and
// step form a batch, whose union selector matches all their groups. A selector that does not render is left out
// (runCatalog renders the picks' own and reports it). Pure.
func nodeBatchParts(srcs []nodeSource, picks []NodePick, params []Params) map[string]batchPart {
	type batchKey struct {
		source     string
		rate, step time.Duration
	}
	parts := map[string]batchPart{}
	members := map[batchKey][]int{}
	var keys []batchKey
	for i, pk := range picks {
		k := batchKey{pk.Source, params[i].Rate, params[i].Step}
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], i)
	}
	for _, k := range keys {
		var groups []NodeGroup
		for _, i := range members[k] {
			groups = append(groups, picks[i].Groups...)
		}
		up := params[members[k][0]]
		up.Selectors = []string{unionSelector(groups)}
		src := srcs[slices.IndexFunc(srcs, func(s nodeSource) bool { return s.name == k.source })]
		for _, sig := range src.catalog() {
			unions, _, err := sig.Render(up)
			if err != nil {
				continue // runCatalog renders the picks' own and reports it
			}
			for _, i := range members[k] {
				own, _, err := sig.Render(params[i])
				if err != nil {
					continue
				}
				n := len(picks[i].Groups)
				for j, e := range own { // Render: term-major, then selector
					parts[e] = batchPart{union: unions[j/n], group: picks[i].Groups[j%n]}
				}
			}
		}
	}
	return parts
}

// batchAnswer is Prometheus' answer to one union selector, shared by the picks of its batch; warned records that
// its warnings were handed out.
type batchAnswer struct {
	v      model.Value
	warns  promv1.Warnings
	err    error
	warned bool
}

// share is a's answer to the pick of group: the batch's error, or the series of group only; the warnings go with
// the first share alone.
func (a *batchAnswer) share(group NodeGroup) (model.Value, promv1.Warnings, error) {
	var warns promv1.Warnings
	if !a.warned {
		warns, a.warned = a.warns, true
	}
	if a.err != nil {
		return nil, warns, a.err
	}
	m, ok := a.v.(model.Matrix)
	if !ok {
		return a.v, warns, nil // runCatalog refuses anything but a range vector
	}
	var mine model.Matrix
	for _, ss := range m {
		if group.identifies(ss.Metric) {
			mine = append(mine, ss)
		}
	}
	return mine, warns, nil
}

// unionSelector matches every series of the groups (and maybe others: values of different groups combined), each
// identity label by the values the groups have ("" matches an absent label, as Prometheus treats it). It is pure.
func unionSelector(groups []NodeGroup) string {
	ms := make([]string, len(nodeIdentityLabels))
	for i, k := range nodeIdentityLabels {
		var vals []string
		for _, g := range groups {
			if v := g.Labels[k]; !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		if len(vals) == 1 {
			ms[i] = k + "=" + strconv.Quote(vals[0])
			continue
		}
		for j, v := range vals {
			vals[j] = regexp.QuoteMeta(v)
		}
		ms[i] = k + "=~" + strconv.Quote(strings.Join(vals, "|"))
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// identifies reports whether a series' identity labels are exactly the group's (absent as "").
func (g NodeGroup) identifies(m model.Metric) bool {
	for _, k := range nodeIdentityLabels {
		if string(m[model.LabelName(k)]) != g.Labels[k] {
			return false
		}
	}
	return true
}

// isNodeSeries reports whether a kubelet series is node-level (no pod).
func isNodeSeries(k SeriesKey) bool { return k.Pod == "" && k.Namespace == "" && k.Container == "" }
