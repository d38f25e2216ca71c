// Command loadgen benchmarks meshbench's load generator (meshbench-agent load, i.e. the fortio library as meshbench
// drives it) against wrk on one loopback fortio echo server (meshbench-agent serve):
//
//   - max QPS: server pinned to one CPU, each client pinned to another (taskset), GOMAXPROCS=1 for the Go processes;
//     alternating rounds, medians; target ratio meshbench/wrk >= 0.95;
//   - fixed-QPS accuracy: meshbench-agent load --qps 1000; achieved/target; target >= 99.5 %.
//
// It prints a table and exits 1 when a target is missed. Run it through `make bench-loadgen`.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	flag.Parse()
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

	var mb, wrk []float64
	for i := range o.rounds {
		q, err := agentLoad(ctx, o, url, -1, o.connections, o.duration)
		if err != nil {
			return err
		}
		mb = append(mb, q.actual)
		w, err := wrkLoad(ctx, o, url)
		if err != nil {
			return err
		}
		wrk = append(wrk, w)
		fmt.Printf("round %d: meshbench %9.0f qps   wrk %9.0f qps   ratio %.3f\n", i+1, q.actual, w, q.actual/w)
	}
	ratio := median(mb) / median(wrk)

	var accs []float64
	for i := range 3 {
		// 4 connections, as in Istio's published figures.
		q, err := agentLoad(ctx, o, url, o.fixedQPS, 4, o.fixedDuration)
		if err != nil {
			return err
		}
		// Both the rate fortio measured and the count against the ideal count over the measured phase.
		acc := min(q.actual/o.fixedQPS, float64(q.requests)/(o.fixedQPS*q.elapsed.Seconds()))
		accs = append(accs, acc)
		fmt.Printf("fixed %d: target %.0f qps, achieved %.2f qps, %d requests in %s, accuracy %.3f%%\n",
			i+1, o.fixedQPS, q.actual, q.requests, q.elapsed.Round(time.Millisecond), 100*acc)
	}
	acc := median(accs)
	fmt.Printf("\nmax-QPS ratio meshbench/wrk (medians of %d rounds): %.3f (meshbench %.0f qps, wrk %.0f qps; target >= %.2f)\n",
		o.rounds, ratio, median(mb), median(wrk), o.minRatio)
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

type agentResult struct {
	actual   float64
	requests int64
	elapsed  time.Duration
}

// agentLoad runs meshbench-agent load --json and reads the measured phase from its report.
func agentLoad(ctx context.Context, o options, url string, qps float64, conns int, d time.Duration) (agentResult, error) {
	cmd := exec.CommandContext(ctx, "taskset", "-c", o.clientCPU, o.agent, "load", "--url", url,
		"--qps", strconv.FormatFloat(qps, 'f', -1, 64), "--connections", strconv.Itoa(conns),
		"--duration", d.String(), "--json")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return agentResult{}, fmt.Errorf("meshbench-agent load: %w", err)
	}
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
	for _, p := range rep.Phases {
		if p.Name == "measured" {
			return agentResult{actual: p.ActualQPS, requests: p.Requests, elapsed: p.End.Sub(p.Start)}, nil
		}
	}
	return agentResult{}, errors.New("meshbench-agent report has no measured phase")
}

var wrkRPS = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func wrkLoad(ctx context.Context, o options, url string) (float64, error) {
	cmd := exec.CommandContext(ctx, "taskset", "-c", o.clientCPU, o.wrk, "-t1", "-c"+strconv.Itoa(o.connections),
		"-d"+strconv.Itoa(int(o.duration.Seconds()))+"s", url)
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("wrk: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := wrkRPS.FindStringSubmatch(sc.Text()); m != nil {
			return strconv.ParseFloat(m[1], 64)
		}
	}
	return 0, fmt.Errorf("no Requests/sec in wrk output:\n%s", out)
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
