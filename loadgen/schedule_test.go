package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/periodic"
	"github.com/meshbench/meshbench/results"
)

// fortio.org/fortio v1.75.3 periodic/periodic.go runQPSSetup: numCalls = int(qps x seconds), at least 2 (then one
// thread); threads lowered to numCalls/2 when each would get fewer than 2; numCalls divided by threads; runOne's
// per-thread QPS is qps / threads.
func TestFortioSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		qps       float64
		threads   int
		d         time.Duration
		want      schedule
		scheduled bool
	}{
		{100, 4, 3 * time.Second, schedule{perThreadQPS: 25, calls: 75}, true},
		{10, 8, time.Second, schedule{perThreadQPS: 2, calls: 2}, true},  // 10 calls: 5 threads of 2
		{1, 4, time.Second, schedule{perThreadQPS: 1, calls: 2}, true},   // 1 call: 2 calls on 1 thread
		{7, 2, time.Second, schedule{perThreadQPS: 3.5, calls: 3}, true}, // 7 calls: 3 each, one left over
		{MaxQPS, 4, time.Second, schedule{}, false},                      // max speed: nothing is due
		{100, 4, 0, schedule{}, false},                                   // no duration
	} {
		got, ok := fortioSchedule(tc.qps, tc.threads, tc.d)
		if ok != tc.scheduled || got != tc.want {
			t.Errorf("fortioSchedule(%g, %d, %s) = %+v %v, want %+v %v", tc.qps, tc.threads, tc.d, got, ok, tc.want, tc.scheduled)
		}
	}
	// The last call of a thread is due at the end of the run (runOne: "for 2s duration and 1qps there is 1 sleep of 2s").
	s, _ := fortioSchedule(100, 2, 2*time.Second)
	if got := s.due(s.calls - 1); got != 2*time.Second {
		t.Errorf("last call due at %s, want 2s", got)
	}
}

// sendLog is an AccessLogger that keeps when each request of each thread was sent.
type sendLog struct {
	mu    sync.Mutex
	sends map[periodic.ThreadID][]time.Time
}

func (l *sendLog) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

func (l *sendLog) Report(_ context.Context, th periodic.ThreadID, iter int64, start time.Time, _ float64, _ bool, _ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int64(len(l.sends[th])) != iter {
		panic("iterations out of order")
	}
	l.sends[th] = append(l.sends[th], start)
}

func (l *sendLog) Info() string { return "send log" }

type quickRunner struct{}

func (quickRunner) Run(context.Context, periodic.ThreadID) (bool, string) { return true, "200" }

// TestScheduleIsFortios runs fortio's own periodic runner and compares every request's send time with schedule's due
// time. fortio sleeps until a request is due, so no send may come early (a schedule later than fortio's would show
// early sends); a busy machine only makes sends late, so the earliest of a thread's last quarter of sends shows a
// schedule earlier than fortio's (without runOne's i/(numCalls-1) term the last calls are due up to a whole period,
// 20 ms, early, and even the earliest of them would be sent some 15 ms late).
func TestScheduleIsFortios(t *testing.T) {
	t.Parallel()
	const qps, threads, d = 100.0, 2, 2 * time.Second
	log := &sendLog{sends: map[periodic.ThreadID][]time.Time{}}
	ro := periodic.RunnerOptions{QPS: qps, NumThreads: threads, Duration: d, Out: io.Discard, Stop: periodic.NewAborter(), AccessLogger: log}
	r := periodic.NewPeriodicRunner(&ro)
	defer r.Options().Abort()
	for i := range r.Options().NumThreads {
		r.Options().Runners[i] = quickRunner{}
	}
	r.Run()
	s, _ := fortioSchedule(qps, threads, d)
	for th, sends := range log.sends {
		if int64(len(sends)) != s.calls {
			t.Fatalf("thread %d sent %d requests, the schedule has %d", th, len(sends), s.calls)
		}
		off := make([]time.Duration, len(sends))
		for i, at := range sends {
			off[i] = at.Sub(sends[0].Add(s.due(int64(i))))
		}
		if early := slices.Min(off); early < -2*time.Millisecond {
			t.Errorf("thread %d: a request sent %s before its due time: the schedule is later than fortio's", th, -early)
		}
		if tail := slices.Min(off[len(off)*3/4:]); tail > 8*time.Millisecond {
			t.Errorf("thread %d: even the earliest of the last quarter of sends is %s late: the schedule is earlier than fortio's", th, tail)
		}
	}
}

