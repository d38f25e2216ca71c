package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// SourcePodSpec is the source of allocation samples: what a component's pods asked for, read from their specs, in
// the unit of the usage beside them (StatRequest, StatLimit, StatNoLimit; docs/results.md).
const SourcePodSpec = "pod-spec"

// UsageStat reports whether a cpu or memory sample's stat is a usage statistic (min, max, avg) rather than an
// allocation one (request, limit, no-limit).
func UsageStat(stat Stat) bool { return stat == StatMin || stat == StatMax || stat == StatAvg }

// Metrics, stats and units Summarize derives from.
const (
	sourceDerive      = "derived" // Sample.Source of the derived mesh total
	perKRPSUnit  Unit = "/krps"   // appended to the resource unit, e.g. "millicores/krps"
)

// meshParts are the components whose "avg" resource samples add up to the derived ComponentMesh total.
var meshParts = []Component{ComponentSidecar, ComponentZtunnel, ComponentWaypoint, ComponentIstiod}

// MeshParts are the components the derived mesh total adds up (a copy).
func MeshParts() []Component { return slices.Clone(meshParts) }

// perKRPSComponents are normalised by the achieved request rate.
var perKRPSComponents = []Component{ComponentApp, ComponentSidecar, ComponentZtunnel, ComponentWaypoint, ComponentMesh}

// Components and windowOrder rank known names in Series order; unknown names sort after them, alphabetically.
var (
	windowOrder = []string{WindowIdle, WindowLoad, WindowTest}
)

// ModePair names a comparison: Delta = Other - Base.
type ModePair struct {
	Base  Mode `json:"base"`
	Other Mode `json:"other"`
}

// DefaultPairs returns the standard comparisons among modes (empty and repeated names ignored): every other mode
// against "none" when "none" is present, in the order of modes; then "ambient" and "waypoint" against "sidecar" when
// "sidecar" is present (study A's comparison), in the order of modes.
func DefaultPairs(modes []Mode) []ModePair {
	var uniq []Mode
	for _, m := range modes {
		if m != "" && !slices.Contains(uniq, m) {
			uniq = append(uniq, m)
		}
	}
	var pairs []ModePair
	if slices.Contains(uniq, ModeNone) {
		for _, m := range uniq {
			if m != ModeNone {
				pairs = append(pairs, ModePair{Base: ModeNone, Other: m})
			}
		}
	}
	if slices.Contains(uniq, ModeSidecar) {
		for _, m := range uniq {
			if m == ModeAmbient || m == ModeWaypoint {
				pairs = append(pairs, ModePair{Base: ModeSidecar, Other: m})
			}
		}
	}
	return pairs
}

// SummaryOptions tunes Summarize. The zero value is the default.
type SummaryOptions struct {
	// Confidence is the level of every interval; 0 means DefaultConfidence (0.95). A value outside (0, 1) is replaced
	// by the default with a warning.
	Confidence float64
	// Pairs are the mode comparisons for Deltas; nil means DefaultPairs of the modes in the samples, in first-seen order.
	Pairs []ModePair
}

