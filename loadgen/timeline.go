package loadgen

import (
	"maps"
	"slices"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meshbench/meshbench/results"
)

// timelineSigFigs is the per-second histograms' precision: 2 significant figures keep a ten-minute record of
// seconds in a few MiB.
const timelineSigFigs = 2

// timeline accumulates Seconds by the wall-clock second each request completed in; the recorder's mutex guards it.
type timeline struct {
	seconds map[int64]*secondAcc // Unix second -> its requests
}

type secondAcc struct {
	n    int64
	errs map[string]int64
	h    *hdrhistogram.Histogram
}

// add records one request that completed at done, with latency us (µs) and, when it failed, its error kind.
func (t *timeline) add(done time.Time, us int64, errKind string) {
	if t.seconds == nil {
		t.seconds = map[int64]*secondAcc{}
	}
	sec := done.Unix()
	a := t.seconds[sec]
	if a == nil {
		a = &secondAcc{h: hdrhistogram.New(latencyLowestUS, latencyHighestUS, timelineSigFigs)}
		t.seconds[sec] = a
	}
	a.n++
	_ = a.h.RecordValue(us) // micros keeps us in range
	if errKind != "" {
		if a.errs == nil {
			a.errs = map[string]int64{}
		}
		a.errs[errKind]++
	}
}

// seconds is the record in time order, every second from the first to the last (a second without a completed
// request has Requests 0: a stall shows as a gap, not as a missing row).
func (t *timeline) record() []results.LoadSecond {
	if len(t.seconds) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(t.seconds))
	out := make([]results.LoadSecond, 0, keys[len(keys)-1]-keys[0]+1)
	for sec := keys[0]; sec <= keys[len(keys)-1]; sec++ {
		s := results.LoadSecond{Start: time.Unix(sec, 0).UTC()}
		if a := t.seconds[sec]; a != nil {
			s.Requests, s.Errors = a.n, maps.Clone(a.errs)
			s.P50 = float64(a.h.ValueAtPercentile(50)) / 1000
			s.P99 = float64(a.h.ValueAtPercentile(99)) / 1000
			s.Max = float64(a.h.Max()) / 1000
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
