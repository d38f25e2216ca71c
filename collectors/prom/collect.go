package prom

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// Sources of resource samples.
const (
	SourcePrometheus = "prometheus"
	SourceKubelet    = "kubelet-resource"
)

// QueryWindow cuts a measured window to the milliseconds inside it (Prometheus' timestamp resolution): the figures
// are interpolated at the edges, so the window is measured as it ran. A window under one second is refused. It is pure.
func QueryWindow(w results.Window) (results.Window, error) {
	start := w.Start.Truncate(time.Millisecond)
	if start.Before(w.Start) {
		start = start.Add(time.Millisecond)
	}
	end := w.End.Truncate(time.Millisecond)
	if end.Sub(start) < time.Second {
		return w, fmt.Errorf("window %s..%s is shorter than one second", w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano))
	}
	return results.Window{Kind: w.Kind, Start: start.UTC(), End: end.UTC()}, nil
}

// Collector reads the catalog's statistics from Prometheus.
type Collector struct {
	API      API
	Interval Interval
	Retry    Retry
	// Catalog is the signal set; nil means Catalog().
	Catalog []Signal
	// IngestDelay is how long after a window's end the data is complete in Prometheus; 0 means two steps + 2 s: the
	// first sample after the end (the counters are interpolated at the end from it) is stamped up to a step after
	// the end and scraped up to a step after its stamp.
	IngestDelay time.Duration
	// Clock times the wait for the data (nil = the wall clock); tests pass a fake.
	Clock clock.Clock
}

// ReadyAt is when the data of a window ending at end is in Prometheus.
func (c *Collector) ReadyAt(end time.Time) time.Time {
	d := c.IngestDelay
	if d <= 0 {
		d = Params{Step: c.Interval.Step(), Guard: c.Interval.Guard()}.after() + 2*time.Second
	}
	return end.Add(d)
}

// QueryErrors is Collect's error when queries failed (after their retries) or gave an unusable answer: the case is
// not measured, though Collected keeps the other queries' samples for the record. A query without data is only a
// warning (CheckRequired decides).
type QueryErrors struct {
	// Kind is the window kind (idle, load).
	Kind string
	// Queries is how many queries ran; Failed are the ones that failed, each naming the component and the figure.
	Queries int
	Failed  []error
}

func (e *QueryErrors) Error() string {
	// A Prometheus that is down fails every query alike: three say why, the count says how many.
	const shown = 3
	var msg []string
	for i, err := range e.Failed {
		if i == shown {
			msg = append(msg, fmt.Sprintf("and %d more", len(e.Failed)-shown))
			break
		}
		msg = append(msg, err.Error())
	}
	return fmt.Sprintf("%d of %d prometheus queries for the %s window failed, their figures are missing (window incomplete): %s",
		len(e.Failed), e.Queries, e.Kind, strings.Join(msg, "; "))
}

// Unwrap gives the failures to errors.Is and errors.As.
func (e *QueryErrors) Unwrap() []error { return e.Failed }