// Summarize computes summary.json from samples and case records alone. It is pure and deterministic (never depends
// on map order). What it keeps, the series order, the mesh total, deltas, perKRPS, the shared split and the
// per-workload series are specified in docs/results.md ("How Summarize computes it").
func Summarize(meta RunMeta, samples []Sample, cases []CaseResult, opts SummaryOptions) Summary {
	sz := summarizer{warned: map[string]bool{}}
	conf := opts.Confidence
	switch {
	case conf == 0:
		conf = DefaultConfidence
	case !validConfidence(conf):
		sz.warn(fmt.Sprintf("confidence %v is not in (0, 1): using %v", conf, DefaultConfidence))
		conf = DefaultConfidence
	}

	sz.tq = memoQuantile(conf)

	latest, order := latestCases(cases)
	kept, perWorkload := sz.filter(samples, latest)
	rank := newRanker(kept)
	rank.add(perWorkload)
	mesh := sz.meshTotals(kept)
	rank.add(mesh)
	kept = append(kept, mesh...)
	rps := sz.achievedRPS(kept)
	kept, varied := splitVariants(kept)
	perWorkload, _ = splitVariants(perWorkload)

	series := sz.series(groupObservations(kept, nil), rank)
	perKRPS := sz.series(groupObservations(kept, sz.perKRPSValue(rps)), rank)
	sz.checkMeshParts(series)
	shared := sz.sharedCosts(kept, rank, rps)
	wlTotals := sz.workloadTotals(perWorkload)
	rank.add(wlTotals)
	workloads := sz.series(groupObservations(append(perWorkload, wlTotals...), nil), rank)

	pairs := opts.Pairs
	if pairs == nil {
		pairs = DefaultPairs(rank.mode.seen)
	}
	sum := Summary{
		SchemaVersion: SchemaVersion,
		RunID:         meta.RunID,
		Notes:         meta.Notes,
		Confidence:    conf,
		Series:        series,
		Deltas:        sz.deltas(series, pairs),
		PerKRPS:       perKRPS,
		PerKRPSDeltas: sz.deltas(perKRPS, pairs),
		Shared:        shared,
		Workloads:     workloads,
	}
	if len(workloads) > 0 {
		sum.WorkloadDeltas = sz.deltas(workloads, pairs)
	}
	if len(varied) > 0 {
		sum.Variants = sz.series(groupObservations(varied, nil), rank)
		sum.VariantDeltas = sz.variantDeltas(series, sum.Variants)
		sum.VariantPerKRPS = sz.series(groupObservations(varied, sz.perKRPSValue(rps)), rank)
		sum.VariantPerKRPSDeltas = sz.variantDeltas(perKRPS, sum.VariantPerKRPS)
	}
	for _, id := range order {
		sum.Cases = append(sum.Cases, latest[id])
	}
	if meta.Cluster.Istio != nil {
		sum.DataPlane, sum.DataPlanes = meta.Cluster.Istio.DataPlane, meta.Cluster.Istio.DataPlanes
	}
	sum.Warnings = sz.warnings
	return sum
}

type summarizer struct {
	tq       func(df float64) float64 // memoised t critical value at the summary's confidence
	warnings []string
	warned   map[string]bool
	parts    map[Key][]string // mesh series key -> contributing components, one signature per observation
}

func (sz *summarizer) warn(msg string) {
	if !sz.warned[msg] {
		sz.warned[msg] = true
		sz.warnings = append(sz.warnings, msg)
	}
}

func latestCases(cases []CaseResult) (map[string]CaseResult, []string) {
	latest := make(map[string]CaseResult, len(cases))
	var order []string
	for _, c := range cases {
		if _, ok := latest[c.CaseID]; !ok {
			order = append(order, c.CaseID)
		}
		latest[c.CaseID] = c
	}
	return latest, order
}

// item is a usable sample and its Series key, computed once.
type item struct {
	*Sample
	key Key
}

// filter returns the usable samples, in input order: the per-workload ones apart.
func (sz *summarizer) filter(samples []Sample, latest map[string]CaseResult) (kept, perWorkload []item) {
	kept = make([]item, 0, len(samples))
	excluded := map[string]int{}
	var excludedOrder []string
	for i := range samples {
		s := &samples[i]
		if c, ok := latest[s.CaseID]; ok && c.Status != StatusOK {
			if excluded[s.CaseID] == 0 {
				excludedOrder = append(excludedOrder, s.CaseID)
			}
			excluded[s.CaseID]++
			continue
		}
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			sz.warn(fmt.Sprintf("case %q: ignored non-finite %s %s %s value %v", s.CaseID, s.Component, s.Metric, s.Stat, s.Value))
			continue
		}
		if s.Component == ComponentMesh || s.Component == ComponentWorkloadTotal {
			sz.warn(fmt.Sprintf("case %q: ignored input samples of component %q: Summarize derives it", s.CaseID, s.Component))
			continue
		}
		if IsWorkloadComponent(s.Component) {
			perWorkload = append(perWorkload, item{s, keyOf(s)})
			continue
		}
		kept = append(kept, item{s, keyOf(s)})
	}
	for _, id := range excludedOrder {
		c := latest[id]
		sz.warn(fmt.Sprintf("case %q is %s: its %d samples are left out", id, c.Status, excluded[id]))
	}
	return kept, perWorkload
}

// windowID identifies one measured window of one attempt of one case.
type windowID struct {
	caseID     string
	attempt    int
	kind       string
	start, end time.Time
}

func windowOf(s *Sample) windowID {
	return windowID{s.CaseID, s.Attempt, s.Window.Kind, s.Window.Start, s.Window.End}
}

