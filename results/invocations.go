package results

import (
	"fmt"
	"slices"
	"time"
)

// Took is the run's active time: the sum of its invocations' spans, so the time between an interruption and its
// --resume does not count (End - Start for runs recorded without invocations). ok is false when no span is known or
// one ends before it starts.
func (m RunMeta) Took() (d time.Duration, ok bool) {
	if len(m.Invocations) == 0 {
		if m.End == nil || m.End.Before(m.Start) {
			return 0, false
		}
		return m.End.Sub(m.Start), true
	}
	for _, inv := range m.Invocations {
		if inv.End == nil {
			continue
		}
		span := inv.End.Sub(inv.Start)
		if span < 0 || d+span < d {
			return 0, false
		}
		d += span
		ok = true
	}
	return d, ok
}

// Text is the one-line account of an interruption every rendering uses, e.g. "interrupted after 1 of 4
// cases (SIGINT, in load of case single/none/100/1)".
func (in Interruption) Text() string {
	s := fmt.Sprintf("interrupted after %d of %d cases", in.Completed, in.Planned)
	what := in.Signal
	where := ""
	switch {
	case in.Case != "" && in.Phase != "":
		where = "in " + in.Phase + " of case " + in.Case
	case in.Case != "":
		where = "before case " + in.Case
	}
	if what != "" && where != "" {
		what += ", "
	}
	if what+where != "" {
		s += " (" + what + where + ")"
	}
	return s
}

// StartInvocation is meta as a new invocation (a --resume at now) begins: invocations that never wrote their end are
// closed as crashed at their last case record (or their start), the new one is appended and End is cleared while it
// runs. The interruption mark stays until the invocation ends (EndInvocation).
func StartInvocation(meta RunMeta, cases []CaseResult, now time.Time) RunMeta {
	invs := slices.Clone(meta.Invocations)
	if len(invs) == 0 && !meta.Start.IsZero() {
		first := Invocation{Start: meta.Start, End: meta.End, Outcome: OutcomeUnrecorded}
		if meta.End == nil {
			first.Outcome = "" // closed as crashed below
		} else if meta.Interrupted != nil {
			first.Outcome = OutcomeInterrupted
		}
		invs = append(invs, first)
	}
	for i := range invs {
		if invs[i].End != nil {
			continue
		}
		next := now
		if i+1 < len(invs) {
			next = invs[i+1].Start
		}
		end := invs[i].Start
		for _, c := range cases {
			if !c.End.Before(invs[i].Start) && c.End.Before(next) && c.End.After(end) {
				end = c.End
			}
		}
		invs[i].End, invs[i].Outcome = &end, OutcomeCrashed
	}
	meta.Invocations = append(invs, Invocation{Start: now})
	meta.End = nil
	return meta
}

// EndInvocation is meta as the latest invocation ends at end with outcome: its span, outcome and the signal that
// stopped it ("" for none) are recorded, End is set, and the interruption mark is set to intr (nil clears it: the plan completed). A meta without
// invocations gets one from Start.
func EndInvocation(meta RunMeta, end time.Time, outcome, signal string, intr *Interruption) RunMeta {
	invs := slices.Clone(meta.Invocations)
	if len(invs) == 0 {
		invs = append(invs, Invocation{Start: meta.Start})
	}
	last := &invs[len(invs)-1]
	last.End, last.Outcome, last.Signal = &end, outcome, signal
	meta.Invocations, meta.End, meta.Interrupted = invs, &end, intr
	return meta
}
