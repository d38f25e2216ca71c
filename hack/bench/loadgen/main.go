// Command loadgen benchmarks meshbench's load generator (meshbench-agent load, i.e. the fortio library as meshbench
// drives it) against wrk on one loopback fortio echo server (meshbench-agent serve):
//
//   - max QPS: server pinned to one CPU, each client pinned to another (taskset), GOMAXPROCS=1 for the Go processes;
//     alternating rounds, medians; target ratio meshbench/wrk >= 0.95;
//   - client CPU per request, for both: the client process's user+system CPU (its rusage, from wait4) over the
//     requests it made, and the ratio wrk/meshbench of those. Unlike max QPS it does not depend on how much CPU the
//     client got, so it survives a noisy machine and a change of CPU;
//   - a Go floor (-go-floor, on by default): this program re-executed as the simplest Go keep-alive client (one
//     goroutine per connection, write the request, read the response; see floorClient), on the same CPU and with
//     GOMAXPROCS=1. It separates what the Go runtime costs against wrk's C event loop from what fortio and meshbench
//     add on top;
//   - fixed-QPS accuracy: meshbench-agent load --qps 1000; achieved/target; target >= 99.5 %.
//
// -cpuprofile DIR writes a Go CPU profile of every max-QPS meshbench round (meshbench-agent load --cpu-profile);
// read them with `go tool pprof -top bin/meshbench-agent DIR/*.pprof`.
//
// It prints a table and exits 1 when a target is missed. Run it through `make bench-loadgen`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"
)

type options struct {
	agent            string
	wrk              string
	serverCPU        string
	clientCPU        string
	rounds           int
	duration         time.Duration
	connections      int
	fixedQPS         float64
	fixedDuration    time.Duration
	minRatio, minAcc float64
	goFloor          bool
	cpuProfile       string
}

