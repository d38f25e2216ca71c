package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
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
	_, err = fmt.Fprintf(stdout, "%s: %d requests in %s, %.1f qps, 2xx p50 %s p99 %s, %d errors p50 %s, codes %v\n",
		who, cr.Requests(), cr.End.Sub(cr.Start).Round(time.Millisecond), cr.ActualQPS, cr.Latency.Percentile(50),
		cr.Latency.Percentile(99), cr.ErrorLatency.Count(), cr.ErrorLatency.Percentile(50), cr.Codes)
	return err
}
