package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// CaseKind tells what a case measures: the mesh (meshbench run) or the pod network underneath (meshbench cni).
// One runner runs both kinds (runner.Runner); one results reader reads both.
type CaseKind string

// Case kinds.
const (
	CaseMesh       CaseKind = "mesh"
	CaseCNI        CaseKind = "cni"
	CaseTransition CaseKind = "transition" // a move between modes under load (spec.transitions)
	CaseEnforce    CaseKind = "enforce"    // a deny policy applied and removed under load (spec.enforcement)
)

// CNIIdleCaseID is the ID of a pod network plan's idle case: the test pods deployed, no traffic, resource use only.
const CNIIdleCaseID = "idle"

// Case is one measurement. A mesh case is a topology in a mode at a load level, in one repetition; a cni case is
// one path x test measured Samples times back to back (or the idle window of the test pods, ID CNIIdleCaseID).
type Case struct {
	// ID is stable for the same scenario: <topology>.<mode>.q<qps>.r<repetition> (mesh), <path>/<test> (cni,
	// CNICaseID).
	ID string `json:"id"`
	// Index is the 1-based position in the plan.
	Index    int      `json:"index"`
	Kind     CaseKind `json:"kind"`
	Topology Topology `json:"topology,omitzero"`
	Mode     Mode     `json:"mode,omitempty"`
	// Variant is the variant (spec.variants) measured on top of Mode; VariantNone for the plain mode.
	Variant string `json:"variant,omitempty"`
	// From is a transition case's first mode; Mode is the one it moves to.
	From       Mode `json:"from,omitempty"`
	QPS        QPS  `json:"qps,omitzero"`
	Repetition int  `json:"repetition,omitempty"` // 1-based
	// Path, Test and Samples are a cni case's (empty on the idle case).
	Path    CNIPath `json:"path,omitempty"`
	Test    CNITest `json:"test,omitempty"`
	Samples int     `json:"samples,omitempty"`
	// Traffic is how long a cni case's traffic lasts (samples x duration), or the idle case's window.
	Traffic Duration `json:"traffic,omitzero"`
	// Skip, when set, is why the case cannot run on this cluster (a path that needs a second node the cluster does
	// not have): the runner records it skipped with this reason, without running it. The plan of a scenario
	// never sets it; what the cluster tells is added before the run (cni.Bench.Cases).
	Skip string `json:"skip,omitempty"`
	// Switch is true when the topology or mode differs from the previous case: the runner applies the mode,
	// ensures the workload and verifies every pod before measuring.
	Switch bool `json:"switch"`
	// Idle is true for the first case of each (topology, mode, repetition): an idle window is measured before load.
	Idle bool `json:"idle"`
	// Policy is how the runner measures and records the case (not printed: the fields above describe the case).
	Policy CasePolicy `json:"-"`
}

// StartMode is the mode the case starts in: a transition case's From, any other case's Mode.
func (c Case) StartMode() Mode {
	if c.Kind == CaseTransition {
		return c.From
	}
	return c.Mode
}

// CasePolicy is how the runner measures and records one case. The code that plans the cases the runner runs sets it
// (NewPlan for mesh cases, cni for pod network cases; the CNIPlan that `meshbench plan` prints has none), so
// the runner follows it without asking the case's kind.
type CasePolicy struct {
	// Settle is the wait after switching to the case's topology and mode, before its first window.
	Settle time.Duration
	// Idle is the idle window measured before the load (0: none).
	Idle time.Duration
	// Load is the load the case measures; nil when it measures none (a pod network idle case: its window only).
	Load *LoadPolicy
	// Attempts is how often a case whose window came back incomplete is measured in all (at least 1).
	Attempts int
	// Named: the case's record and every sample carry its mode, topology, load level (none on idle samples) and
	// repetition. Otherwise samples keep their own repetition (a pod network case's sample number).
	Named bool
	// Transition, on a transition case, is when its move starts in its load (docs/transitions.md).
	Transition *TransitionPolicy
	// Enforce, on an enforce case, is when its policy is applied and removed in its load (docs/enforce.md).
	Enforce *EnforcePolicy
	// RestartApp: the switch to the case's mode ends with a rollout restart of every app workload (startup.restartApp).
	RestartApp bool
	// Facts are recorded with the case, also when it is skipped (a pod network case's path and test, by which
	// results places its row).
	Facts map[string]string
}