// Collect waits until the window's data is stored, then runs one query per component and catalog term (per test
// node, one more per term). Components without data and Prometheus' own warnings are Warnings; any failed query
// makes the error a *QueryErrors, so a case never passes with a figure silently missing.
func (c *Collector) Collect(ctx context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
	qw, err := QueryWindow(w)
	if err != nil {
		return podset.Collected{}, err
	}
	out := podset.Collected{Window: qw}
	step, rate := c.Interval.Step(), c.Interval.RateRange()
	length := qw.End.Sub(qw.Start)
	if length < step {
		return out, fmt.Errorf("window of %s is shorter than the scrape step %s", length, step)
	}
	if length < rate {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s window %s is shorter than the rate range %s: the CPU figures cover the %s up to the window's end",
			w.Kind, length, rate, rate))
	}
	now := time.Now()
	if c.Clock != nil {
		now = c.Clock.Now()
	}
	if d := c.ReadyAt(qw.End).Sub(now); d > 0 {
		out.IngestWait = d
	}
	if err := kube.SleepUntil(ctx, c.Clock, c.ReadyAt(qw.End)); err != nil {
		return out, err
	}
	cat := c.Catalog
	if cat == nil {
		cat = Catalog()
	}
	var t tally
	for _, set := range sets {
		out.Warnings = append(out.Warnings, set.Notes...)
		base := Params{Rate: rate, Window: length, Step: step, Guard: c.Interval.Guard()}
		if set.Component == results.ComponentNode {
			if err := c.collectNodes(ctx, &out, &t, set, w.Kind, base); err != nil {
				return out, err
			}
			continue
		}
		// metrics_path: kube-prometheus-stack scrapes every kubelet endpoint under one job (job="kubelet") and tells
		// them apart by this label; /metrics/resource exports the same container series as cAdvisor. Where the label
		// does not exist the matcher matches everything.
		extra := []string{`metrics_path!="/metrics/resource"`}
		if c.Interval.Job != "" {
			extra = append(extra, "job="+strconv.Quote(c.Interval.Job))
		}
		base.Selectors = []string{set.Selector(extra...)}
		if err := c.runCatalog(ctx, &out, &t, c.direct(&t), cat, base, set.Component, fmt.Sprintf("%d pods", set.PodCount()), nil, w.Kind, set.Pods, set.Workloads); err != nil {
			return out, err
		}
	}
	// Whether Prometheus scraped every target all through the window: an outage leaves no samples, and the
	// figures would quietly cover less than the window (interpolated over the hole) or miss a burst.
	incomplete, err := c.checkScrapes(ctx, &out, &t, Params{Rate: rate, Window: length, Step: step})
	if err != nil {
		return out, err
	}
	out.Warnings = append(out.Warnings, consistencyWarnings(out.Samples)...)
	var errs []error
	if len(t.failed) > 0 {
		errs = append(errs, &QueryErrors{Kind: w.Kind, Queries: t.queries, Failed: t.failed})
	}
	if len(incomplete) > 0 {
		errs = append(errs, &IncompleteError{Window: qw, Figures: incomplete})
	}
	switch len(errs) {
	case 0:
		return out, nil
	case 1:
		return out, errs[0]
	}
	return out, fmt.Errorf("%w; %w", errs[0], errs[1])
}

// tally counts the catalog queries of one Collect and keeps the failed ones.
type tally struct {
	queries int
	failed  []error
	// figures are the figures computed, with the targets of their series, for the completeness check.
	figures []figureRef
}

// fetcher answers one of runCatalog's range selectors evaluated at at.
type fetcher func(ctx context.Context, expr string, at time.Time) (model.Value, promv1.Warnings, error)

// direct is the fetcher that asks Prometheus, counting the queries in t.
func (c *Collector) direct(t *tally) fetcher {
	return func(ctx context.Context, expr string, at time.Time) (model.Value, promv1.Warnings, error) {
		t.queries++
		return query(ctx, c.API, c.Retry, expr, at)
	}
}

// runCatalog appends min, max and avg of every signal of cat from one fetch of raw series per term and selector (of a
// pod set only its pods' series; per workload too when workloads is set). Missing data is a warning, a failed query
// an entry of t.failed; only a render error or the end of ctx stops it.
func (c *Collector) runCatalog(ctx context.Context, out *podset.Collected, t *tally, fetch fetcher, cat []Signal, p Params, component results.Component, what string, labels map[string]string, kind string, pods map[string][]string, workloads map[string]string) error {
	at, _ := p.Span(out.Window.End)
	var members map[string]bool
	if pods != nil {
		members = podKeys(pods)
	}
	for _, sig := range cat {
		ss, ok, err := fetchSignal(ctx, out, t, fetch, sig, p, at, component, what)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if pods != nil {
			ss = inSet(ss, members)
		}
		t.noteTargets(component, sig.Name, what, ss)
		st, ok := signalStats(sig, ss, out.Window, p)
		if !ok {
			out.Warnings = append(out.Warnings, fmt.Sprintf("no %s data for %s (%s) in the %s window", sig.Name, component, what, kind))
			continue
		}
		if pods != nil {
			if miss := unsampled(pods, ss, st.Start, out.Window.End, p.Rate); len(miss) > 0 {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s %s: pod(s) %s running but without a %s sample in the %s window %s..%s: their %s is missing from the figures",
					component, sig.Name, strings.Join(miss, ", "), sig.Name, kind, st.Start.Format(time.TimeOnly), out.Window.End.Format(time.TimeOnly), sig.Name))
			}
		}
		out.Samples = append(out.Samples, signalSamples(sig, out.Window, component, st, labels)...)
		if wc, ok := results.ByWorkload(component); ok && len(workloads) > 0 {
			groups := groupByWorkload(ss, workloads)
			for _, key := range slices.Sorted(maps.Keys(groups)) {
				// A workload without a sample in the window is already named, pod by pod, by the warning above.
				if wst, ok := signalStats(sig, groups[key], out.Window, p); ok {
					out.Samples = append(out.Samples, signalSamples(sig, out.Window, wc, wst, map[string]string{results.LabelWorkload: key})...)
				}
			}
		}
	}
	return nil
}

