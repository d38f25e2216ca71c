package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/fortio/tcprunner"
	"github.com/meshbench/meshbench/results"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// percentiles are the latency percentiles every run computes, in percent.
func percentiles() []float64 { return []float64{50, 75, 90, 99, 99.9} }

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
	// Target and Protocol are the client spec's (Target empty with a single unnamed target).
	Target   string `json:"target,omitempty"`
	Protocol string `json:"protocol,omitempty"`
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
	// NoKeepAlive says the client was asked for a new connection per request (ClientSpec); HTTP2Responses counts
	// the responses that came back as HTTP/2 when HTTP2 was asked, the proof that the load spoke it.
	NoKeepAlive    bool  `json:"noKeepAlive,omitempty"`
	HTTP2Responses int64 `json:"http2Responses,omitempty"`
	// Codes counts the responses per HTTP status; -1 is a connection or socket error. gRPC and tcp have no HTTP
	// status: a successful call (health SERVING; the echo came back unchanged) counts as 200, any other outcome as -1.
	Codes map[int]int64 `json:"codes"`
	// Latency is every request's service time (sent -> done), 2xx apart from errors.
	Latency Latencies `json:"latency"`
	// ResponseLatency is every request's response time (due -> done: the service time plus how late the request was
	// sent), 2xx apart from errors; nil at max speed, where no request is due.
	ResponseLatency *Latencies `json:"responseLatency,omitempty"`
	// Seconds is the per-second record (ClientSpec.PerSecond), by the second each request completed in.
	Seconds []results.LoadSecond `json:"seconds,omitempty"`
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

// RunClient runs one client's phases (warm-up, measured, cool-down) back to back with fortio's runner for its
// protocol and returns the report, latencies recorded per request (recorder). Cancelling ctx aborts the current phase
// with ctx's error; fortio never installs its own SIGINT handler (the fortio pitfalls: docs/measurement.md).
func RunClient(ctx context.Context, c ClientSpec) (*Report, error) {
	if c.URL == "" || c.Connections < 1 || c.Duration <= 0 {
		return nil, errors.New("run load: url, connections >= 1 and duration > 0 are required")
	}
	if c.Protocol == "" {
		c.Protocol = ProtocolHTTP
	}
	rep := &Report{Target: c.Target, Protocol: c.Protocol}
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
			var sched *schedule
			if s, ok := fortioSchedule(c.QPS, c.Connections, p.d); ok {
				sched = &s
			}
			rec = newRecorder(sched)
			rec.byStatus = c.Protocol != ProtocolHTTP
			if c.PerSecond {
				rec.perSecond = &timeline{}
			}
		}
		res, err := runPhase(ctx, c, p.d, rec)
		if err != nil {
			return rep, fmt.Errorf("run load %s phase against %s: %w", p.name, c.URL, err)
		}
		ph := Phase{Name: p.name, Start: res.start.UTC(), End: res.start.Add(res.duration).UTC(), ActualQPS: res.actualQPS}
		for code, n := range res.codes {
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
			rep.Measured = &Measured{RequestedQPS: qps, Connections: res.threads, Sockets: res.sockets,
				NoKeepAlive: c.NoKeepAlive, HTTP2Responses: res.http2,
				Codes: res.codes, Latency: rec.Latencies()}
			if rl, ok := rec.ResponseLatencies(); ok {
				rep.Measured.ResponseLatency = &rl
			}
			rep.Measured.Seconds = rec.Seconds()
		}
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("run load against %s: %w", c.URL, err)
		}
	}
	return rep, nil
}

// phaseResult is what a phase reports, whatever the protocol.
type phaseResult struct {
	start     time.Time
	duration  time.Duration
	actualQPS float64
	threads   int
	sockets   int64
	http2     int64 // responses that came back as HTTP/2
	codes     map[int]int64
}

func fromRunner(r periodic.RunnerResults, sockets int64, codes map[int]int64) *phaseResult {
	return &phaseResult{start: r.StartTime, duration: r.ActualDuration, actualQPS: r.ActualQPS, threads: r.NumThreads,
		sockets: sockets, codes: codes}
}

