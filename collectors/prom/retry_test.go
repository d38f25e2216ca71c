package prom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// pauseClock is a fake clock whose timers fire at once, moving it on by their duration; interrupt, when set, runs
// instead and leaves the timer waiting.
type pauseClock struct {
	*testingclock.FakeClock
	interrupt func()
}

func (c *pauseClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	if c.interrupt != nil {
		c.interrupt()
	} else {
		c.Step(d)
	}
	return t
}

// TestQueryRetryOnTheClock: a query's pauses (500 ms doubling to 8 s) and its budget run on Retry.Clock, so a
// Prometheus that stays down is given up on after DefaultRetry's 10 attempts, or earlier by the budget, in fake
// time; a query interrupted in a pause returns ctx's error.
func TestQueryRetryOnTheClock(t *testing.T) {
	t.Parallel()
	down := &promv1.Error{Type: promv1.ErrServer, Msg: "503"}
	for _, tc := range []struct {
		name   string
		budget time.Duration
		calls  int
		msg    string
	}{
		// Pauses 0.5+1+2+4+8+8+8+8+8 s between the 10 attempts.
		{"attempts", 90 * time.Second, 10, "query q: 10 attempts over 47.5s: server_error: 503"},
		// Attempts at 0, 0.5, 1.5, 3.5 and 7.5 s; the next, after 8 s more, would start past 10 s.
		{"budget", 10 * time.Second, 5, "query q: 5 attempts over 7.5s: server_error: 503"},
	} {
		r := DefaultRetry()
		r.Budget = tc.budget
		r.Clock = &pauseClock{FakeClock: testingclock.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}
		api := &flakyAPI{n: 100, err: down}
		_, _, err := query(t.Context(), api, r, "q", time.Now())
		if err == nil || err.Error() != tc.msg || api.calls.Load() != int32(tc.calls) {
			t.Errorf("%s: %d calls, %v; want %d calls, %q", tc.name, api.calls.Load(), err, tc.calls, tc.msg)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := DefaultRetry()
	r.Clock = &pauseClock{FakeClock: testingclock.NewFakeClock(time.Now()), interrupt: cancel}
	api := &flakyAPI{n: 100, err: errors.New("connection refused")}
	if _, _, err := query(ctx, api, r, "q", time.Now()); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "attempts") || api.calls.Load() != 1 {
		t.Errorf("interrupted in the first pause: %d calls, %v; want 1 call and ctx's error", api.calls.Load(), err)
	}
}