// meshTotals derives the ComponentMesh samples; see Summarize.
func (sz *summarizer) meshTotals(kept []item) []item {
	type groupKey struct {
		win    windowID
		metric Metric
	}
	type group struct {
		total *Sample
		units []Unit
		parts []Component
	}
	groups := map[groupKey]*group{}
	var order []groupKey
	for _, s := range kept {
		if s.Stat != StatAvg || (s.Metric != MetricCPU && s.Metric != MetricMemory) || !slices.Contains(meshParts, s.Component) {
			continue
		}
		k := groupKey{windowOf(s.Sample), s.Metric}
		g := groups[k]
		if g == nil {
			total := *s.Sample
			total.Component, total.Source, total.Value, total.Labels = ComponentMesh, sourceDerive, 0, nil
			g = &group{total: &total}
			groups[k] = g
			order = append(order, k)
		}
		g.total.Value += s.Value
		if !slices.Contains(g.units, s.Unit) {
			g.units = append(g.units, s.Unit)
		}
		if !slices.Contains(g.parts, s.Component) {
			g.parts = append(g.parts, s.Component)
		}
	}
	sz.parts = map[Key][]string{}
	out := make([]item, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if len(g.units) > 1 {
			sz.warn(fmt.Sprintf("case %q %s window: no mesh %s total: its parts use different units %s",
				k.win.caseID, k.win.kind, k.metric, join(g.units, ", ")))
			continue
		}
		SortComponents(g.parts)
		it := item{g.total, keyOf(g.total)}
		sz.parts[it.key] = append(sz.parts[it.key], join(g.parts, "+"))
		out = append(out, it)
	}
	return out
}

// checkMeshParts warns about mesh series whose observations sum different components.
func (sz *summarizer) checkMeshParts(series []Series) {
	for _, s := range series {
		sigs := sz.parts[s.Key]
		if len(sigs) == 0 {
			continue
		}
		var uniq []string
		for _, sig := range sigs {
			if !slices.Contains(uniq, sig) {
				uniq = append(uniq, sig)
			}
		}
		if len(uniq) > 1 {
			sz.warn(fmt.Sprintf("mesh %s total of %s: repetitions sum different components (%s); check for missing samples",
				s.Metric, describeKey(s.Key), strings.Join(uniq, " vs ")))
		}
	}
}

// MinAchievedRPS is the lowest achieved rate per-krps figures are computed from (the lowest load level a scenario
// may ask for is 0.1 qps): below it, dividing by the rate gives figures without meaning, or +Inf.
const MinAchievedRPS = 0.01

// achievedRPS returns the achieved request rate of a load-window sample's case: the sum of its loadgen qps values
// in the sample's window, or in the case's only qps window; ok=false (with a warning) when there is none or it is
// below MinAchievedRPS.
func (sz *summarizer) achievedRPS(kept []item) func(*Sample) (float64, bool) {
	rps := map[windowID]float64{}
	caseWindows := map[string][]windowID{}
	for _, s := range kept {
		// Not a load target's part: a run with several targets adds each one's qps, which its unlabelled sample sums.
		if s.Component != ComponentLoadgen || s.Metric != MetricQPS || s.Stat != StatValue || s.Unit != UnitRPS || IsLoadTargetPart(s.Labels) {
			continue
		}
		w := windowOf(s.Sample)
		if _, ok := rps[w]; !ok {
			caseWindows[s.CaseID] = append(caseWindows[s.CaseID], w)
		}
		rps[w] += s.Value
	}
	return func(s *Sample) (float64, bool) {
		w := windowOf(s)
		r, ok := rps[w]
		if !ok {
			switch ws := caseWindows[s.CaseID]; len(ws) {
			case 0:
				sz.warn(fmt.Sprintf("case %q: no per-krps figures: no %s %s %s sample in %s",
					s.CaseID, ComponentLoadgen, MetricQPS, StatValue, UnitRPS))
				return 0, false
			case 1:
				r = rps[ws[0]]
			default:
				sz.warn(fmt.Sprintf("case %q: no per-krps figures: %d %s %s windows, none is the window of its %s sample",
					s.CaseID, len(ws), ComponentLoadgen, MetricQPS, s.Component))
				return 0, false
			}
		}
		if r < MinAchievedRPS {
			sz.warn(fmt.Sprintf("case %q: no per-krps figures: achieved rate is %v rps (below %v rps a per-request figure means nothing)", s.CaseID, r, MinAchievedRPS))
			return 0, false
		}
		return r, true
	}
}

