package loadgen

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// TestPerSecondRecord: a real fortio load (one connection, 100 qps, 4 s) against a server that answers 503 to its
// requests 101-150 and holds request 250 for 1.2 s. The record has every second from the first to the last, counts
// every request once, sorts the 503s under their code, and the second the held request completed in shows it.
func TestPerSecondRecord(t *testing.T) {
	t.Parallel()
	const stall = 1200 * time.Millisecond
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch i := n.Add(1); {
		case i > 100 && i <= 150:
			w.WriteHeader(http.StatusServiceUnavailable)
		case i == 250:
			time.Sleep(stall)
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	rep, err := RunClient(context.Background(), ClientSpec{URL: srv.URL + "/", QPS: 100, Connections: 1, Duration: 4 * time.Second, PerSecond: true})
	if err != nil {
		t.Fatal(err)
	}
	secs := rep.Measured.Seconds
	if len(secs) < 4 || len(secs) > 6 {
		t.Fatalf("%d seconds recorded for a 4 s load: %+v", len(secs), secs)
	}
	var total, unavailable int64
	var worst time.Duration
	for i, s := range secs {
		if i > 0 && !s.Start.Equal(secs[i-1].Start.Add(time.Second)) {
			t.Errorf("second %d starts at %s, after %s: not contiguous", i, s.Start, secs[i-1].Start)
		}
		total += s.Requests
		unavailable += s.Errors["503"]
		if s.Requests > 0 && (s.P50 <= 0 || s.P99 < s.P50 || s.Max < s.P99) {
			t.Errorf("second %s: p50 %v p99 %v max %v ms", s.Start, s.P50, s.P99, s.Max)
		}
		worst = max(worst, time.Duration(s.Max*float64(time.Millisecond)))
	}
	var codes int64
	for _, c := range rep.Measured.Codes {
		codes += c
	}
	if total != codes || unavailable != 50 {
		t.Errorf("record: %d requests, %d of them 503; the load: %d requests, codes %v", total, unavailable, codes, rep.Measured.Codes)
	}
	if worst < stall {
		t.Errorf("worst second's max %s: the held request (%s) is not in the record", worst, stall)
	}
	for _, s := range secs {
		t.Logf("%s: %d requests, errors %v, p50 %.2f ms p99 %.2f ms max %.1f ms", s.Start.Format("15:04:05"), s.Requests, s.Errors, s.P50, s.P99, s.Max)
	}
}

func TestErrorKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ok       bool
		details  string
		byStatus bool
		want     string
	}{
		{true, "200", false, ""},
		{false, "503", false, "503"},
		{false, "418", false, "418"},
		{false, "-1", false, results.ErrorConnection},
		{false, "", false, results.ErrorConnection},
		{false, "NOT_SERVING", true, results.ErrorConnection},
		{true, "SERVING", true, ""},
	} {
		if got := errorKind(tc.ok, tc.details, tc.byStatus); got != tc.want {
			t.Errorf("errorKind(%v, %q, %v) = %q, want %q", tc.ok, tc.details, tc.byStatus, got, tc.want)
		}
	}
}

// The timeline keeps only the last timelineOpen seconds' histograms: a long record stays small, and every second
// still has its percentiles.
func TestTimelineClosesOldSeconds(t *testing.T) {
	t.Parallel()
	var tl timeline
	t0 := time.Unix(1_800_000_000, 0)
	for s := range 600 {
		for i := range 10 {
			tl.add(t0.Add(time.Duration(s)*time.Second+time.Duration(i)*100*time.Millisecond), int64(1000*(s%7+1)), "")
		}
	}
	open := 0
	for _, a := range tl.seconds {
		if a.h != nil {
			open++
		}
	}
	if open > timelineOpen {
		t.Errorf("%d histograms kept after 600 s, want at most %d", open, timelineOpen)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= want/100 } // 2 significant figures
	rec := tl.record()
	if len(rec) != 600 || rec[0].Requests != 10 || !near(rec[0].P99, 1) || !near(rec[599].P50, float64(599%7+1)) {
		t.Errorf("record of %d seconds: first %+v last %+v", len(rec), rec[0], rec[len(rec)-1])
	}
	// A request of a closed second still counts.
	tl.add(t0, 5000, "503")
	if rec := tl.record(); rec[0].Requests != 11 || rec[0].Errors["503"] != 1 || !near(rec[0].P99, 1) {
		t.Errorf("a late request: %+v", rec[0])
	}
}
