package loadgen

import "time"

// schedule is when fortio's periodic runner means to send each request of a fixed-QPS run, so that a request's
// response time can count from when it was due and not from when a stalled connection finally sent it (coordinated
// omission, fortio/fortio#3). It replicates fortio.org/fortio v1.75.3 periodic/periodic.go runQPSSetup and runOne;
// TestScheduleIsFortios pins it to the fortio in go.mod.
type schedule struct {
	perThreadQPS float64
	calls        int64 // per thread, at least 2
}

// fortioSchedule is the schedule of a run at qps with threads connections for d; false for a max-speed run (no
// request is ever due) or a run without a duration.
func fortioSchedule(qps float64, threads int, d time.Duration) (schedule, bool) {
	if qps <= 0 || d <= 0 || threads < 1 {
		return schedule{}, false
	}
	n := int64(qps * d.Seconds())
	if n < 2 {
		n, threads = 2, 1
	}
	if int64(2*threads) > n {
		threads = int(n / 2)
	}
	n /= int64(threads)
	return schedule{perThreadQPS: qps / float64(threads), calls: n}, true
}

// due is when iteration i of a connection is due, counted from that connection's first request (iteration 0, which
// fortio sends at once, after the uniform delay when there is one).
func (s schedule) due(i int64) time.Duration {
	sec := (float64(i) + float64(i)/float64(s.calls-1)) / s.perThreadQPS
	return time.Duration(int64(sec * 1e9))
}
