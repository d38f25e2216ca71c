package loadgen

import (
	"maps"
	"slices"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meshbench/meshbench/results"
)

// timelineSigFigs is the per-second histograms' precision (20 KiB a histogram); timelineOpen is how many seconds
// behind the latest a second's histogram is kept before its percentiles are computed and it is dropped, so a record
// of any length holds a few histograms (a request is reported as it completes, never seconds later).
const (
	timelineSigFigs = 2
	timelineOpen    = 3
)

// timeline accumulates seconds by the wall-clock second each request completed in; the recorder's mutex guards it.
type timeline struct {
	seconds map[int64]*secondAcc // Unix second -> its requests
	latest  int64
}

type secondAcc struct {
	n             int64
	errs          map[string]int64
	h             *hdrhistogram.Histogram // nil once closed
	p50, p99, max float64                 // ms, set when closed
}

// close computes the second's percentiles and drops its histogram.
func (a *secondAcc) close() {
	if a.h == nil {
		return
	}
	a.p50 = float64(a.h.ValueAtPercentile(50)) / 1000
	a.p99 = float64(a.h.ValueAtPercentile(99)) / 1000
	a.max = float64(a.h.Max()) / 1000
	a.h = nil
}

// add records one request that completed at done, with latency us (µs) and, when it failed, its error kind. A
// request of a second closed already counts, its latency does not.
func (t *timeline) add(done time.Time, us int64, errKind string) {
	if t.seconds == nil {
		t.seconds = map[int64]*secondAcc{}
	}
	sec := done.Unix()
	a := t.seconds[sec]
	if a == nil {
		a = &secondAcc{}
		if sec > t.latest-timelineOpen {
			a.h = hdrhistogram.New(latencyLowestUS, latencyHighestUS, timelineSigFigs)
		}
		t.seconds[sec] = a
	}
	if sec > t.latest {
		for k, old := range t.seconds {
			if k <= sec-timelineOpen {
				old.close()
			}
		}
		t.latest = sec
	}
	a.n++
	if a.h != nil {
		_ = a.h.RecordValue(us) // micros keeps us in range
	}
	if errKind != "" {
		if a.errs == nil {
			a.errs = map[string]int64{}
		}
		a.errs[errKind]++
	}
}

// record is the record in time order, every second from the first to the last (a second without a completed
// request has Requests 0: a stall shows as a gap, not as a missing row). It closes every second.
func (t *timeline) record() []results.LoadSecond {
	if len(t.seconds) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(t.seconds))
	out := make([]results.LoadSecond, 0, keys[len(keys)-1]-keys[0]+1)
	for sec := keys[0]; sec <= keys[len(keys)-1]; sec++ {
		s := results.LoadSecond{Start: time.Unix(sec, 0).UTC()}
		if a := t.seconds[sec]; a != nil {
			a.close()
			s.Requests, s.Errors, s.P50, s.P99, s.Max = a.n, maps.Clone(a.errs), a.p50, a.p99, a.max
		}
		out = append(out, s)
	}
	return out
}

// errorKind is the kind of a failed request's outcome as fortio reports it (details: the HTTP status, -1 without an
// answer); "" for a success.
func errorKind(ok bool, details string, byStatus bool) string {
	switch {
	case ok:
		return ""
	case byStatus:
		return results.ErrorConnection
	}
	code, err := strconv.Atoi(details)
	if err != nil || code < 0 {
		return results.ErrorConnection
	}
	return strconv.Itoa(code)
}
