package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"fortio.org/log"

	"github.com/meshbench/meshbench/loadgen"
)

const loadHelp = "fortio load client, http, grpc (health check) or tcp (echo) (warm-up, measured, cool-down phases; --json prints the report meshbench parses; --hold idles as a client pod's main process)"

// runLoad runs one load client. `load --hold` instead idles until SIGTERM: it is the main process of the load client
// pods, into which meshbench execs `meshbench-agent load --url ... --json`.
func runLoad(ctx context.Context, args []string) error {
	return loadMain(ctx, args, os.Stdout)
}

func loadMain(ctx context.Context, args []string, stdout io.Writer) error {
	var c loadgen.ClientSpec
	var jsonOut, hold bool
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	c.RegisterFlags(fs, &jsonOut)
	fs.BoolVar(&hold, "hold", false, "do nothing until SIGTERM (the load client pod's main process)")
	logLevel := fs.String("log-level", "warning", "fortio log level")
	cpuProfile := fs.String("cpu-profile", "", "write a Go CPU profile of the whole load (all phases) to this file (make bench-loadgen -cpuprofile)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if hold {
		<-ctx.Done()
		return nil
	}
	if err := c.Validate(); err != nil {
		return err
	}
	lvl, err := log.ValidateLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log.SetLogLevelQuiet(lvl)
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := loadgen.RunClient(ctx, c)
	if err != nil {
		return err
	}
	rep.Client, _ = os.Hostname()
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if jsonOut {
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	cr, err := loadgen.Parse(b)
	if err != nil {
		return err
	}
	who := c.URL
	if c.Target != "" {
		who = c.Target + " (" + c.Protocol + " " + c.URL + ")"
	}
	resp := ""
	if cr.Response != nil {
		resp = fmt.Sprintf(" (response time p50 %s p99 %s)", cr.Response.OK.Percentile(50), cr.Response.OK.Percentile(99))
	}
	_, err = fmt.Fprintf(stdout, "%s: %d requests in %s, %.1f qps, 2xx p50 %s p99 %s%s, %d errors p50 %s, codes %v\n",
		who, cr.Requests(), cr.End.Sub(cr.Start).Round(time.Millisecond), cr.ActualQPS, cr.Latency.Percentile(50),
		cr.Latency.Percentile(99), resp, cr.ErrorLatency.Count(), cr.ErrorLatency.Percentile(50), cr.Codes)
	return err
}

// startCPUProfile profiles this process until the returned stop is called (the load client's own cost per request
// is what make bench-loadgen compares with wrk; the profile says where it goes).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