// LoadPolicy is the shape of a case's load.
type LoadPolicy struct {
	// Window is the measured window.
	Window time.Duration
	// WarmUp and TrimStart run before the window, CoolDown after it; the runner raises the lead-in to the
	// collector's lead-in and the cool-down to its guard, and records when it did.
	WarmUp, TrimStart, CoolDown time.Duration
	// BackToBack: the load is runs back to back that make up the window (a pod network case's samples): nothing
	// runs around it, and the generator trims the collector's lead-in from its own resource window.
	BackToBack bool
	// PerSecond: the load keeps a per-second record (a transition or enforce case's).
	PerSecond bool
	// DeniedSlice: half the load carries the deny policy's header (an enforce case's), recorded apart.
	DeniedSlice bool
}

// EnforcePolicy is an enforce case's policy: applied Before into the load's window, removed Hold later.
type EnforcePolicy struct {
	Before, Hold time.Duration
}

// TransitionPolicy is a transition case's move: it starts Before into the load's window, and the window lasts
// Before + Budget + the load after it, whatever the move took.
type TransitionPolicy struct {
	Before, Budget time.Duration
}

// Plan is the ordered list of cases for a scenario. It is a pure function of the scenario, so the same file always
// gives the same plan (and the same IDs, which --resume relies on).
type Plan struct {
	Scenario   string     `json:"scenario"`
	Seed       int64      `json:"seed"`
	Interleave Interleave `json:"interleave"`
	Cases      []Case     `json:"cases"`
	// ModeSwitches counts data-plane changes (including the first apply of each topology).
	ModeSwitches int `json:"modeSwitches"`
	// Restarts counts switches that restart workloads (sidecar injection changes only at pod creation).
	Restarts int `json:"restarts"`
	// Estimate is the expected wall time; EstimateNote says what it assumes.
	Estimate     time.Duration `json:"estimate"`
	EstimateNote string        `json:"estimateNote"`
	// CNI is the network benchmark plan (meshbench cni), when the scenario has a cni section.
	CNI *CNIPlan `json:"cni,omitempty"`
}

// CNIPlan is the ordered list of pod network tests: cases of kind CaseCNI, in the one Case shape.
type CNIPlan struct {
	Cases    []Case        `json:"cases"`
	Estimate time.Duration `json:"estimate"`
}

// IdleOnly reports whether the case is a cni idle window: resource use with the test pods deployed, no traffic.
func (c Case) IdleOnly() bool { return c.Kind == CaseCNI && c.Test == "" }

// CNICaseID is the case ID of a pod network test: "<path>/<test>" (e.g. "same-node/tcp"). meshbench cni records
// its results under it (cases.jsonl, samples.jsonl), and the plan prints it, so one ID names a case everywhere.
// Plans of earlier versions printed "<path>.<test>"; results readers accept that form too (results.ParseCNICaseID).
func CNICaseID(path CNIPath, test CNITest) string { return string(path) + "/" + string(test) }

// Pod network test overheads for the estimate: pods scheduled and ready, and per-sample exec and parsing.
const (
	estCNISetup  = 60 * time.Second
	estCNISample = 3 * time.Second
)

// NewCNIPlan expands a cni section into its cases: paths in the configured order, tests in the configured order
// inside each path. NewPlan uses it, and so does cni, which adds what only the cluster tells (placement, the
// RR tool): one planner for both verbs.
func NewCNIPlan(c CNI) *CNIPlan { return newCNIPlan(c) }

func newCNIPlan(c CNI) *CNIPlan {
	p := &CNIPlan{Estimate: estCNISetup + estTeardown}
	for _, path := range c.Paths {
		for _, t := range c.Tests {
			p.Cases = append(p.Cases, Case{ID: CNICaseID(path, t), Index: len(p.Cases) + 1, Kind: CaseCNI, Path: path, Test: t,
				Samples: c.Samples, Traffic: D(time.Duration(c.Samples) * c.Duration.Duration)})
			p.Estimate += time.Duration(c.Samples) * (c.Duration.Duration + estCNISample)
		}
	}
	// The idle window (pods deployed, no traffic) lasts as long as one test sample.
	p.Estimate += c.Duration.Duration
	return p
}

