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

	"github.com/prometheus/common/model"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// scrapeTargetKey is the scrape target a series came from: job, instance and, where the series carry it, metrics_path
// (one kubelet's cadvisor, resource and probes endpoints share job and instance). Read off the series, never assumed.
type scrapeTargetKey struct{ Job, Instance, MetricsPath string }

// targetOf is the target of a series' labels. It is pure.
func targetOf(m model.Metric) scrapeTargetKey {
	return scrapeTargetKey{Job: string(m["job"]), Instance: string(m["instance"]), MetricsPath: string(m["metrics_path"])}
}

func (k scrapeTargetKey) String() string {
	s := "job=" + strconv.Quote(k.Job) + " instance=" + strconv.Quote(k.Instance)
	if k.MetricsPath != "" {
		s += " metrics_path=" + strconv.Quote(k.MetricsPath)
	}
	return s
}

// Gap is a stretch of a window without a successful scrape of a target.
type Gap struct{ From, To time.Time }

// Duration is the gap's length.
func (g Gap) Duration() time.Duration { return g.To.Sub(g.From) }

// gapFactor is how many scrape spacings apart two successful scrapes may be before the time between them is a gap:
// one missed scrape (2 spacings) is bridged like sparse housekeeping, two in a row are a hole. Prometheus writes an
// up sample per attempted scrape (prometheus/prometheus docs/concepts/jobs_instances.md, v2.42.0; docs/measurement.md).
const gapFactor = 2.5

// scrapeGaps are the stretches of [start, end] without a successful scrape (ok: times of up == 1, sorted; all: every
// up sample's time, whose lower-quartile spacing is the scrape spacing, fallback with fewer than two). The edges
// count as scrapes; no successful scrape is one gap over the window. It is pure.
func scrapeGaps(ok, all []float64, start, end time.Time, fallback time.Duration) (gaps []Gap, spacing time.Duration) {
	spacing = fallback
	if len(all) >= 2 {
		d := make([]float64, 0, len(all)-1)
		for i := 1; i < len(all); i++ {
			if dt := all[i] - all[i-1]; dt > 0 {
				d = append(d, dt)
			}
		}
		if len(d) > 0 {
			slices.Sort(d)
			spacing = time.Duration(d[len(d)/4] * float64(time.Second)).Round(time.Millisecond)
		}
	}
	s0, e := float64(start.UnixMilli())/1000, float64(end.UnixMilli())/1000
	pts := []float64{s0}
	for _, t := range ok {
		if t > s0 && t < e {
			pts = append(pts, t)
		}
	}
	pts = append(pts, e)
	limit := gapFactor * spacing.Seconds()
	for i := 1; i < len(pts); i++ {
		if pts[i]-pts[i-1] > limit {
			gaps = append(gaps, Gap{From: fromSeconds(pts[i-1]), To: fromSeconds(pts[i])})
		}
	}
	return gaps, spacing
}

func fromSeconds(sec float64) time.Time {
	return time.UnixMilli(int64(math.Round(sec * 1000))).UTC()
}

// Incomplete is one figure of a window that Prometheus did not scrape all through: its component and signal, what
// the component is (e.g. "3 pods"), and the target with the most time missing (of Targets with gaps).
type Incomplete struct {
	Component, Figure, What string
	Target                  scrapeTargetKey
	Spacing                 time.Duration // the target's scrape spacing
	Gaps                    []Gap
	Targets                 int // targets of the figure with a gap
}

// Missing is the gaps' total length.
func (m Incomplete) Missing() time.Duration {
	var d time.Duration
	for _, g := range m.Gaps {
		d += g.Duration()
	}
	return d
}

// IncompleteError is Collect's error when Prometheus has no samples for part of a window (down, paused, restarting,
// a target not scraped): the figures would cover less than was measured, so the case is not measured. Collected
// still holds the samples, for the record.
type IncompleteError struct {
	Window  results.Window
	Figures []Incomplete
}

