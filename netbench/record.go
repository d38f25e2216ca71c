package netbench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/results"
)

// collectTimeout bounds reading one window's resource use (the kubelet sampler waits for a sampling round after
// the window; Prometheus for ingestion).
const collectTimeout = 2 * time.Minute

// labelledSet is a pod set whose resource samples get labels (path, test, tool).
type labelledSet struct {
	set    prom.PodSet
	labels map[string]string
}

// pending is a finished case waiting for its resource use, then for the store.
type pending struct {
	res     results.CaseResult
	samples []results.Sample
	window  *results.Window // nil: no resource window
	sets    []labelledSet
	// noCPU, when set, is why the window's CPU figures are not attributable: they are dropped, the reason noted.
	noCPU string
}

// recorder collects resource use and appends cases in order, in the background: reading a window's resource use
// waits for the source to have the data (seconds), while the next case already runs.
type recorder struct {
	ch   chan pending
	done chan struct{}
	errs []error
}

func (r *run) startRecorder(ctx context.Context) *recorder {
	rec := &recorder{ch: make(chan pending, 64), done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		for p := range rec.ch {
			p.samples = append(p.samples, r.resources(ctx, &p)...)
			if err := r.d.Store.AppendCase(p.res, p.samples); err != nil {
				rec.errs = append(rec.errs, fmt.Errorf("record case %s: %w", p.res.CaseID, err))
				continue
			}
			r.mu.Lock()
			r.recorded = append(r.recorded, p.res)
			for _, s := range p.samples {
				s.CaseID = p.res.CaseID
				r.recSamples = append(r.recSamples, s)
			}
			r.mu.Unlock()
		}
	}()
	return rec
}

func (rec *recorder) submit(p pending) { rec.ch <- p }

// wait drains the queue; cases still queued when the run is interrupted are recorded (without resource use).
func (rec *recorder) wait() error {
	close(rec.ch)
	<-rec.done
	return errors.Join(rec.errs...)
}

// resources reads the case's resource window for each pod set and labels the samples; problems become a fact of
// the case, never a failure of the measurement.
func (r *run) resources(ctx context.Context, p *pending) []results.Sample {
	if p.window == nil || r.d.Resources == nil {
		return nil
	}
	var out []results.Sample
	var notes []string
	if p.noCPU != "" {
		notes = append(notes, p.noCPU)
	}
	for _, ls := range p.sets {
		if ls.set.Empty() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, collectTimeout)
		col, err := r.d.Resources.Collect(cctx, *p.window, []prom.PodSet{ls.set})
		cancel()
		notes = append(notes, col.Warnings...)
		r.noteNodes(col.Warnings)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s resource use not collected: %v", ls.set.Component, err))
			continue
		}
		for _, s := range col.Samples {
			if p.noCPU != "" && s.Metric == prom.MetricCPU {
				continue
			}
			// The case's labels, plus the collector's own (node and series of a node sample).
			labels := maps.Clone(ls.labels)
			maps.Copy(labels, s.Labels)
			s.Labels = labels
			out = append(out, s)
		}
	}
	if len(notes) > 0 {
		if p.res.Facts == nil {
			p.res.Facts = map[string]string{}
		}
		p.res.Facts["resources"] = strings.Join(notes, "; ")
	}
	return out
}

// noteNodes keeps, once per run, the collector's reasons why a test node's CPU and memory are absent: the same
// reason in every case's facts is easy to miss, the run's notes are printed with the table.
func (r *run) noteNodes(warnings []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range warnings {
		if strings.HasPrefix(w, prom.NodeNotCollected) && !slices.Contains(r.nodeNotes, w) {
			r.nodeNotes = append(r.nodeNotes, w)
		}
	}
}