// Rough costs used by the estimate. They are deliberately conservative figures for a small cluster; the real cost
// depends on image pulls and cluster size, which is why the note is printed with the estimate.
const (
	estDeploy        = 90 * time.Second // first deploy of a topology until ready
	estRestartSwitch = 60 * time.Second // rollout restart of every workload (sidecar involvement changes)
	estLabelSwitch   = 15 * time.Second // label-only switch (ambient <-> none, ambient <-> waypoint)
	estWaypoint      = 20 * time.Second // waypoint Gateway programmed and its Deployment available
	estVariant       = 15 * time.Second // a variant's policies applied, pushed and verified, or removed
	estCollect       = 10 * time.Second // Prometheus queries and writing results per case
	estTeardown      = 30 * time.Second // namespace deletion per topology
	// estGuard is the guard assumed between a window and a load's start or stop: one cAdvisor sample spacing,
	// 10-15 s under load whatever the scrape interval (a longer configured scrape interval raises it). The run
	// measures the spacing (run.json prometheus.guard) and keeps that.
	estGuard = 15 * time.Second
)

// needsRestart reports whether switching from one mode to another changes sidecar injection, which only takes effect
// when pods are recreated.
func needsRestart(from, to Mode) bool {
	return from != to && (from == ModeSidecar || to == ModeSidecar)
}

// NewPlan expands a defaulted, valid scenario into ordered cases: per topology, repetitions interleave the modes
// (serpentine by default: A B C, C B A, ... so each boundary keeps the mode and switches stay minimal), and each
// (mode, repetition) runs every load level back to back.
func NewPlan(s *Scenario) Plan {
	p := Plan{Scenario: s.Metadata.Name, Seed: s.Spec.Windows.Seed, Interleave: s.Spec.Windows.Interleave}
	if s.Spec.CNI.configured() {
		p.CNI = newCNIPlan(s.Spec.CNI)
	}
	if s.Spec.Workload.App == "" { // a network-only scenario
		return p
	}
	reps := s.Spec.Windows.Repetitions
	for _, topo := range s.Spec.Workload.Topologies {
		for _, g := range groups(arms(s.Spec.Modes, s.Spec.Variants), reps, s.Spec.Windows.Interleave, s.Spec.Windows.Seed) {
			// A variant of load settings alone leaves the idle cluster as its plain mode has it: no idle window.
			idleToo := g.variant == VariantNone || s.Spec.VariantNamed(g.variant).MeshFeatures()
			for li, q := range s.Spec.Load.QPS {
				idle := li == 0 && idleToo
				c := Case{Kind: CaseMesh, Topology: topo, Mode: g.mode, Variant: g.variant, QPS: q, Repetition: g.rep, Idle: idle, Policy: meshPolicy(s, idle)}
				c.ID = caseID(topo.Name, g.arm, q, g.rep)
				p.Cases = append(p.Cases, c)
			}
		}
		p.Cases = append(p.Cases, transitionCases(s, topo)...)
		p.Cases = append(p.Cases, enforceCases(s, topo)...)
	}
	var prev *Case
	for i := range p.Cases {
		c := &p.Cases[i]
		c.Index = i + 1
		start := c.Mode
		if c.Kind == CaseTransition {
			start = c.From
			p.ModeSwitches++ // the move itself
			if needsRestart(c.From, c.Mode) {
				p.Restarts++
			}
		}
		c.Switch = prev == nil || prev.Topology.Name != c.Topology.Name || prev.Mode != start || prev.Variant != c.Variant
		if c.Switch {
			p.ModeSwitches++
			if prev != nil && prev.Topology.Name == c.Topology.Name && (needsRestart(prev.Mode, start) || c.Policy.RestartApp) {
				p.Restarts++
			}
		}
		prev = c
	}
	p.Estimate, p.EstimateNote = estimate(s, p.Cases)
	return p
}

