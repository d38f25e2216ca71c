package results

import (
	"math"
	"time"
)

// LoadSlice names a part of a load recorded apart.
type LoadSlice string

// The slices of an enforce case's load: the requests its deny policy allows and those it denies (they carry its
// header).
const (
	SliceAllowed LoadSlice = "allowed"
	SliceDenied  LoadSlice = "denied"
)

// Enforcement is an enforce case's record: when the deny policy was applied and removed, and the load's per-second
// records of its two slices: the requests the policy allows and those it denies (docs/enforce.md).
type Enforcement struct {
	Mode    Mode         `json:"mode"`
	Applied time.Time    `json:"applied"`
	Removed time.Time    `json:"removed,omitzero"`
	Allowed []LoadSecond `json:"allowed,omitempty"`
	Denied  []LoadSecond `json:"denied,omitempty"`
}

// EnforceFigures are, in seconds from the policy's change to the end of the second the load saw it in (an upper
// bound, to the record's one-second resolution): when the first denied-slice request was refused and from when every
// one was, when the first passed again after the removal and from when every one did, and the errors of the allowed
// slice (the policy must not touch it). NaN where the record never shows it.
type EnforceFigures struct {
	FirstEnforced, AllEnforced, FirstLifted, AllLifted float64
	AllowedErrors                                      int64
}

// Figures computes the enforcement's figures. It is pure.
func (e Enforcement) Figures() EnforceFigures {
	f := EnforceFigures{FirstEnforced: math.NaN(), AllEnforced: math.NaN(), FirstLifted: math.NaN(), AllLifted: math.NaN()}
	for _, s := range e.Allowed {
		f.AllowedErrors += s.ErrorCount()
	}
	end := func(s LoadSecond, from time.Time) float64 {
		return math.Max(0, s.Start.Add(time.Second).Sub(from).Seconds())
	}
	denied := func(s LoadSecond) bool { return s.Requests > 0 && s.ErrorCount() == s.Requests }
	passed := func(s LoadSecond) bool { return s.Requests > 0 && s.ErrorCount() == 0 }
	_, hold := splitAt(e.Denied, e.Applied)
	var after []LoadSecond
	if !e.Removed.IsZero() {
		hold, after = splitAt(hold, e.Removed)
	}
	f.FirstEnforced, f.AllEnforced = firstAndSettled(hold, e.Applied, func(s LoadSecond) bool { return s.ErrorCount() > 0 }, denied, end)
	if !e.Removed.IsZero() {
		f.FirstLifted, f.AllLifted = firstAndSettled(after, e.Removed, func(s LoadSecond) bool { return s.ErrorCount() < s.Requests }, passed, end)
	}
	return f
}

// splitAt splits secs (in time order) into the seconds before the one holding t and the rest.
func splitAt(secs []LoadSecond, t time.Time) (before, from []LoadSecond) {
	cut := t.Truncate(time.Second)
	for i, s := range secs {
		if !s.Start.Before(cut) {
			return secs[:i], secs[i:]
		}
	}
	return secs, nil
}

// firstAndSettled is, over secs (from the change at t on), the time to the end of the first second where some(s) and
// to the end of the first second of the run of every(s) that lasts to the end of secs; NaN when there is none.
func firstAndSettled(secs []LoadSecond, t time.Time, some, every func(LoadSecond) bool, end func(LoadSecond, time.Time) float64) (first, settled float64) {
	first, settled = math.NaN(), math.NaN()
	for _, s := range secs {
		if some(s) {
			first = end(s, t)
			break
		}
	}
	from := -1
	for i := len(secs) - 1; i >= 0; i-- {
		if secs[i].Requests == 0 { // a second without requests neither breaks nor makes the run
			continue
		}
		if !every(secs[i]) {
			break
		}
		from = i
	}
	if from >= 0 {
		settled = end(secs[from], t)
	}
	return first, settled
}