func (e *IncompleteError) Error() string {
	const shown = 3
	length := seconds(e.Window.Duration())
	var msg []string
	for i, f := range e.Figures {
		if i == shown {
			msg = append(msg, fmt.Sprintf("and %d more figures", len(e.Figures)-shown))
			break
		}
		spans := make([]string, len(f.Gaps))
		for j, g := range f.Gaps {
			spans[j] = g.From.Format(time.TimeOnly) + "-" + g.To.Format(time.TimeOnly)
		}
		others := ""
		if f.Targets > 1 {
			others = fmt.Sprintf(" and %d more targets", f.Targets-1)
		}
		msg = append(msg, fmt.Sprintf("%s %s (%s): prometheus has no samples for %s of the %s %s window (%s) from target %s (scraped every %s)%s",
			f.Component, f.Figure, f.What, seconds(f.Missing()), length, e.Window.Kind, strings.Join(spans, ", "), f.Target, f.Spacing, others))
	}
	return fmt.Sprintf("%s window %s-%s incomplete: %s", e.Window.Kind,
		e.Window.Start.Format(time.TimeOnly), e.Window.End.Format(time.TimeOnly), strings.Join(msg, "; "))
}

// WindowIncomplete marks the error as a gap in the monitoring, not in the system measured: the runner may measure
// the case again (scenario windows.attempts).
func (e *IncompleteError) WindowIncomplete() bool { return true }

// seconds is d in whole seconds ("40s", "600s"): the gap and the window it is part of in one unit.
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
}

// figureRef is one figure of a Collect and the targets its series came from.
type figureRef struct {
	component, figure, what string
	targets                 []scrapeTargetKey
}

// noteTargets records the targets of a figure's series for the completeness check.
func (t *tally) noteTargets(component results.Component, figure, what string, ss []Series) {
	var ts []scrapeTargetKey
	for _, s := range ss {
		if !slices.Contains(ts, s.Target) {
			ts = append(ts, s.Target)
		}
	}
	if len(ts) > 0 {
		t.figures = append(t.figures, figureRef{component: string(component), figure: figure, what: what, targets: ts})
	}
}

// upSeries are the up samples of one target: all of them, and those of successful scrapes.
type upSeries struct{ all, ok []float64 }

// checkScrapes reads the up series of every job the window's figures came from (one query per job) and returns the
// figures whose targets have gaps in the window; a figure it cannot check is a warning, a failed query in t.failed.
func (c *Collector) checkScrapes(ctx context.Context, out *podset.Collected, t *tally, p Params) ([]Incomplete, error) {
	ups, failedJobs, err := c.readUp(ctx, t, figureJobs(t.figures), p, out.Window.End)
	if err != nil {
		return nil, err
	}
	bad, unchecked := scrapeCompleteness(t.figures, ups, failedJobs, out.Window, c.Interval.Scrape)
	out.Warnings = append(out.Warnings, unchecked...)
	return bad, nil
}

// figureJobs are the scrape jobs the figures' targets belong to, in the order they first appear. Pure.
func figureJobs(figures []figureRef) []string {
	var jobs []string
	for _, f := range figures {
		for _, k := range f.targets {
			if k.Job != "" && !slices.Contains(jobs, k.Job) {
				jobs = append(jobs, k.Job)
			}
		}
	}
	return jobs
}

// upIndex holds the up series read per target, and the targets of each job and instance.
type upIndex struct {
	up         map[scrapeTargetKey]*upSeries
	byInstance map[[2]string][]scrapeTargetKey // job, instance -> up targets
}

// add files the up samples of m under their targets.
func (x *upIndex) add(m model.Matrix) {
	for _, ss := range m {
		k := targetOf(ss.Metric)
		u := x.up[k]
		if u == nil {
			u = &upSeries{}
			x.up[k] = u
			x.byInstance[[2]string{k.Job, k.Instance}] = append(x.byInstance[[2]string{k.Job, k.Instance}], k)
		}
		for _, s := range ss.Values {
			ts := float64(s.Timestamp) / 1000
			u.all = append(u.all, ts)
			if s.Value == 1 {
				u.ok = append(u.ok, ts)
			}
		}
	}
}