// meshPolicy is how a mesh case is measured: the settle after a switch, the idle window when idle (the first load
// level of a topology, mode and repetition), the load of the scenario, windows.attempts, named by its mode,
// topology, load level and repetition.
func meshPolicy(s *Scenario, idle bool) CasePolicy {
	w := s.Spec.Windows
	p := CasePolicy{Settle: w.Settle.Duration, Load: meshLoad(s), Attempts: max(1, w.Attempts), Named: true, RestartApp: s.Spec.Startup.RestartApp}
	if idle {
		p.Idle = w.Idle.Duration
	}
	return p
}

// meshLoad is the scenario's load around windows.load: warm-up and trim before it, and after it trimEnd or the rest
// of load.duration, whichever is longer.
func meshLoad(s *Scenario) *LoadPolicy {
	l, window := s.Spec.Load, s.Spec.Windows.Load.Duration
	warm := l.WarmUp.Duration + l.TrimStart.Duration
	return &LoadPolicy{Window: window, WarmUp: l.WarmUp.Duration, TrimStart: l.TrimStart.Duration,
		CoolDown: max(l.TrimEnd.Duration, l.Duration.Duration-warm-window)}
}

// transitionCases are topology topo's moves (spec.transitions), each once per repetition, after its mesh cases: a
// move starts from its From mode (switched and verified like a mesh case's mode) and measures the move to Mode
// under load, recorded per second. IDs: <topology>.<from>-to-<to>.q<qps>.r<repetition>.
func transitionCases(s *Scenario, topo Topology) []Case {
	tr := s.Spec.Transitions
	load := LoadPolicy{Window: tr.Before.Duration + tr.Budget.Duration + tr.After.Duration}
	return underLoadCases(s, len(tr.Moves), load, func(i, rep int, pol CasePolicy) Case {
		m := tr.Moves[i]
		pol.Transition = &TransitionPolicy{Before: tr.Before.Duration, Budget: tr.Budget.Duration}
		return Case{Kind: CaseTransition, Topology: topo, From: m.From, Mode: m.To, QPS: tr.QPS, Repetition: rep,
			ID: fmt.Sprintf("%s.%s.q%s.r%d", topo.Name, m, tr.QPS, rep), Policy: pol}
	})
}

// underLoadCases are n changes under load (moves, deny policies), each once per repetition, in order: build makes
// case i of repetition rep from a mesh case's policy whose load is load, recorded per second.
func underLoadCases(s *Scenario, n int, load LoadPolicy, build func(i, rep int, pol CasePolicy) Case) []Case {
	var out []Case
	for rep := 1; rep <= s.Spec.Windows.Repetitions; rep++ {
		for i := range n {
			pol := meshPolicy(s, false)
			l := load
			l.PerSecond = true
			pol.Load = &l
			out = append(out, build(i, rep, pol))
		}
	}
	return out
}

// caseID builds the stable case ID.
func caseID(topology string, a arm, q QPS, rep int) string {
	return fmt.Sprintf("%s.%s.q%s.r%d", topology, a, q, rep)
}

// arm is what the plan interleaves: a mode, plain or with one of its variants.
type arm struct {
	mode    Mode
	variant string
}

// String is the arm in a case ID: "sidecar", or "sidecar+strict" with a variant.
func (a arm) String() string {
	if a.variant == VariantNone {
		return string(a.mode)
	}
	return string(a.mode) + "+" + a.variant
}

// arms are the modes in order, each followed by its variants in spec order, so a serpentine order keeps a mode's
// variants next to it (a variant switch is a policy change, not a restart).
func arms(modes []Mode, vs []Variant) []arm {
	var out []arm
	for _, m := range modes {
		out = append(out, arm{mode: m})
		for _, v := range variantsFor(vs, m) {
			out = append(out, arm{mode: m, variant: v})
		}
	}
	return out
}

type modeRep struct {
	arm
	rep int
}