// runPhase is one fortio run of c's protocol; rec, when not nil, records every request's latency.
func runPhase(ctx context.Context, c ClientSpec, d time.Duration, rec *recorder) (*phaseResult, error) {
	qps := c.QPS
	if qps <= 0 {
		qps = MaxQPS
	}
	stop := periodic.NewAborter()
	ro := periodic.RunnerOptions{
		QPS:        qps,
		Duration:   d,
		NumThreads: c.Connections,
		Out:        io.Discard,
		Stop:       stop,
		Jitter:     c.Jitter,
		Uniform:    c.Uniform,
	}
	if rec != nil { // a nil *recorder in the interface would not be a nil AccessLogger
		ro.AccessLogger = rec
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
	defer func() {
		close(done)
		wg.Wait()
	}()
	switch c.Protocol {
	case ProtocolGRPC:
		return runGRPC(ro, c)
	case ProtocolTCP:
		return runTCP(ro, c)
	default:
		return runHTTP(ro, c)
	}
}

func runHTTP(ro periodic.RunnerOptions, c ClientSpec) (*phaseResult, error) {
	o := &fhttp.HTTPRunnerOptions{
		RunnerOptions: ro,
		// Errors are measured, not fatal: a mesh mid-switch or an overloaded app answers 503s, and the run must say
		// how many instead of stopping at the first one.
		AllowInitialErrors: true,
	}
	o.HTTPOptions.DisableKeepAlive = c.NoKeepAlive
	// H2 before Init: Init moves an H2 request to fortio's standard client, the one that speaks it.
	o.HTTPOptions.H2 = c.HTTP2
	var h2 protoCounter
	if c.HTTP2 {
		o.HTTPOptions.Transport = h2.wrap
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
	res, err := fhttp.RunHTTPTest(o)
	if err != nil {
		return nil, err
	}
	pr := fromRunner(res.RunnerResults, res.SocketCount, res.RetCodes)
	pr.http2 = h2.n.Load()
	return pr, nil
}

// protoCounter counts the responses that came back as HTTP/2 through the round tripper it wraps.
type protoCounter struct{ n atomic.Int64 }

func (p *protoCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil && resp.ProtoMajor == 2 {
			p.n.Add(1)
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// runGRPC is fortio's gRPC health-check load (fgrpc.RunGRPCTest without UsePing: the standard grpc.health.v1
// Check of service "", which any server registering the health service answers, fortio's included). Headers go as
// metadata (gRPC wants lower-case keys). One connection (and stream) per thread, so sockets == threads.
func runGRPC(ro periodic.RunnerOptions, c ClientSpec) (*phaseResult, error) {
	o := &fgrpc.GRPCRunnerOptions{
		RunnerOptions:      ro,
		Destination:        strings.TrimPrefix(c.URL, "grpc://"),
		Streams:            1,
		AllowInitialErrors: true,
	}
	if len(c.Headers) > 0 {
		o.Metadata = metadata.MD{}
		for _, h := range c.Headers {
			k, v, _ := strings.Cut(h, ":")
			o.Metadata.Append(strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v))
		}
	}
	res, err := fgrpc.RunGRPCTest(o)
	if err != nil {
		return nil, err
	}
	return fromRunner(res.RunnerResults, int64(res.NumThreads), statusCodes(res.RetCodes, grpc_health_v1.HealthCheckResponse_SERVING.String())), nil
}

// runTCP is fortio's tcp echo load (tcprunner.RunTCPTest): every request is a payload (PayloadBytes of it, else
// fortio's generated 24 bytes) that must come back unchanged.
func runTCP(ro periodic.RunnerOptions, c ClientSpec) (*phaseResult, error) {
	o := &tcprunner.RunnerOptions{RunnerOptions: ro}
	o.Destination = c.URL
	if c.PayloadBytes > 0 {
		o.Payload = []byte(strings.Repeat("x", c.PayloadBytes))
	}
	res, err := tcprunner.RunTCPTest(o)
	if err != nil {
		return nil, err
	}
	return fromRunner(res.RunnerResults, int64(res.SocketCount), statusCodes(res.RetCodes, tcprunner.TCPStatusOK)), nil
}

// statusCodes maps a gRPC or tcp outcome count to Codes: ok counts as 200, every other outcome as -1.
func statusCodes[M ~map[string]int64](m M, ok string) map[int]int64 {
	codes := map[int]int64{}
	for k, n := range m {
		if k == ok {
			codes[200] += n
		} else {
			codes[-1] += n
		}
	}
	return codes
}

func codeOK(code int) bool { return code >= 200 && code < 300 }

// Local runs every client in this process (goroutines), for tests and benchmarks. The reports go through Parse and
// merge exactly like the in-cluster clients' output.
type Local struct{}

// Run runs the spec and returns the merged result.
func (Local) Run(ctx context.Context, s Spec) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, fmt.Errorf("run load: %w", err)
	}
	var specs []ClientSpec
	var names []string
	for i, perTarget := range s.ClientSpecs() {
		for _, cs := range perTarget {
			specs = append(specs, cs)
			names = append(names, fmt.Sprintf("local-%d", i))
		}
	}
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
			rep.Client = names[i]
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
	return mergeTargets(s, clients)
}