// lookup is the up series of a target: the exact one, else (series without metrics_path where the up series
// have it, e.g. a relabelling that kept it on up only) every up series of its job and instance merged.
func (x *upIndex) lookup(k scrapeTargetKey) (*upSeries, bool) {
	if u, ok := x.up[k]; ok {
		return u, true
	}
	ks := x.byInstance[[2]string{k.Job, k.Instance}]
	if len(ks) == 0 || k.MetricsPath != "" {
		return nil, false
	}
	m := &upSeries{}
	for _, uk := range ks {
		m.all, m.ok = append(m.all, x.up[uk].all...), append(m.ok, x.up[uk].ok...)
	}
	slices.Sort(m.all)
	slices.Sort(m.ok)
	return m, true
}

// readUp queries the up series of each job over p's span ending at end, one query per job; a failed query goes to
// t.failed and its job to the failed jobs (their figures are already missing from the check as failed queries).
// The error is only the context's.
func (c *Collector) readUp(ctx context.Context, t *tally, jobs []string, p Params, end time.Time) (*upIndex, []string, error) {
	when, rng := p.Span(end)
	suffix := "[" + strconv.FormatInt(int64(ceilSecond(rng)/time.Second), 10) + "s]"
	ups := &upIndex{up: map[scrapeTargetKey]*upSeries{}, byInstance: map[[2]string][]scrapeTargetKey{}}
	var failedJobs []string
	for _, job := range jobs {
		t.queries++
		v, _, err := query(ctx, c.API, c.Retry, "up{job="+strconv.Quote(job)+"}"+suffix, when)
		if err == nil {
			if _, ok := v.(model.Matrix); !ok && v != nil {
				err = fmt.Errorf("want a range vector, got %s", v.Type())
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			t.failed = append(t.failed, fmt.Errorf("scrape health of job %s (up series): %w", job, err))
			failedJobs = append(failedJobs, job)
			continue
		}
		m, _ := v.(model.Matrix)
		ups.add(m)
	}
	return ups, failedJobs, nil
}

// scrapeCompleteness checks each figure's targets against their up series in the window: the figures with gaps
// (the target missing the most named), and sorted warnings for what it could not check (no up series outside the
// failed jobs, series without a job). Pure.
func scrapeCompleteness(figures []figureRef, ups *upIndex, failedJobs []string, w results.Window, scrape time.Duration) ([]Incomplete, []string) {
	var bad []Incomplete
	unchecked := map[string]bool{}
	var jobless []string // components with series of no scrape target
	for _, f := range figures {
		inc := Incomplete{Component: f.component, Figure: f.figure, What: f.what}
		for _, k := range f.targets {
			if k.Job == "" {
				if !slices.Contains(jobless, f.component) {
					jobless = append(jobless, f.component)
				}
				continue
			}
			u, ok := ups.lookup(k)
			if !ok {
				if !slices.Contains(failedJobs, k.Job) {
					unchecked[fmt.Sprintf("%s %s: no up series for target %s: whether prometheus scraped it all through the %s window is not checked", f.component, f.figure, k, w.Kind)] = true
				}
				continue
			}
			gaps, spacing := scrapeGaps(u.ok, u.all, w.Start, w.End, scrape)
			if len(gaps) == 0 {
				continue
			}
			inc.Targets++
			if g := (Incomplete{Gaps: gaps}); inc.Gaps == nil || g.Missing() > inc.Missing() {
				inc.Target, inc.Spacing, inc.Gaps = k, spacing, gaps
			}
		}
		if inc.Targets > 0 {
			bad = append(bad, inc)
		}
	}
	if len(jobless) > 0 {
		// Backfilled blocks, federation without honor_labels' job, recording rules: no target, so no up series.
		unchecked[fmt.Sprintf("%s: series without a job label: whether prometheus had their samples all through the %s window is not checked",
			strings.Join(jobless, ", "), w.Kind)] = true
	}
	return bad, slices.Sorted(maps.Keys(unchecked))
}
