package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"fortio.org/fortio/periodic"
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/meshbench/meshbench/results"
)

// Latency histogram geometry, the same in every agent and in meshbench (Parse refuses any other): integer µs from
// 1 µs to 60 s, 4 significant figures, fine enough for the few ms a data plane adds (docs/measurement.md).
const (
	latencyUnit       = "us"
	latencySigFigs    = 4
	latencyHighestUS  = int64(60 * time.Second / time.Microsecond)
	latencyLowestUS   = 1
	microsPerSecond   = 1e6
	latencyRecordInfo = "meshbench latency histograms (2xx and errors)"
)

// Histogram is an HDR latency histogram (sparse) with the exact count, sum, min and max, in integer µs; values above
// latencyHighestUS count as latencyHighestUS. Get one from a recorder, JSON or mergeHistograms.
type Histogram struct {
	p *hdrhistogram.PackedHistogram
	m moments
}

// moments are the exact count, sum and extremes of recorded values, in µs.
type moments struct {
	count, sum, min, max int64
}

func (m *moments) add(v, n int64) {
	if n <= 0 {
		return
	}
	if m.count == 0 || v < m.min {
		m.min = v
	}
	if m.count == 0 || v > m.max {
		m.max = v
	}
	m.count += n
	m.sum += v * n
}

func (m *moments) merge(o moments) {
	if o.count == 0 {
		return
	}
	if m.count == 0 {
		*m = o
		return
	}
	m.count += o.count
	m.sum += o.sum
	m.min, m.max = min(m.min, o.min), max(m.max, o.max)
}

func newPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(latencyLowestUS, latencyHighestUS, latencySigFigs)
}

// newHistogram returns an empty histogram.
func newHistogram() *Histogram { return &Histogram{p: newPacked()} }

// micros converts a latency in seconds (fortio's unit) to the recorded integer microseconds, clamped to the range.
func micros(seconds float64) int64 {
	v := math.Round(seconds * microsPerSecond)
	switch {
	case !(v > 0): // negative, zero or NaN
		return 0
	case v >= float64(latencyHighestUS):
		return latencyHighestUS
	}
	return int64(v)
}

// Count is the number of recorded requests.
func (h *Histogram) Count() int64 {
	if h == nil {
		return 0
	}
	return h.m.count
}

// Percentile returns percentile p (in percent, 0-100): the highest value of the HDR bucket holding that rank
// (exact below 32.768 ms), clamped to the exact minimum and maximum. It is 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.Count() == 0 {
		return 0
	}
	v := min(max(h.p.ValueAtPercentile(p), h.m.min), h.m.max)
	return time.Duration(v) * time.Microsecond
}

// Mean is the exact mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(math.Round(float64(h.m.sum) / float64(h.m.count) * float64(time.Microsecond)))
}

// Min and Max are the exact extremes (0 for an empty histogram).
func (h *Histogram) Min() time.Duration {
	if h == nil {
		return 0
	}
	return time.Duration(h.m.min) * time.Microsecond
}

// Max: see Min.
func (h *Histogram) Max() time.Duration {
	if h == nil {
		return 0
	}
	return time.Duration(h.m.max) * time.Microsecond
}

// mergeHistograms returns the histogram of the union of the inputs' requests (nil inputs are skipped). It is exact:
// every agent records with the same geometry, so buckets add index to index, and count, sum, min and max combine
// exactly. The inputs are not modified.
func mergeHistograms(hs ...*Histogram) *Histogram {
	out := newHistogram()
	for _, h := range hs {
		if h == nil {
			continue
		}
		out.p.Merge(h.p) // the same geometry on both sides: nothing is dropped
		out.m.merge(h.m)
	}
	return out
}