// perKRPSValue returns the value transform for PerKRPS: the normalised value and its unit, or ok=false to skip.
func (sz *summarizer) perKRPSValue(rps func(*Sample) (float64, bool)) func(*Sample) (float64, Unit, bool) {
	return func(s *Sample) (float64, Unit, bool) {
		if s.Window.Kind != WindowLoad || s.Stat != StatAvg || (s.Metric != MetricCPU && s.Metric != MetricMemory) ||
			!slices.Contains(perKRPSComponents, s.Component) {
			return 0, "", false
		}
		r, ok := rps(s)
		if !ok {
			return 0, "", false
		}
		v := s.Value / (r / 1000)
		if !finite(v) {
			sz.warn(fmt.Sprintf("case %q: no per-krps figures: %s %s %v per %v rps is beyond float64", s.CaseID, s.Component, s.Metric, s.Value, r))
			return 0, "", false
		}
		return v, s.Unit + perKRPSUnit, true
	}
}

type observation struct {
	rep   int
	start time.Time
	seq   int
	value float64
}

// groupObservations groups samples by Key. With transform, each sample's value and unit are replaced by what it
// returns, and samples it rejects are skipped.
func groupObservations(kept []item, transform func(*Sample) (float64, Unit, bool)) map[Key][]observation {
	groups := map[Key][]observation{}
	for i, s := range kept {
		k, v := s.key, s.Value
		if transform != nil {
			var unit Unit
			var ok bool
			if v, unit, ok = transform(s.Sample); !ok {
				continue
			}
			k.Unit = unit
		}
		groups[k] = append(groups[k], observation{rep: s.Repetition, start: s.Window.Start, seq: i, value: v})
	}
	return groups
}

// series turns groups into Series in the documented order.
func (sz *summarizer) series(groups map[Key][]observation, rank *ranker) []Series {
	keys := make([]Key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	rank.addUnits(keys)
	slices.SortFunc(keys, rank.compare)
	out := make([]Series, 0, len(keys))
	for _, k := range keys {
		obs := groups[k]
		slices.SortFunc(obs, func(a, b observation) int {
			return cmp.Or(cmp.Compare(a.rep, b.rep), a.start.Compare(b.start), cmp.Compare(a.seq, b.seq))
		})
		values := make([]float64, len(obs))
		for i, o := range obs {
			values[i] = o.value
		}
		mean, sd, ci := meanCI(values, sz.tq)
		out = append(out, Series{Key: k, N: len(values), Mean: mean, Min: slices.Min(values), Max: slices.Max(values),
			StdDev: sd, CI: ci, Values: values})
	}
	return out
}

// deltas compares series between the modes of every pair; see Summarize.
func (sz *summarizer) deltas(series []Series, pairs []ModePair) []Delta {
	index := make(map[Key]*Series, len(series))
	for i := range series {
		index[series[i].Key] = &series[i]
	}
	var out []Delta
	for _, p := range pairs {
		if p.Base == p.Other {
			continue
		}
		for i := range series {
			base := &series[i]
			if base.Mode != p.Base {
				continue
			}
			k := base.Key
			k.Mode = p.Other
			other, ok := index[k]
			if !ok {
				continue
			}
			out = append(out, sz.delta(base, other, p))
		}
	}
	return out
}

func (sz *summarizer) delta(base, other *Series, p ModePair) Delta {
	diff, ci, df, pv := welch(base.Values, other.Values, sz.tq)
	d := Delta{Key: base.Key, Base: p.Base, Other: p.Other, BaseMean: base.Mean, OtherMean: other.Mean, Diff: diff,
		DiffCI: ci, WelchDF: df, PValue: pv}
	d.Key.Mode = ""
	if ci != nil && base.N >= MinIntervalN && other.N >= MinIntervalN {
		d.Significant = ci.Low > 0 || ci.High < 0
	}
	// A base mean near 0 (a figure of 5e-324) makes the percentage +Inf: no percentage then, as for a mean of 0
	// (JSON has no Inf, and "+Inf %" is no finding).
	if pct := 100 * diff / base.Mean; base.Mean != 0 && finite(pct) {
		d.Percent = &pct
		if ci != nil {
			lo, hi := ci.Low*100/base.Mean, ci.High*100/base.Mean
			if finite(lo) && finite(hi) {
				d.PercentCI = &Interval{Low: min(lo, hi), High: max(lo, hi)}
			}
		}
	}
	return d
}

// keyOf is the Series key of a sample.
func keyOf(s *Sample) Key {
	return Key{Topology: s.Topology, Mode: s.Mode, Variant: s.Variant, Load: s.Load, Window: s.Window.Kind, Component: s.Component,
		Metric: s.Metric, Stat: s.Stat, Unit: s.Unit, Labels: CanonicalLabels(s.Labels)}
}

// CanonicalLabels renders labels as "k=v,k=v" sorted by key; '\\', ',' and '=' inside keys and values are escaped
// with a backslash so different label sets never render the same.
func CanonicalLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labelEscaper.Replace(k))
		b.WriteByte('=')
		b.WriteString(labelEscaper.Replace(labels[k]))
	}
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `=`, `\=`)

