package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
)

// Percentiles are the latency percentiles every run computes, in percent.
func Percentiles() []float64 { return []float64{50, 75, 90, 99, 99.9} }

// Phase names in a Report.
const (
	PhaseWarmUp   = "warmup"
	PhaseMeasured = "measured"
	PhaseCoolDown = "cooldown"
)

// Report is what one client prints with `meshbench-agent load --json`, and what RunClient returns.
type Report struct {
	// Client names the client (pod or host name).
	Client string `json:"client,omitempty"`
	// Phases are the runs in order, with exact start and end times. Only the measured phase's statistics are kept.
	Phases []Phase `json:"phases"`
	// Measured is the measured phase's detail.
	Measured *Measured `json:"measured"`
}

// Measured is what a client reports of its measured phase besides its Phase entry.
type Measured struct {
	// RequestedQPS is the client's target rate, MaxQPS for max.
	RequestedQPS float64 `json:"requestedQPS"`
	// Connections is the number of fortio threads that ran (fortio lowers it when there are fewer calls than 2 per
	// thread).
	Connections int `json:"connections"`
	// Sockets is the number of sockets fortio opened (== Connections with perfect keep-alive).
	Sockets int64 `json:"sockets"`
	// Codes counts the responses per HTTP status; -1 is a connection or socket error.
	Codes map[int]int64 `json:"codes"`
	// Latency is every request's latency, 2xx apart from errors.
	Latency Latencies `json:"latency"`
}

// Phase is one fortio run inside a client's load.
type Phase struct {
	Name      string    `json:"name"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Requests  int64     `json:"requests"`
	ActualQPS float64   `json:"actualQPS"`
	Errors    int64     `json:"errors"`
}

// RunClient runs one client's phases (warm-up, measured, cool-down) back to back with fortio's HTTP runner and
// returns the report. Cancelling ctx aborts the current phase; the error is then ctx's.
//
// Latencies are recorded per request in the measured phase (see recorder), not taken from fortio's histogram. fortio
// pitfalls handled here: QPS <= 0 is sent as -1 (0 would mean 8 qps); the text report goes to io.Discard; each phase
// gets its own Aborter, which also keeps fortio from installing its global SIGINT handler (the caller owns signals,
// through ctx).
func RunClient(ctx context.Context, c ClientSpec) (*Report, error) {
	if c.URL == "" || c.Connections < 1 || c.Duration <= 0 {
		return nil, errors.New("run load: url, connections >= 1 and duration > 0 are required")
	}
	rep := &Report{}
	phases := []struct {
		name string
		d    time.Duration
	}{{PhaseWarmUp, c.WarmUp}, {PhaseMeasured, c.Duration}, {PhaseCoolDown, c.CoolDown}}
	for _, p := range phases {
		if p.d <= 0 {
			continue
		}
		var rec *recorder
		if p.name == PhaseMeasured {
			rec = newRecorder()
		}
		res, err := runPhase(ctx, c, p.d, rec)
		if err != nil {
			return rep, fmt.Errorf("run load %s phase against %s: %w", p.name, c.URL, err)
		}
		ph := Phase{Name: p.name, Start: res.StartTime.UTC(), End: res.StartTime.Add(res.ActualDuration).UTC(), ActualQPS: res.ActualQPS}
		for code, n := range res.RetCodes {
			ph.Requests += n
			if !codeOK(code) {
				ph.Errors += n
			}
		}
		rep.Phases = append(rep.Phases, ph)
		if rec != nil {
			qps := c.QPS
			if qps <= 0 {
				qps = MaxQPS
			}
			rep.Measured = &Measured{RequestedQPS: qps, Connections: res.NumThreads, Sockets: res.SocketCount,
				Codes: res.RetCodes, Latency: rec.Latencies()}
		}
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("run load against %s: %w", c.URL, err)
		}
	}
	return rep, nil
}

// runPhase is one fortio HTTP run; rec, when not nil, records every request's latency.
func runPhase(ctx context.Context, c ClientSpec, d time.Duration, rec *recorder) (*fhttp.HTTPRunnerResults, error) {
	qps := c.QPS
	if qps <= 0 {
		qps = MaxQPS
	}
	stop := periodic.NewAborter()
	o := &fhttp.HTTPRunnerOptions{
		RunnerOptions: periodic.RunnerOptions{
			QPS:        qps,
			Duration:   d,
			NumThreads: c.Connections,
			Out:        io.Discard,
			Stop:       stop,
			Jitter:     c.Jitter,
			Uniform:    c.Uniform,
		},
		// Errors are measured, not fatal: a mesh mid-switch or an overloaded app answers 503s, and the run must say
		// how many instead of stopping at the first one.
		AllowInitialErrors: true,
	}
	if rec != nil { // a nil *recorder in the interface would not be a nil AccessLogger
		o.AccessLogger = rec
	}
	o.HTTPOptions.Init(c.URL)
	for _, h := range c.Headers {
		if err := o.HTTPOptions.AddAndValidateExtraHeader(h); err != nil {
			return nil, fmt.Errorf("header %q: %w", h, err)
		}
	}
	if c.PayloadBytes > 0 {
		o.HTTPOptions.Payload = []byte(strings.Repeat("x", c.PayloadBytes))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			stop.Abort(false)
		case <-done:
		}
	})
	res, err := fhttp.RunHTTPTest(o)
	close(done)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return res, nil
}

func codeOK(code int) bool { return code >= 200 && code < 300 }

// Local runs every client in this process (goroutines), for tests and benchmarks. The reports go through Parse and
// Merge exactly like the in-cluster clients' output.
type Local struct{}

// Run runs the spec and returns the merged result.
func (Local) Run(ctx context.Context, s Spec) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, fmt.Errorf("run load: %w", err)
	}
	specs := s.ClientSpecs()
	outs := make([][]byte, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, cs := range specs {
		wg.Go(func() {
			rep, err := RunClient(ctx, cs)
			if err != nil {
				errs[i] = err
				return
			}
			rep.Client = fmt.Sprintf("local-%d", i)
			outs[i], errs[i] = json.Marshal(rep)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	clients := make([]ClientResult, len(outs))
	for i, b := range outs {
		cr, err := Parse(b)
		if err != nil {
			return Result{}, err
		}
		clients[i] = cr
	}
	return Merge(s.QPS, clients)
}