// histogramJSON is a Histogram on the wire: the non-empty buckets, ascending, as [value, count] pairs, the value
// being the lowest value of the bucket (which is the recorded value itself below 32.768 ms).
type histogramJSON struct {
	Count   int64      `json:"count"`
	Sum     int64      `json:"sum"`
	Min     int64      `json:"min"`
	Max     int64      `json:"max"`
	Buckets [][2]int64 `json:"buckets"`
}

// MarshalJSON writes the sparse form.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	w := histogramJSON{Count: h.m.count, Sum: h.m.sum, Min: h.m.min, Max: h.m.max, Buckets: [][2]int64{}}
	for v, n := range h.p.ForEachBucket {
		w.Buckets = append(w.Buckets, [2]int64{v, n})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the sparse form and checks that it is consistent.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var w histogramJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	p := newPacked()
	var n int64
	for i, bk := range w.Buckets {
		v, c := bk[0], bk[1]
		if c <= 0 || v < 0 || v > latencyHighestUS || (i > 0 && v <= w.Buckets[i-1][0]) {
			return fmt.Errorf("bucket %d [%d, %d]: want ascending values in [0, %d] with counts > 0", i, v, c, latencyHighestUS)
		}
		if err := p.RecordValues(v, c); err != nil {
			return fmt.Errorf("bucket %d: %w", i, err)
		}
		n += c
	}
	switch {
	case n != w.Count:
		return fmt.Errorf("buckets hold %d values but count is %d", n, w.Count)
	case w.Count > 0 && (w.Min > w.Max || w.Min < 0 || w.Max > latencyHighestUS || w.Sum < w.Min*w.Count || w.Sum > w.Max*w.Count):
		return fmt.Errorf("min %d, max %d and sum %d do not fit %d values", w.Min, w.Max, w.Sum, w.Count)
	case w.Count == 0 && (w.Min != 0 || w.Max != 0 || w.Sum != 0):
		return errors.New("an empty histogram must have min, max and sum 0")
	}
	h.p, h.m = p, moments{count: w.Count, sum: w.Sum, min: w.Min, max: w.Max}
	return nil
}

// Latencies are one client's request latencies, split by outcome by HTTP status, exactly as Errors are counted:
// OK holds the 2xx responses, Errors every other status and connection errors (code -1).
type Latencies struct {
	OK     *Histogram
	Errors *Histogram
}

// latenciesJSON carries the geometry, so that a report from an agent built with another one is refused instead of
// being merged wrongly.
type latenciesJSON struct {
	Unit               string     `json:"unit"`
	SignificantFigures int        `json:"significantFigures"`
	Highest            int64      `json:"highest"`
	OK                 *Histogram `json:"ok"`
	Errors             *Histogram `json:"errors"`
}

// MarshalJSON writes the geometry and both histograms.
func (l Latencies) MarshalJSON() ([]byte, error) {
	w := latenciesJSON{Unit: latencyUnit, SignificantFigures: latencySigFigs, Highest: latencyHighestUS, OK: l.OK, Errors: l.Errors}
	if w.OK == nil {
		w.OK = newHistogram()
	}
	if w.Errors == nil {
		w.Errors = newHistogram()
	}
	return json.Marshal(w)
}

// UnmarshalJSON checks the geometry and reads both histograms.
func (l *Latencies) UnmarshalJSON(b []byte) error {
	var w latenciesJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Unit != latencyUnit || w.SignificantFigures != latencySigFigs || w.Highest != latencyHighestUS {
		return fmt.Errorf("histogram geometry unit %q, %d significant figures, highest %d: want %q, %d, %d (the agent image was built from another meshbench version: rebuild spec.images.agent)",
			w.Unit, w.SignificantFigures, w.Highest, latencyUnit, latencySigFigs, latencyHighestUS)
	}
	if w.OK == nil || w.Errors == nil {
		return errors.New(`histograms "ok" and "errors" are both required`)
	}
	l.OK, l.Errors = w.OK, w.Errors
	return nil
}