func describeKey(k Key) string {
	parts := []string{}
	for _, f := range []string{k.Topology, string(k.Mode), k.Variant, k.Load, k.Window, string(k.Component), k.Labels} {
		if f != "" {
			parts = append(parts, f)
		}
	}
	return strings.Join(parts, "/")
}

// firstSeen ranks strings by their first appearance.
type firstSeen[T comparable] struct {
	rank map[T]int
	seen []T
}

func (f *firstSeen[T]) add(v T) {
	if f.rank == nil {
		f.rank = map[T]int{}
	}
	if _, ok := f.rank[v]; !ok {
		f.rank[v] = len(f.seen)
		f.seen = append(f.seen, v)
	}
}

// ranker holds the first-appearance ranks of the Key fields ordered that way.
type ranker struct {
	topology, load, labels firstSeen[string]
	mode                   firstSeen[Mode]
	variant                firstSeen[string]
	metric                 firstSeen[Metric]
	stat                   firstSeen[Stat]
	unit                   firstSeen[Unit]
}

func newRanker(kept []item) *ranker {
	r := &ranker{}
	r.add(kept)
	return r
}

func (r *ranker) add(items []item) {
	for _, it := range items {
		k := it.key
		r.topology.add(k.Topology)
		r.mode.add(k.Mode)
		r.variant.add(k.Variant)
		r.load.add(k.Load)
		r.metric.add(k.Metric)
		r.stat.add(k.Stat)
		r.unit.add(k.Unit)
		r.labels.add(k.Labels)
	}
}

// addUnits ranks units first produced by a transform (per-krps units), in an order independent of map iteration.
func (r *ranker) addUnits(keys []Key) {
	var fresh []Unit
	for _, k := range keys {
		if _, ok := r.unit.rank[k.Unit]; !ok && !slices.Contains(fresh, k.Unit) {
			fresh = append(fresh, k.Unit)
		}
	}
	slices.Sort(fresh)
	for _, u := range fresh {
		r.unit.add(u)
	}
}

func (r *ranker) compare(a, b Key) int {
	return cmp.Or(
		cmp.Compare(r.topology.rank[a.Topology], r.topology.rank[b.Topology]),
		cmp.Compare(r.mode.rank[a.Mode], r.mode.rank[b.Mode]),
		cmp.Compare(r.variant.rank[a.Variant], r.variant.rank[b.Variant]),
		cmp.Compare(r.load.rank[a.Load], r.load.rank[b.Load]),
		compareNames(a.Window, b.Window, windowOrder),
		compareNames(a.Component, b.Component, Components),
		cmp.Compare(r.metric.rank[a.Metric], r.metric.rank[b.Metric]),
		cmp.Compare(r.stat.rank[a.Stat], r.stat.rank[b.Stat]),
		cmp.Compare(r.unit.rank[a.Unit], r.unit.rank[b.Unit]),
		cmp.Compare(r.labels.rank[a.Labels], r.labels.rank[b.Labels]),
	)
}

// compareNames orders names by their index in known, unknown names after them alphabetically.
func compareNames[T ~string](a, b T, known []T) int {
	ia, ib := slices.Index(known, a), slices.Index(known, b)
	switch {
	case ia >= 0 && ib >= 0:
		return cmp.Compare(ia, ib)
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return cmp.Compare(a, b)
}
