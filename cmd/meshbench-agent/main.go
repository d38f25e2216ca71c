// Command meshbench-agent is the binary meshbench runs inside the cluster (image spec.images.agent): the apps'
// fortio servers, the test clients whose results meshbench reads back, and curl for requests from inside the mesh.
// Usage: meshbench-agent <subcommand> [flags]; subcommands() lists them, each in its own file.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// subcommand runs one agent mode until ctx is cancelled or its work is done.
type subcommand struct {
	help string
	run  func(ctx context.Context, args []string) error
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"serve": {help: "fortio HTTP echo (optionally forwarding to downstream services) and TCP/UDP echo servers", run: runServe},
		"load":  {help: loadHelp, run: runLoad},
		"rr":    {help: rrHelp, run: runRR},
		"crr":   {help: crrHelp, run: runCRR},
		"curl":  {help: curlHelp, run: runCurl},
		"spans": {help: spansHelp, run: runSpans},
		// cgroups wraps the cni test containers' commands: 1 s CPU and memory samples without Prometheus.
		"cgroups": {help: cgroupsHelp, run: runCgroups},
	}
}

func main() {
	os.Exit(mainE())
}

func mainE() int {
	cmds := subcommands()
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(cmds)
		return 2
	}
	c, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "meshbench-agent: unknown subcommand %q\n", os.Args[1])
		usage(cmds)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, os.Args[2:]); err != nil {
		var ec exitCodeError
		if errors.As(err, &ec) {
			return ec.code // the wrapped command's own code, silently: its stderr already told why
		}
		fmt.Fprintf(os.Stderr, "meshbench-agent %s: %v\n", os.Args[1], err)
		return 1
	}
	return 0
}

func usage(cmds map[string]subcommand) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, "usage: meshbench-agent <subcommand> [flags]")
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, cmds[n].help)
	}
}