// recorder is fortio's periodic.AccessLogger for one phase: it sorts each request's latency by status code with
// codeOK (not fortio's status flag, which counts 418 as OK) into dense HDR histograms under one mutex; Latencies
// packs them when the phase is over (docs/measurement.md).
type recorder struct {
	// byStatus sorts by fortio's status flag instead (gRPC: SERVING; tcp: the echo matched), for protocols whose
	// details are not an HTTP code.
	byStatus bool
	// sched, when set, is the run's schedule: each request's response time is also recorded, counted from when it
	// was due (its service time plus how late it was sent).
	sched    *schedule
	mu       sync.Mutex
	service  denseLatencies
	response denseLatencies
	origin   map[periodic.ThreadID]time.Time // each connection's first request
	// perSecond, when set, also keeps the per-second record (ClientSpec.PerSecond).
	perSecond *timeline
}

// denseLatencies are the dense histograms of one latency (service or response time), split by outcome.
type denseLatencies struct {
	ok, errs   *hdrhistogram.Histogram
	okM, errsM moments
}

func newDenseLatencies() denseLatencies {
	return denseLatencies{
		ok:   hdrhistogram.New(latencyLowestUS, latencyHighestUS, latencySigFigs),
		errs: hdrhistogram.New(latencyLowestUS, latencyHighestUS, latencySigFigs),
	}
}

func newRecorder(sched *schedule) *recorder {
	r := &recorder{sched: sched, service: newDenseLatencies(), origin: map[periodic.ThreadID]time.Time{}}
	if sched != nil {
		r.response = newDenseLatencies()
	}
	return r
}

var _ periodic.AccessLogger = (*recorder)(nil)

// Start is called before each request; the recorder needs nothing there.
func (r *recorder) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

// Report records one request.
func (r *recorder) Report(_ context.Context, thread periodic.ThreadID, iter int64, start time.Time, latency float64, status bool, details string) {
	ok := status
	if !r.byStatus {
		code, err := strconv.Atoi(details)
		ok = err == nil && codeOK(code)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	us := micros(latency)
	r.service.record(us, ok)
	if r.sched != nil {
		if iter == 0 {
			r.origin[thread] = start
		}
		late := time.Duration(0)
		if origin, seen := r.origin[thread]; seen {
			late = max(0, start.Sub(origin.Add(r.sched.due(iter))))
		}
		us = micros(latency + late.Seconds())
		r.response.record(us, ok)
	}
	if r.perSecond != nil {
		r.perSecond.add(start.Add(time.Duration(latency*float64(time.Second))), us, errorKind(ok, details, r.byStatus))
	}
}

// Seconds is the per-second record so far; nil unless the recorder keeps one.
func (r *recorder) Seconds() []results.LoadSecond {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.perSecond == nil {
		return nil
	}
	return r.perSecond.record()
}

// Info names the recorder in fortio's log line.
func (r *recorder) Info() string { return latencyRecordInfo }

// record adds one value in µs (micros keeps it in [0, latencyHighestUS], so recording cannot fail).
func (d *denseLatencies) record(v int64, ok bool) {
	h, m := d.errs, &d.errsM
	if ok {
		h, m = d.ok, &d.okM
	}
	_ = h.RecordValue(v)
	m.add(v, 1)
}

func (d *denseLatencies) pack() Latencies {
	pack := func(dh *hdrhistogram.Histogram, m moments) *Histogram {
		h := newHistogram()
		h.p.MergeFrom(dh)
		h.m = m
		return h
	}
	return Latencies{OK: pack(d.ok, d.okM), Errors: pack(d.errs, d.errsM)}
}

// Latencies returns the service times recorded so far (sent -> done) as sparse histograms.
func (r *recorder) Latencies() Latencies {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.service.pack()
}

// ResponseLatencies returns the response times recorded so far (due -> done); false without a schedule.
func (r *recorder) ResponseLatencies() (Latencies, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sched == nil {
		return Latencies{}, false
	}
	return r.response.pack(), true
}