// TestResponseTimeCountsTheStall: one request stalls the server for 800 ms on the only connection (at 100 qps, 80 requests fall due meanwhile); the requests due
// meanwhile are sent late. Their service times stay short (coordinated omission hides the stall), their response
// times carry it: response percentiles exceed service percentiles by about the stall.
func TestResponseTimeCountsTheStall(t *testing.T) {
	t.Parallel()
	const stall = 800 * time.Millisecond
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 100 {
			time.Sleep(stall)
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	rep, err := RunClient(context.Background(), ClientSpec{URL: srv.URL + "/", QPS: 100, Connections: 1, Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Measured
	if m == nil || m.ResponseLatency == nil {
		t.Fatalf("no response times recorded: %+v", m)
	}
	svc, resp := m.Latency.OK, m.ResponseLatency.OK
	if svc.Count() != resp.Count() || svc.Count() < 250 {
		t.Fatalf("%d service and %d response times, want the same, about 300", svc.Count(), resp.Count())
	}
	if svc.Max() < stall || resp.Max() < stall {
		t.Errorf("max service %s, response %s: want both at least the stall %s", svc.Max(), resp.Max(), stall)
	}
	if p := svc.Percentile(90); p > 50*time.Millisecond {
		t.Errorf("service p90 %s: the stall should show in one request only", p)
	}
	if gap := resp.Percentile(90) - svc.Percentile(90); gap < 300*time.Millisecond {
		t.Errorf("response p90 %s, service p90 %s: the requests sent late should lift the response p90 by more than 300 ms (about 500 ms: the 30th latest of 80 late sends)",
			resp.Percentile(90), svc.Percentile(90))
	}
	if resp.Min() < svc.Min() || resp.Mean() <= svc.Mean() {
		t.Errorf("response min %s mean %s below service min %s mean %s", resp.Min(), resp.Mean(), svc.Min(), svc.Mean())
	}
	t.Logf("service p50 %s p90 %s p99 %s max %s; response p50 %s p90 %s p99 %s max %s", svc.Percentile(50), svc.Percentile(90),
		svc.Percentile(99), svc.Max(), resp.Percentile(50), resp.Percentile(90), resp.Percentile(99), resp.Max())
	// On the wire and back (the agent's report).
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Measured.ResponseLatency == nil || back.Measured.ResponseLatency.OK.Count() != resp.Count() {
		t.Errorf("response latency lost on the wire: %v", err)
	}
}

// At max speed no request is due: no response times, as wrk2 has none without a rate.
func TestNoResponseTimeAtMaxSpeed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	rep, err := RunClient(context.Background(), ClientSpec{URL: srv.URL + "/", QPS: MaxQPS, Connections: 1, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Measured == nil || rep.Measured.ResponseLatency != nil || rep.Measured.Latency.OK.Count() == 0 {
		t.Errorf("max speed: %+v, want service times and no response times", rep.Measured)
	}
}

// Response times travel like service times: parsed and checked against the codes, merged exactly across clients
// (only when every client has them), and sampled as response-time / error-response-time with the same stats.
func TestResponseTimeParsedMergedSampled(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%5 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	var clients []ClientResult
	for _, qps := range []float64{40, MaxQPS} {
		rep, err := RunClient(context.Background(), ClientSpec{URL: srv.URL + "/", QPS: qps, Connections: 2, Duration: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if qps > 0 {
			// A report whose response times do not hold the requests the codes count is refused.
			rep.Measured.ResponseLatency.OK = newHistogram()
			bad, _ := json.Marshal(rep)
			if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "responseLatency holds 0 ok") {
				t.Errorf("inconsistent response times: %v", err)
			}
		}
	}
	fixed, maxSpeed := clients[0], clients[1]
	if fixed.Response == nil || fixed.Response.OK.Count() != fixed.Latency.Count() || fixed.Response.Errors.Count() != fixed.ErrorLatency.Count() || maxSpeed.Response != nil {
		t.Fatalf("parsed response times: fixed %+v, max speed %+v", fixed.Response, maxSpeed.Response)
	}
	both, err := merge(80, []ClientResult{fixed, fixed})
	if err != nil {
		t.Fatal(err)
	}
	if both.ResponseLatency.Count() != 2*fixed.Response.OK.Count() || both.ErrorResponseLatency.Count() != 2*fixed.Response.Errors.Count() {
		t.Errorf("merged response times %d/%d, want twice %d/%d", both.ResponseLatency.Count(), both.ErrorResponseLatency.Count(),
			fixed.Response.OK.Count(), fixed.Response.Errors.Count())
	}
	mixed, err := merge(80, []ClientResult{fixed, maxSpeed})
	if err != nil {
		t.Fatal(err)
	}
	if mixed.ResponseLatency != nil {
		t.Error("a client without response times: the merge must not show the others' as the run's")
	}
	stats := map[results.Metric][]results.Stat{}
	for _, s := range both.Samples(results.Sample{}) {
		stats[s.Metric] = append(stats[s.Metric], s.Stat)
	}
	for _, m := range []results.Metric{results.MetricResponseTime, results.MetricErrResponseTime} {
		if !slices.Equal(stats[m], stats[results.MetricLatency]) {
			t.Errorf("%s stats %v, want latency's %v", m, stats[m], stats[results.MetricLatency])
		}
	}
	for _, s := range mixed.Samples(results.Sample{}) {
		if s.Metric == results.MetricResponseTime {
			t.Errorf("response-time sample without response times: %+v", s)
		}
	}
}