// groups orders (arm, repetition) pairs for one topology.
func groups(as []arm, reps int, il Interleave, seed int64) []modeRep {
	var out []modeRep
	if il == InterleaveNone {
		for _, a := range as {
			for r := 1; r <= reps; r++ {
				out = append(out, modeRep{a, r})
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d657368)) // "mesh": a fixed stream per seed
	for r := 1; r <= reps; r++ {
		order := slices.Clone(as)
		switch il {
		case InterleaveRandom:
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		default: // serpentine
			if r%2 == 0 {
				slices.Reverse(order)
			}
		}
		for _, a := range order {
			out = append(out, modeRep{a, r})
		}
	}
	return out
}

// Topology size costs: creating a namespace, and each app pod scheduled and Ready (image cached). A deploy or a
// restarting switch pays them per namespace and per pod of the topology on top of the fixed figure, so multi8 with
// six replicas costs more than single with one.
const (
	estPerNamespace = 5 * time.Second
	estPerPod       = 3 * time.Second
)

// topologySize is the number of app namespaces and pods of a topology: fortio-chain has ChainFor(t).Services() services,
// Bank of Anthos six services and two databases (databases stay at one replica; workloads/bankofanthos.go).
func topologySize(w Workload, t Topology) (namespaces, pods int) {
	services, fixed := 1, 0
	deployments := 0 // pods per replica when they outnumber the placed services
	switch {
	case w.App == AppBankOfAnthos:
		services, fixed = 6, 2
	case w.App == AppBookinfo:
		services, deployments = 4, 6 // four Services placed, six Deployments (reviews v1-v3; workloads/bookinfo.go)
	case w.Chain != nil:
		services = w.ChainFor(t).Services()
	}
	namespaces = 1
	if t.Kind == TopologyMulti {
		namespaces = t.Namespaces
		if namespaces <= 0 {
			namespaces = services + fixed
		}
	}
	return namespaces, max(services, deployments)*max(t.Replicas, 1) + fixed
}

func estimate(s *Scenario, cases []Case) (time.Duration, string) {
	var total time.Duration
	add := func(ds ...time.Duration) { total = satSum(append(ds, total)...) }
	guard := assumedGuard(s)
	// The runner keeps the load running one guard after its window: the cool-down is at least the guard.
	moreCoolDown := max(0, guard-meshLoad(s).CoolDown)
	var prev *Case
	for i := range cases {
		c := &cases[i]
		namespaces, pods := topologySize(s.Spec.Workload, c.Topology)
		size := satSum(satMul(estPerNamespace, namespaces), satMul(estPerPod, pods))
		if prev == nil || prev.Topology.Name != c.Topology.Name {
			if prev != nil {
				add(estTeardown)
			}
			add(estDeploy, size)
		} else if c.Switch {
			switch {
			case needsRestart(prev.Mode, c.StartMode()) || c.Policy.RestartApp:
				add(estRestartSwitch, satMul(estPerPod, pods))
			case prev.Mode != c.StartMode():
				add(estLabelSwitch)
			}
			if c.Variant != prev.Variant {
				add(estVariant)
			}
		}
		if c.Switch {
			if c.StartMode() == ModeWaypoint {
				waypoints := namespaces
				if s.Spec.Waypoint.Scope == WaypointShared {
					waypoints = 1
				}
				add(satMul(estWaypoint, waypoints))
			}
			add(s.Spec.Windows.Settle.Duration)
		}
		if c.Idle {
			add(s.Spec.Windows.Idle.Duration, guard)
		}
		if c.Kind == CaseTransition || c.Kind == CaseEnforce { // the load runs its whole window; the change happens inside it
			add(c.Policy.Load.Window)
		} else {
			add(s.Spec.Load.Duration.Duration, moreCoolDown, estCollect)
		}
		prev = c
	}
	if prev != nil {
		add(estTeardown)
	}
	note := fmt.Sprintf("assumes %s per deploy plus %s per namespace and %s per app pod, %s plus %s per pod per restarting switch, %s per label-only switch, %s per waypoint, %s per variant switch, %s collection per case, a guard of %s (two median sample spacings, measured by the run) after each idle window and as the least cool-down",
		estDeploy, estPerNamespace, estPerPod, estRestartSwitch, estPerPod, estLabelSwitch, estWaypoint, estVariant, estCollect, guard)
	return total, note
}

// assumedGuard is the guard the plan assumes between a window and a load's start or stop (the runner keeps the one the
// collector measures: two median sample spacings): estGuard, or the configured cAdvisor scrape interval when longer.
func assumedGuard(s *Scenario) time.Duration {
	return max(estGuard, s.Spec.Prometheus.ScrapeInterval.Duration)
}

// satSum adds non-negative durations, saturating at the largest Duration instead of wrapping to a negative one.
func satSum(ds ...time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		if d > 0 && t > math.MaxInt64-d {
			return math.MaxInt64
		}
		t += d
	}
	return t
}

