package results

import (
	"maps"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
)

// ErrorConnection is the error kind of a request that got no HTTP answer (connection refused, reset, timed out) or,
// for gRPC and tcp, any failed call; an HTTP error's kind is its status code ("503").
const ErrorConnection = "connection"

// LoadSecond is one second of a load's per-second record: the requests that completed in it, the errors among them
// by kind and their latency percentiles in ms (the response time when the load had a rate, else the service time).
type LoadSecond struct {
	Start    time.Time        `json:"start"`
	Requests int64            `json:"requests"`
	Errors   map[string]int64 `json:"errors,omitempty"`
	P50      float64          `json:"p50Ms"`
	P99      float64          `json:"p99Ms"`
	Max      float64          `json:"maxMs"`
}

// ErrorCount is the second's errors of every kind.
func (s LoadSecond) ErrorCount() int64 {
	var n int64
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// MergeSeconds is the per-second record of several clients' loads: per second, requests and errors summed, p99 and
// max the largest of the clients' (an upper bound), p50 the request-weighted mean of theirs (an estimate: the
// clients' histograms are not kept). Every second from the first to the last is there. It is pure.
func MergeSeconds(clients ...[]LoadSecond) []LoadSecond {
	by := map[int64]*LoadSecond{}
	for _, c := range clients {
		for _, s := range c {
			k := s.Start.Unix()
			m := by[k]
			if m == nil {
				m = &LoadSecond{Start: s.Start.UTC()}
				by[k] = m
			}
			if s.Requests > 0 {
				m.P50 = (m.P50*float64(m.Requests) + s.P50*float64(s.Requests)) / float64(m.Requests+s.Requests)
			}
			m.Requests += s.Requests
			m.P99, m.Max = max(m.P99, s.P99), max(m.Max, s.Max)
			for kind, n := range s.Errors {
				if m.Errors == nil {
					m.Errors = map[string]int64{}
				}
				m.Errors[kind] += n
			}
		}
	}
	if len(by) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(by))
	out := make([]LoadSecond, 0, keys[len(keys)-1]-keys[0]+1)
	for k := keys[0]; k <= keys[len(keys)-1]; k++ {
		if m := by[k]; m != nil {
			out = append(out, *m)
		} else {
			out = append(out, LoadSecond{Start: time.Unix(k, 0).UTC()})
		}
	}
	return out
}

// TransitionPhase is a moment of a move between modes.
type TransitionPhase string

// The phases of a move, in order (docs/transitions.md).
const (
	PhaseMoveStarted  TransitionPhase = "move-started"  // the runner began to apply the new mode
	PhaseModeApplied  TransitionPhase = "mode-applied"  // labels on, workloads whose injection changes restarted
	PhasePodsReady    TransitionPhase = "pods-ready"    // every workload rolled out, every pod Ready
	PhaseModeVerified TransitionPhase = "mode-verified" // every pod proven in the new mode
)

// Transition is a transition case's record: the move, when each of its phases was reached (a failed move stops at
// the last one it reached) and the load's per-second record around it.
type Transition struct {
	From    Mode               `json:"from"`
	To      Mode               `json:"to"`
	Phases  []TransitionMoment `json:"phases"`
	Seconds []LoadSecond       `json:"seconds,omitempty"`
}

// TransitionMoment is when a phase was reached.
type TransitionMoment struct {
	Phase TransitionPhase `json:"phase"`
	At    time.Time       `json:"at"`
}

// At is when phase p was reached, false when it was not.
func (t Transition) At(p TransitionPhase) (time.Time, bool) {
	for _, m := range t.Phases {
		if m.Phase == p {
			return m.At, true
		}
	}
	return time.Time{}, false
}

// SteadyP99Factor and SteadyP99SlackMs define the new mode's steady state after a move: every later second without
// errors and with a p99 within factor x the reference + slack (the reference: the median p99 of the record's last
// third, the new mode settled).
const (
	SteadyP99Factor  = 1.5
	SteadyP99SlackMs = 1.0
)

// TransitionFigures are what a move cost, from its record: its length, the errors during and after it, the seconds
// with errors, the p99 before it and its worst second, and the time until the new mode's steady state.
type TransitionFigures struct {
	// MoveSeconds is from the move's start to the new mode verified (NaN when it was not).
	MoveSeconds float64
	// ErrorsDuring are the errors of the seconds from the move's start to the mode verified (to the end when it was
	// not); ErrorsAfter those of the rest; ErrorSeconds the seconds from the move's start on with any error.
	ErrorsDuring, ErrorsAfter, ErrorSeconds int64
	// ErrorsByKind are the errors from the move's start on by kind.
	ErrorsByKind map[string]int64
	// P99Before is the median per-second p99 before the move (ms); P99Worst the largest from its start on.
	P99Before, P99Worst float64
	// SteadySeconds is from the move's start to the first second from which every second is steady; NaN when the
	// record never settles (or has no move start).
	SteadySeconds float64
}

// Figures computes the move's figures; the record's first and last seconds (partial) are left out. It is pure.
func (t Transition) Figures() TransitionFigures {
	f := TransitionFigures{MoveSeconds: math.NaN(), SteadySeconds: math.NaN(), P99Before: math.NaN(), ErrorsByKind: map[string]int64{}}
	secs := t.Seconds
	if len(secs) > 2 {
		secs = secs[1 : len(secs)-1]
	}
	start, ok := t.At(PhaseMoveStarted)
	if !ok || len(secs) == 0 {
		return f
	}
	verified, isVerified := t.At(PhaseModeVerified)
	if isVerified {
		f.MoveSeconds = verified.Sub(start).Seconds()
	}
	startSec := start.Truncate(time.Second)
	var before []float64
	for _, s := range secs {
		if s.Start.Before(startSec) {
			if s.Requests > 0 {
				before = append(before, s.P99)
			}
			continue
		}
		n := s.ErrorCount()
		if !isVerified || !s.Start.After(verified) {
			f.ErrorsDuring += n
		} else {
			f.ErrorsAfter += n
		}
		if n > 0 {
			f.ErrorSeconds++
		}
		for k, v := range s.Errors {
			f.ErrorsByKind[k] += v
		}
		f.P99Worst = max(f.P99Worst, s.P99)
	}
	if len(before) > 0 {
		f.P99Before = median(before)
	}
	f.SteadySeconds = steadyAfter(secs, startSec)
	return f
}

// steadyAfter is the seconds from startSec to the first second after which every second is steady (SteadyP99Factor);
// NaN when the last second is not.
func steadyAfter(secs []LoadSecond, startSec time.Time) float64 {
	var tail []float64
	for _, s := range secs[len(secs)*2/3:] {
		if s.Requests > 0 {
			tail = append(tail, s.P99)
		}
	}
	if len(tail) == 0 {
		return math.NaN()
	}
	limit := SteadyP99Factor*median(tail) + SteadyP99SlackMs
	steadyFrom := -1
	for i := len(secs) - 1; i >= 0 && !secs[i].Start.Before(startSec); i-- {
		s := secs[i]
		if s.Requests == 0 || s.ErrorCount() > 0 || s.P99 > limit {
			break
		}
		steadyFrom = i
	}
	if steadyFrom < 0 {
		return math.NaN()
	}
	return math.Max(0, secs[steadyFrom].Start.Sub(startSec).Seconds())
}

// median of v (not empty), interpolated; v is not changed.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return stat.Quantile(0.5, stat.LinInterp, s, nil)
}
