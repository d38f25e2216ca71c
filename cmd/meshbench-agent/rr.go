package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"fortio.org/fortio/periodic"
	"fortio.org/fortio/stats"
	"fortio.org/fortio/tcprunner"
	"fortio.org/log"

	"github.com/meshbench/meshbench/internal/nettool"
)

const rrHelp = "TCP_RR: request/response over persistent connections to a TCP echo server (fortio tcprunner); --json prints one result; --hold idles as a client pod's main process"

// rrResolution is the latency histogram bucket (seconds): 10 µs, so sub-millisecond percentiles are real, not
// interpolated inside fortio's default 1 ms bucket.
const rrResolution = 1e-5

// rrPercentiles are reported for both RR and CRR.
var rrPercentiles = []float64{50, 90, 99, 99.9}

// rrFlags are the flags rr and crr share.
type rrFlags struct {
	target        string
	duration      time.Duration
	connections   int
	requestBytes  int
	responseBytes int
	qps           float64
	timeout       time.Duration
	jsonOut       bool
	hold          bool
	logLevel      string
	// portMin/portMax: crr's explicit local port range [min, max); 0 = the default.
	portMin, portMax int
}

func parseRRFlags(name string, args []string, stderr io.Writer) (rrFlags, error) {
	var f rrFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.target, "target", "", "echo server host:port (meshbench-agent serve --tcp-port), e.g. 10.244.1.7:8078")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to run")
	fs.IntVar(&f.connections, "connections", 1, "concurrent connections (netperf runs one)")
	fs.IntVar(&f.requestBytes, "request-bytes", 100, "request size; the echo server answers with the same size")
	fs.IntVar(&f.responseBytes, "response-bytes", 0, "response size; must equal --request-bytes (echo) when set")
	fs.Float64Var(&f.qps, "qps", -1, "total transactions/s; -1 = as fast as possible (netperf's behaviour); 0 is not allowed")
	fs.DurationVar(&f.timeout, "timeout", 3*time.Second, "per-transaction timeout (connect + write + read)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON result (what meshbench parses) instead of a text line")
	fs.BoolVar(&f.hold, "hold", false, "do nothing until SIGTERM (the CNI client pod's main process)")
	fs.StringVar(&f.logLevel, "log-level", "warning", "fortio log level")
	localPorts := ""
	if name == "crr" {
		fs.StringVar(&localPorts, "local-ports", "", "crr: local ports LO-HI to bind (default 33000-64999); give runs towards one backend over different paths disjoint ranges")
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.hold {
		return f, nil
	}
	var errs []error
	if f.target == "" {
		errs = append(errs, errors.New("--target host:port is required"))
	}
	if f.duration < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--duration %s: must be >= 100ms", f.duration))
	}
	if f.connections < 1 || f.connections > 1024 {
		errs = append(errs, fmt.Errorf("--connections %d: must be 1-1024", f.connections))
	}
	if f.requestBytes < 1 || f.requestBytes > 1<<20 {
		errs = append(errs, fmt.Errorf("--request-bytes %d: must be 1-1048576", f.requestBytes))
	}
	if f.responseBytes == 0 {
		f.responseBytes = f.requestBytes
	}
	if f.responseBytes != f.requestBytes {
		errs = append(errs, fmt.Errorf("--response-bytes %d: the echo server answers with the request size (%d); use netperf for asymmetric sizes",
			f.responseBytes, f.requestBytes))
	}
	if f.qps == 0 {
		errs = append(errs, errors.New("--qps 0: fortio would run at its 8 qps default; use -1 for maximum speed"))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be > 0", f.timeout))
	}
	if localPorts != "" {
		lo, hi, ok := strings.Cut(localPorts, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || a < 1024 || b > 65535 || b-a+1 < f.connections*16 {
			errs = append(errs, fmt.Errorf("--local-ports %q: want LO-HI within 1024-65535 with at least 16 ports per connection", localPorts))
		} else {
			f.portMin, f.portMax = a, b+1
		}
	}
	return f, errors.Join(errs...)
}

// runnerOptions are the periodic engine options shared by rr and crr. stop lets ctx abort the run without
// fortio's process-wide SIGINT handler (which Normalize installs only when Stop is nil).
func (f rrFlags) runnerOptions(runType string, stop *periodic.Aborter) periodic.RunnerOptions {
	return periodic.RunnerOptions{
		RunType:     runType,
		QPS:         f.qps,
		Duration:    f.duration,
		NumThreads:  f.connections,
		Percentiles: rrPercentiles,
		Resolution:  rrResolution,
		Out:         io.Discard,
		Stop:        stop,
	}
}

// abortOnDone aborts the run when ctx ends; the returned func releases the watcher.
func abortOnDone(ctx context.Context, a *periodic.Aborter) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			a.Abort(false)
		case <-done:
		}
	}()
	return func() { close(done) }
}