// fetchSignal fetches the raw series of sig's selectors rendered at p, evaluated at at; Prometheus' warnings go to
// out, a failed query to t.failed (ok false). The error is a render error or ctx's.
func fetchSignal(ctx context.Context, out *podset.Collected, t *tally, fetch fetcher, sig Signal, p Params, at time.Time, component results.Component, what string) ([]Series, bool, error) {
	exprs, signs, err := sig.Render(p)
	if err != nil {
		return nil, false, err
	}
	var ss []Series
	for i, expr := range exprs {
		v, warns, err := fetch(ctx, expr, at)
		for _, wn := range warns {
			out.Warnings = append(out.Warnings, fmt.Sprintf("prometheus warning for %s %s: %s", component, sig.Name, wn))
		}
		if err == nil {
			if _, ok := v.(model.Matrix); !ok && v != nil {
				err = fmt.Errorf("want a range vector, got %s", v.Type())
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			t.failed = append(t.failed, fmt.Errorf("%s %s (%s): %w", component, sig.Name, what, err))
			return nil, false, nil
		}
		ss = append(ss, SeriesOf(v, signs[i], sig.Kind == KindCounter)...)
	}
	return ss, true, nil
}

// signalStats are the window statistics of sig's series ss in w: a counter's rates, a gauge's values. Pure.
func signalStats(sig Signal, ss []Series, w results.Window, p Params) (WindowStats, bool) {
	if sig.Kind == KindCounter {
		return CounterStats(ss, w.Start, w.End, p.Rate, p.Step, p.Guard)
	}
	return gaugeStats(ss, w.Start, w.End, p.Rate)
}

// signalSamples are the min, max and avg of st as component's samples of sig in window w, scaled into sig's unit. Pure.
func signalSamples(sig Signal, w results.Window, component results.Component, st WindowStats, labels map[string]string) []results.Sample {
	var out []results.Sample
	for _, f := range []struct {
		stat results.Stat
		v    float64
	}{{results.StatMin, st.Min}, {results.StatMax, st.Max}, {results.StatAvg, st.Avg}} {
		out = append(out, results.Sample{
			Window: w, Source: SourcePrometheus, Component: component,
			Metric: sig.Metric, Stat: f.stat, Value: f.v * sig.Scale, Unit: sig.Unit, Labels: maps.Clone(labels),
		})
	}
	return out
}

// podKeys is the set of the pods' keys (podset.PodKey).
func podKeys(pods map[string][]string) map[string]bool {
	keys := map[string]bool{}
	for ns, names := range pods {
		for _, n := range names {
			keys[podset.PodKey(ns, n)] = true
		}
	}
	return keys
}

// inSet keeps the series of the set's pods (members: podset.PodKey), in place and stably in namespace order: the
// one selector across a set's namespaces also matches a same-named pod in another of them. It is pure.
func inSet(ss []Series, members map[string]bool) []Series {
	out := ss[:0]
	for _, s := range ss {
		if members[podset.PodKey(s.Namespace, s.Pod)] {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Series) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out
}

// groupByWorkload splits series by the workload of their pod (workloads: podset.PodKey -> workload key); series of a
// pod of no workload are in no group. It is pure.
func groupByWorkload(ss []Series, workloads map[string]string) map[string][]Series {
	out := map[string][]Series{}
	for _, s := range ss {
		if w, ok := workloads[podset.PodKey(s.Namespace, s.Pod)]; ok {
			out[w] = append(out[w], s)
		}
	}
	return out
}

// Scalar extracts the single value of an instant query result: a one-element vector or a scalar. An empty vector
// (no data) gives ok == false; so does NaN. More than one element is an error (every catalog query sums). It is pure.
func Scalar(v model.Value) (float64, bool, error) {
	var f float64
	switch t := v.(type) {
	case nil:
		return 0, false, nil
	case *model.Scalar:
		f = float64(t.Value)
	case model.Vector:
		switch len(t) {
		case 0:
			return 0, false, nil
		case 1:
			f = float64(t[0].Value)
		default:
			return 0, false, fmt.Errorf("want one series, got %d", len(t))
		}
	default:
		return 0, false, fmt.Errorf("want a vector or scalar, got %s", v.Type())
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, nil
	}
	return f, true, nil
}