func main() {
	var o options
	flag.StringVar(&o.agent, "agent", "bin/meshbench-agent", "meshbench-agent binary")
	flag.StringVar(&o.wrk, "wrk", "wrk", "wrk binary")
	flag.StringVar(&o.serverCPU, "server-cpu", "0", "CPU list for the server (taskset -c)")
	flag.StringVar(&o.clientCPU, "client-cpu", "1", "CPU list for the clients (taskset -c)")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds per tool (medians; >= 3)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "max-QPS round length")
	flag.IntVar(&o.connections, "connections", 8, "connections per client")
	flag.Float64Var(&o.fixedQPS, "fixed-qps", 1000, "fixed-rate accuracy target QPS")
	flag.DurationVar(&o.fixedDuration, "fixed-duration", 10*time.Second, "fixed-rate round length")
	flag.Float64Var(&o.minRatio, "min-ratio", 0.95, "fail below this max-QPS ratio meshbench/wrk")
	flag.Float64Var(&o.minAcc, "min-accuracy", 0.995, "fail below this fixed-QPS accuracy")
	flag.BoolVar(&o.goFloor, "go-floor", true, "also measure the simplest Go keep-alive client (the Go runtime's floor)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "directory for a Go CPU profile of each max-QPS meshbench round")
	floorURL := flag.String("floor-client", "", "internal: run as the Go floor client against this URL")
	flag.Parse()
	if *floorURL != "" {
		if err := runFloorClient(*floorURL, o.connections, o.duration, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench-loadgen floor client:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-loadgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.rounds < 3 {
		return errors.New("-rounds must be >= 3 (medians)")
	}
	for _, bin := range []string{o.agent, o.wrk, "taskset"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found: %w", bin, err)
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	srv := exec.CommandContext(ctx, "taskset", "-c", o.serverCPU, o.agent, "serve", "--http-port", strconv.Itoa(port), "--tcp-port", "", "--udp-port", "")
	srv.Env = append(os.Environ(), "GOMAXPROCS=1")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	if err := waitPort(port, 10*time.Second); err != nil {
		return err
	}
	fmt.Printf("server: meshbench-agent serve (fortio echo) on %s, CPU %s; clients on CPU %s; %d connections, %s rounds\n",
		url, o.serverCPU, o.clientCPU, o.connections, o.duration)

	if o.cpuProfile != "" {
		if err := os.MkdirAll(o.cpuProfile, 0o755); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	var mb, wrk, floor []clientRun
	for i := range o.rounds {
		profile := ""
		if o.cpuProfile != "" {
			profile = filepath.Join(o.cpuProfile, fmt.Sprintf("meshbench-round%d.pprof", i+1))
		}
		q, err := agentLoad(ctx, o, url, -1, o.connections, o.duration, profile)
		if err != nil {
			return err
		}
		mb = append(mb, q.clientRun)
		w, err := wrkLoad(ctx, o, url)
		if err != nil {
			return err
		}
		wrk = append(wrk, w)
		line := fmt.Sprintf("round %d: meshbench %s | wrk %s", i+1, q.clientRun, w)
		if o.goFloor {
			f, err := floorLoad(ctx, o, url)
			if err != nil {
				return err
			}
			floor = append(floor, f)
			line += " | go floor " + f.String()
		}
		fmt.Printf("%s | qps ratio %.3f, CPU ratio %.3f\n", line, q.qps/w.qps, w.cpuPerRequestUS()/q.cpuPerRequestUS())
	}
	ratio := medianOf(mb, clientRun.QPS) / medianOf(wrk, clientRun.QPS)
	mbCPU, wrkCPU := medianOf(mb, clientRun.cpuPerRequestUS), medianOf(wrk, clientRun.cpuPerRequestUS)

	var accs []float64
	for i := range 3 {
		// 4 connections, as in Istio's published figures.
		q, err := agentLoad(ctx, o, url, o.fixedQPS, 4, o.fixedDuration, "")
		if err != nil {
			return err
		}
		// Both the rate fortio measured and the count against the ideal count over the measured phase.
		acc := min(q.qps/o.fixedQPS, float64(q.measured)/(o.fixedQPS*q.elapsed.Seconds()))
		accs = append(accs, acc)
		fmt.Printf("fixed %d: target %.0f qps, achieved %.2f qps, %d requests in %s, accuracy %.3f%%\n",
			i+1, o.fixedQPS, q.qps, q.measured, q.elapsed.Round(time.Millisecond), 100*acc)
	}
	acc := median(accs)
	fmt.Printf("\nmax-QPS ratio meshbench/wrk (medians of %d rounds): %.3f (meshbench %.0f qps, wrk %.0f qps; target >= %.2f)\n",
		o.rounds, ratio, medianOf(mb, clientRun.QPS), medianOf(wrk, clientRun.QPS), o.minRatio)
	fmt.Printf("client CPU per request (medians): meshbench %.2f µs (%.0f%% busy), wrk %.2f µs (%.0f%% busy); CPU ratio wrk/meshbench %.3f\n",
		mbCPU, 100*medianOf(mb, clientRun.busy), wrkCPU, 100*medianOf(wrk, clientRun.busy), wrkCPU/mbCPU)
	if o.goFloor {
		floorCPU := medianOf(floor, clientRun.cpuPerRequestUS)
		fmt.Printf("go floor (plain net.Conn loop): %.0f qps, %.2f µs/req (%.0f%% busy); CPU ratio wrk/floor %.3f, floor/meshbench %.3f\n",
			medianOf(floor, clientRun.QPS), floorCPU, 100*medianOf(floor, clientRun.busy), wrkCPU/floorCPU, floorCPU/mbCPU)
	}
	fmt.Printf("fixed-QPS accuracy at %.0f qps (median of 3): %.3f%% (target >= %.1f%%)\n", o.fixedQPS, 100*acc, 100*o.minAcc)
	var errs []error
	if ratio < o.minRatio {
		errs = append(errs, fmt.Errorf("max-QPS ratio %.3f below %.2f", ratio, o.minRatio))
	}
	if acc < o.minAcc {
		errs = append(errs, fmt.Errorf("fixed-QPS accuracy %.3f%% below %.1f%%", 100*acc, 100*o.minAcc))
	}
	return errors.Join(errs...)
}

// clientRun is one client process's max-QPS round: its rate, its requests, the CPU it used (user+system, from its
// rusage; the whole process, start-up included) and its wall time.
type clientRun struct {
	qps      float64
	requests int64
	cpu      time.Duration
	wall     time.Duration
}

// busy is the share of its wall time the client was on a CPU. CPU per request compares clients only when both are
// near 100 %: a client that waits (for the server, or for a CPU on a noisy machine) gets fewer requests per wakeup,
// and each costs it more.
func (r clientRun) busy() float64 {
	if r.wall <= 0 {
		return 0
	}
	return r.cpu.Seconds() / r.wall.Seconds()
}

// QPS is the round's rate.
func (r clientRun) QPS() float64 { return r.qps }

// String is the round as the table prints it.
func (r clientRun) String() string {
	return fmt.Sprintf("%6.0f qps %5.2f µs/req %3.0f%% busy", r.qps, r.cpuPerRequestUS(), 100*r.busy())
}

// cpuPerRequestUS is the client's CPU per request in µs (0 without requests).
func (r clientRun) cpuPerRequestUS() float64 {
	if r.requests <= 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.requests)
}

// runClientCmd runs a client process and returns its stdout, its user+system CPU and its wall time.
func runClientCmd(cmd *exec.Cmd) (out []byte, cpu, wall time.Duration, err error) {
	start := time.Now()
	out, err = cmd.Output()
	wall = time.Since(start)
	if err != nil {
		return nil, 0, 0, err
	}
	return out, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), wall, nil
}

type agentResult struct {
	clientRun
	measured int64 // requests of the measured phase (clientRun.requests counts every phase: they all used CPU)
	elapsed  time.Duration
}

// agentLoad runs meshbench-agent load --json and reads the measured phase from its report; profile, when set, is
// where the agent writes its CPU profile.
func agentLoad(ctx context.Context, o options, url string, qps float64, conns int, d time.Duration, profile string) (agentResult, error) {
	args := []string{"-c", o.clientCPU, o.agent, "load", "--url", url,
		"--qps", strconv.FormatFloat(qps, 'f', -1, 64), "--connections", strconv.Itoa(conns),
		"--duration", d.String(), "--json"}
	if profile != "" {
		args = append(args, "--cpu-profile", profile)
	}
	cmd := exec.CommandContext(ctx, "taskset", args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	out, cpu, wall, err := runClientCmd(cmd)
	if err != nil {
		return agentResult{}, fmt.Errorf("meshbench-agent load: %w", err)
	}
	res, err := parseAgentReport(out)
	if err != nil {
		return agentResult{}, err
	}
	res.cpu, res.wall = cpu, wall
	return res, nil
}

// parseAgentReport reads the measured phase (rate, requests, length) and the requests of all phases from a
// `meshbench-agent load --json` report.
func parseAgentReport(out []byte) (agentResult, error) {
	var rep struct {
		Phases []struct {
			Name      string    `json:"name"`
			Start     time.Time `json:"start"`
			End       time.Time `json:"end"`
			Requests  int64     `json:"requests"`
			ActualQPS float64   `json:"actualQPS"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return agentResult{}, fmt.Errorf("parse meshbench-agent report: %w", err)
	}
	var res agentResult
	found := false
	for _, p := range rep.Phases {
		res.requests += p.Requests
		if p.Name == "measured" {
			res.qps, res.measured, res.elapsed, found = p.ActualQPS, p.Requests, p.End.Sub(p.Start), true
		}
	}
	if !found {
		return agentResult{}, errors.New("meshbench-agent report has no measured phase")
	}
	return res, nil
}

var (
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkRequests = regexp.MustCompile(`(?m)^\s*([0-9]+) requests in `)
)

func wrkLoad(ctx context.Context, o options, url string) (clientRun, error) {
	cmd := exec.CommandContext(ctx, "taskset", "-c", o.clientCPU, o.wrk, "-t1", "-c"+strconv.Itoa(o.connections),
		"-d"+strconv.Itoa(int(o.duration.Seconds()))+"s", url)
	out, cpu, wall, err := runClientCmd(cmd)
	if err != nil {
		return clientRun{}, fmt.Errorf("wrk: %w", err)
	}
	r, err := parseWrk(out)
	if err != nil {
		return clientRun{}, err
	}
	r.cpu, r.wall = cpu, wall
	return r, nil
}

// parseWrk reads the rate and the request count from wrk's report.
func parseWrk(out []byte) (clientRun, error) {
	rps, n := wrkRPS.FindSubmatch(out), wrkRequests.FindSubmatch(out)
	if rps == nil || n == nil {
		return clientRun{}, fmt.Errorf("no Requests/sec or request count in wrk output:\n%s", out)
	}
	var r clientRun
	var err error
	if r.qps, err = strconv.ParseFloat(string(rps[1]), 64); err != nil {
		return clientRun{}, fmt.Errorf("wrk Requests/sec: %w", err)
	}
	if r.requests, err = strconv.ParseInt(string(n[1]), 10, 64); err != nil {
		return clientRun{}, fmt.Errorf("wrk request count: %w", err)
	}
	return r, nil
}

// medianOf is the median of f over the runs.
func medianOf[T any](runs []T, f func(T) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return median(v)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(port int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("server did not listen on port %d within %s", port, d)
}