// satMul multiplies a non-negative duration by a count, saturating like satSum.
func satMul(d time.Duration, n int) time.Duration {
	if n <= 0 || d <= 0 {
		return 0
	}
	if d > time.Duration(math.MaxInt64/int64(n)) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// Summary is the one-line description of the plan's size.
func (p Plan) Summary() string {
	topos, modes, variants, loads, reps, moves := map[string]bool{}, map[Mode]bool{}, map[string]bool{}, map[string]bool{}, 0, 0
	for _, c := range p.Cases {
		if c.Kind == CaseTransition || c.Kind == CaseEnforce {
			moves++
			continue
		}
		if c.Variant != VariantNone {
			variants[c.Variant] = true
		}
		topos[c.Topology.Name], modes[c.Mode], loads[c.QPS.String()] = true, true, true
		reps = max(reps, c.Repetition)
	}
	cases := fmt.Sprintf("%d cases", len(p.Cases))
	if moves > 0 {
		cases = fmt.Sprintf("%d cases + %d changes under load", len(p.Cases)-moves, moves)
	}
	with := ""
	if len(variants) > 0 {
		with = fmt.Sprintf(" (+ %d variant(s))", len(variants))
	}
	return fmt.Sprintf("%d mode(s)%s x %d topology(ies) x %d load level(s) x %d repetition(s) = %s, %d mode switches (%d restarting), estimated %s",
		len(modes), with, len(topos), len(loads), reps, cases, p.ModeSwitches, p.Restarts, humanDuration(p.Estimate))
}

// humanDuration renders e.g. "2h05m" or "4m30s".
func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	default:
		return fmt.Sprintf("%ds", sec)
	}
}

// Table renders the plan for humans: one row per case, deterministic.
func (p Plan) Table() string {
	var b strings.Builder
	if len(p.Cases) > 0 {
		fmt.Fprintf(&b, "Plan for scenario %q (interleave %s, seed %d)\n", p.Scenario, p.Interleave, p.Seed)
		fmt.Fprintf(&b, "%s\n%s\n\n", p.Summary(), p.EstimateNote)
		rows := [][]string{{"#", "CASE ID", "TOPOLOGY", "MODE", "QPS", "REP", "SWITCH", "IDLE"}}
		for _, c := range p.Cases {
			mode := arm{c.Mode, c.Variant}.String()
			switch c.Kind {
			case CaseTransition:
				mode = string(c.From) + " -> " + mode
			case CaseEnforce:
				mode += " (deny policy)"
			}
			rows = append(rows, []string{fmt.Sprint(c.Index), c.ID, c.Topology.Name, mode, c.QPS.String(),
				fmt.Sprint(c.Repetition), yesNo(c.Switch), yesNo(c.Idle)})
		}
		writeColumns(&b, rows)
	} else {
		fmt.Fprintf(&b, "Scenario %q has no workload: no mesh benchmark cases (meshbench run needs spec.workload).\n", p.Scenario)
	}
	if p.CNI != nil {
		if len(p.Cases) > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Pod network benchmark (meshbench cni): %d path x test cases, estimated %s\n\n", len(p.CNI.Cases), humanDuration(p.CNI.Estimate))
		rows := [][]string{{"#", "CASE ID", "PATH", "TEST", "SAMPLES"}}
		for i, c := range p.CNI.Cases {
			rows = append(rows, []string{fmt.Sprint(i + 1), c.ID, string(c.Path), string(c.Test), fmt.Sprint(c.Samples)})
		}
		writeColumns(&b, rows)
	}
	return b.String()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "-"
}

// writeColumns left-aligns cells in columns separated by two spaces.
func writeColumns(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			line.WriteString(c + strings.Repeat(" ", widths[i]-len(c)))
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
