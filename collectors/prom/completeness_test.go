package prom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

func TestScrapeGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 13, 1, 50, 0, time.UTC)
	sec := func(ds ...float64) []float64 {
		out := make([]float64, len(ds))
		for i, d := range ds {
			out[i] = float64(t0.Unix()) + d
		}
		return out
	}
	every := func(from, to, step float64, skip func(float64) bool) []float64 {
		var out []float64
		for d := from; d <= to; d += step {
			if skip == nil || !skip(d) {
				out = append(out, d)
			}
		}
		return sec(out...)
	}
	start, end := t0, t0.Add(60*time.Second)
	for _, tc := range []struct {
		name        string
		ok, all     []float64
		fallback    time.Duration
		want        []Gap
		wantSpacing time.Duration
	}{
		{name: "scraped all through (off the window's phase)", ok: every(-29.7, 70.3, 1, nil), all: every(-29.7, 70.3, 1, nil), wantSpacing: time.Second},
		{name: "one scrape missed is bridged", ok: every(-29.7, 70.3, 1, func(d float64) bool { return d > 30 && d < 31 }), all: every(-29.7, 70.3, 1, nil), wantSpacing: time.Second},
		{name: "two scrapes missed in a row are a gap", ok: every(-29.7, 70.3, 1, func(d float64) bool { return d > 30 && d < 32 }), all: every(-29.7, 70.3, 1, nil), wantSpacing: time.Second,
			want: []Gap{{t0.Add(29300 * time.Millisecond), t0.Add(32300 * time.Millisecond)}}},
		{name: "prometheus paused 40 s: the stretch between the scrapes around it",
			ok:  every(-30, 90, 5, func(d float64) bool { return d > 20 && d < 60 }),
			all: every(-30, 90, 5, func(d float64) bool { return d > 20 && d < 60 }), wantSpacing: 5 * time.Second,
			want: []Gap{{t0.Add(20 * time.Second), t0.Add(60 * time.Second)}}},
		{name: "failed scrapes (up == 0) count as missing", ok: every(-30, 90, 5, func(d float64) bool { return d >= 10 && d <= 30 }), all: every(-30, 90, 5, nil),
			wantSpacing: 5 * time.Second, want: []Gap{{t0.Add(5 * time.Second), t0.Add(35 * time.Second)}}},
		{name: "down at the window's start: measured from the edge", ok: every(-60, 90, 15, func(d float64) bool { return d > -15 && d < 45 }),
			all: every(-60, 90, 15, func(d float64) bool { return d > -15 && d < 45 }), wantSpacing: 15 * time.Second,
			want: []Gap{{t0, t0.Add(45 * time.Second)}}},
		{name: "no successful scrape in the window: all of it", ok: sec(-20, -10), all: sec(-20, -10, 0, 10, 20, 30, 40, 50, 60), wantSpacing: 10 * time.Second,
			want: []Gap{{t0, end}}},
		{name: "one sample only: the fallback spacing", ok: sec(30), all: sec(30), fallback: 10 * time.Second, wantSpacing: 10 * time.Second,
			want: []Gap{{t0, t0.Add(30 * time.Second)}, {t0.Add(30 * time.Second), end}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, spacing := scrapeGaps(tc.ok, tc.all, start, end, tc.fallback)
			if spacing != tc.wantSpacing {
				t.Errorf("spacing %s, want %s", spacing, tc.wantSpacing)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("gaps %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].From.Equal(tc.want[i].From) || !got[i].To.Equal(tc.want[i].To) {
					t.Errorf("gap %d: %s..%s, want %s..%s", i, got[i].From, got[i].To, tc.want[i].From, tc.want[i].To)
				}
			}
		})
	}
}

// gapAPI is a Prometheus whose up series of fakeTarget has failed scrapes (up == 0) from 13:02:10 to 13:02:50.
type gapAPI struct{ from, to time.Time }

func (g gapAPI) Query(_ context.Context, q string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if strings.HasPrefix(q, "up{") {
		return upMatrix(ts, fakeTarget, func(t time.Time) bool { return t.After(g.from) && t.Before(g.to) }), nil, nil, nil
	}
	return rampMatrix(ts, 2), nil, nil, nil
}

func (gapAPI) Config(context.Context) (promv1.ConfigResult, error) { return promv1.ConfigResult{}, nil }

// A window Prometheus did not scrape all through fails the collection with an *IncompleteError naming each
// component's figure, the window and the gap, while the figures computed are kept for the record.
func TestCollectIncompleteWindow(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 3, 13, 1, 50, 0, time.UTC)
	w := results.Window{Kind: results.WindowLoad, Start: start, End: start.Add(60 * time.Second)}
	c := &Collector{API: gapAPI{from: start.Add(20 * time.Second), to: start.Add(60 * time.Second)},
		Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second}, Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(start.Add(time.Hour))}
	sets := []podset.PodSet{{Component: results.ComponentApp, Pods: map[string][]string{"ns": {"p"}}, Container: matchNotProxy}}
	got, err := c.Collect(context.Background(), w, sets)
	var ie *IncompleteError
	if !errors.As(err, &ie) {
		t.Fatalf("Collect error %v (%T): want *IncompleteError", err, err)
	}
	if len(ie.Figures) != len(Catalog()) {
		t.Errorf("figures %+v: want one per signal of the app", ie.Figures)
	}
	// up == 0 at 13:02:15 ... 13:02:45 (every 5 s): no successful scrape from 13:02:10 to 13:02:50.
	want := `load window 13:01:50-13:02:50 incomplete: app cpu (1 pods): prometheus has no samples for 40s of the 60s load window (13:02:10-13:02:50) ` +
		`from target job="kubernetes-cadvisor" instance="node-1:10250" (scraped every 5s); app memory (1 pods): prometheus has no samples for 40s`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error\n%s\nwant it to start with\n%s", err, want)
	}
	if len(got.Samples) != 3*len(Catalog()) {
		t.Errorf("%d samples, want the %d figures kept for the record", len(got.Samples), 3*len(Catalog()))
	}
}

func TestIncompleteErrorIsBounded(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 3, 13, 1, 50, 0, time.UTC)
	e := &IncompleteError{Window: results.Window{Kind: results.WindowIdle, Start: start, End: start.Add(time.Minute)}}
	for _, c := range []string{"app", "sidecar", "ztunnel", "waypoint", "istiod"} {
		e.Figures = append(e.Figures, Incomplete{Component: c, Figure: "cpu", What: "1 pods", Target: scrapeTargetKey{Job: "kubelet", Instance: "n:10250", MetricsPath: "/metrics/cadvisor"},
			Spacing: 30 * time.Second, Gaps: []Gap{{start, start.Add(time.Minute)}}, Targets: 2})
	}
	msg := e.Error()
	for _, s := range []string{"idle window 13:01:50-13:02:50 incomplete: app cpu (1 pods): prometheus has no samples for 60s of the 60s idle window (13:01:50-13:02:50)",
		`target job="kubelet" instance="n:10250" metrics_path="/metrics/cadvisor" (scraped every 30s) and 1 more targets`, "; and 2 more figures"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	if strings.Contains(msg, "waypoint") {
		t.Errorf("message %q: want three figures and the count of the others", msg)
	}
}