// payload is the request: printable and position-dependent, so a mis-ordered echo fails the comparison.
func payload(n int) []byte {
	const alphabet = "meshbench-rr-0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return b
}

// builtinResult turns fortio's aggregated results into the JSON meshbench parses.
func builtinResult(test string, f rrFlags, res periodic.RunnerResults, errKinds map[string]int64, sockets int64) nettool.BuiltinResult {
	var errs int64
	for _, n := range errKinds {
		errs += n
	}
	b := nettool.BuiltinResult{
		Tool: string(nettool.ToolBuiltin), Test: test, Target: f.target, Connections: f.connections,
		RequestBytes: f.requestBytes, ResponseBytes: f.responseBytes, RequestedSeconds: f.duration.Seconds(),
		Seconds: res.ActualDuration.Seconds(), Errors: errs, Sockets: sockets, Resolution: rrResolution,
		FortioVersion: res.Version,
	}
	if len(errKinds) > 0 {
		b.ErrorKinds = errKinds
	}
	if h := res.DurationHistogram; h != nil {
		b.Transactions = h.Count - errs
		if b.Transactions < 0 {
			b.Transactions = 0
		}
		b.LatencyMs = latencyMs(h)
	}
	if b.Seconds > 0 {
		b.TransactionsPerSecond = float64(b.Transactions) / b.Seconds
	}
	return b
}

func latencyMs(h *stats.HistogramData) nettool.BuiltinLatency {
	l := nettool.BuiltinLatency{Avg: h.Avg * 1e3, Min: h.Min * 1e3, Max: h.Max * 1e3}
	for _, p := range h.Percentiles {
		switch p.Percentile {
		case 50:
			l.P50 = p.Value * 1e3
		case 90:
			l.P90 = p.Value * 1e3
		case 99:
			l.P99 = p.Value * 1e3
		case 99.9:
			l.P999 = p.Value * 1e3
		}
	}
	return l
}

func printBuiltin(w io.Writer, jsonOut bool, b nettool.BuiltinResult) error {
	if jsonOut {
		enc := json.NewEncoder(w)
		return enc.Encode(b)
	}
	_, err := fmt.Fprintf(w, "%s %s %s c=%d %dB: %.1f trans/s over %.2fs, latency ms avg %.4f p50 %.4f p90 %.4f p99 %.4f p99.9 %.4f, errors %d, sockets %d\n",
		b.Test, b.Tool, b.Target, b.Connections, b.RequestBytes, b.TransactionsPerSecond, b.Seconds, b.LatencyMs.Avg,
		b.LatencyMs.P50, b.LatencyMs.P90, b.LatencyMs.P99, b.LatencyMs.P999, b.Errors, b.Sockets)
	return err
}

func runRR(ctx context.Context, args []string) error {
	return rrMain(ctx, args, os.Stdout, os.Stderr)
}

func rrMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRRFlags("rr", args, stderr)
	if err != nil {
		return err
	}
	if f.hold {
		<-ctx.Done()
		return nil
	}
	log.SetLogLevelStr(f.logLevel)
	b, err := runTCPRR(ctx, f)
	if err != nil {
		return err
	}
	if err := printBuiltin(stdout, f.jsonOut, b); err != nil {
		return err
	}
	return ctx.Err()
}

// runTCPRR is netperf TCP_RR on fortio's tcprunner: every connection stays open, writes the request and reads the
// echo back (the echo is compared byte for byte).
func runTCPRR(ctx context.Context, f rrFlags) (nettool.BuiltinResult, error) {
	stop := periodic.NewAborter()
	release := abortOnDone(ctx, stop)
	defer release()
	o := tcprunner.RunnerOptions{
		RunnerOptions: f.runnerOptions(nettool.BuiltinTestRR, stop),
		TCPOptions: tcprunner.TCPOptions{
			Destination: tcprunner.TCPURLPrefix + f.target,
			Payload:     payload(f.requestBytes),
			ReqTimeout:  f.timeout,
		},
	}
	res, err := tcprunner.RunTCPTest(&o)
	if err != nil {
		return nettool.BuiltinResult{}, fmt.Errorf("tcp rr to %s: %w", f.target, err)
	}
	kinds := map[string]int64{}
	for k, n := range res.RetCodes {
		if k != tcprunner.TCPStatusOK && n > 0 {
			kinds[shortError(k)] += n
		}
	}
	return builtinResult(nettool.BuiltinTestRR, f, res.RunnerResults, kinds, int64(res.SocketCount)), nil
}

// shortError keeps error kinds readable and bounded: "dial tcp 10.0.0.1:8078: connect: connection refused" ->
// "connect: connection refused".
func shortError(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		op := s[:i]
		if j := strings.LastIndex(op, ": "); j >= 0 {
			op = op[j+2:]
		}
		if !strings.ContainsAny(op, " .:") {
			return op + ": " + s[i+2:]
		}
		return s[i+2:]
	}
	return s
}
