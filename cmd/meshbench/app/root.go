// Package app is meshbench's cobra layer: one file per verb, each a flags struct, NewXCommand(streams) and
// runX(ctx, streams, flags) error. Logic lives in the packages the verbs call.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/interrupt"
	"github.com/meshbench/meshbench/internal/version"
)

// Streams are the process's standard streams, injected so commands are testable.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// globalFlags are shared by every verb (Kubeconfig and Context only by those that talk to a cluster).
type globalFlags struct {
	Kubeconfig string
	Context    string
	Verbose    int
	Quiet      bool
	Output     string // table | json | yaml (some verbs add csv)
}

// logger returns the slog logger the flags ask for: warnings only with -q, debug with -v.
func (g *globalFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	switch {
	case g.Quiet:
		level = slog.LevelWarn
	case g.Verbose > 0:
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// checkOutput validates -o against the formats a verb supports.
func (g *globalFlags) checkOutput(allowed ...string) error {
	for _, a := range allowed {
		if g.Output == a {
			return nil
		}
	}
	return badInput(fmt.Errorf("--output %q: this command supports %v", g.Output, allowed))
}

const rootLong = `meshbench measures what an Istio data plane costs on your Kubernetes cluster.

It deploys a demo app (Bank of Anthos or a synthetic fortio chain) in one or many namespaces, puts it through
each data-plane mode (none, sidecar, ambient, waypoint), verifies per pod that the mode took effect, drives load
with fortio, and reads min/max/avg CPU and memory per component from Prometheus over fixed windows. It also
benchmarks the pod network underneath (iperf3, TCP_RR, TCP_CRR) and compares runs with confidence intervals.

Exit codes:
  0  success
  1  the run failed, or some cases failed (results and reasons are still written)
  2  bad input (flags, config, an input file that is no regular file or above its cap, images, a cluster
     that does not answer); nothing was created or changed
  3  a regression gate (compare --fail-if) was violated
  130  interrupted by SIGINT (Ctrl-C), 143 by SIGTERM: cleanup ran, results measured so far are kept (run.json
       marks the run interrupted; meshbench run --resume continues it). A second signal during cleanup exits at
       once with the same code and says what may be left (meshbench cleanup removes it)`

// newRootCommand builds the command tree.
func newRootCommand(streams Streams) *cobra.Command {
	g := &globalFlags{}
	v := version.Get()
	root := &cobra.Command{
		Use:           "meshbench",
		Short:         "Measure what an Istio data plane costs on your Kubernetes cluster",
		Long:          rootLong,
		Version:       fmt.Sprintf("%s (commit %s, %s, built %s)", v.Version, v.Commit, v.GoVersion, v.BuildDate),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetVersionTemplate("meshbench {{.Version}}\n")
	// Flag parsing errors are the user's input (exit 2), not a failed run; subcommands inherit this.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	pf := root.PersistentFlags()
	pf.CountVarP(&g.Verbose, "verbose", "v", "more log output (repeatable)")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "only warnings and errors on stderr")
	pf.StringVarP(&g.Output, "output", "o", "table", "output format: table, json or yaml (some commands add csv)")
	// Only the verbs that talk to a cluster offer --kubeconfig and --context; plan, report, compare, version and
	// images work offline.
	cluster := []*cobra.Command{
		newRunCommand(streams, g),
		newCNICommand(streams, g),
		newScheduleCommand(streams, g),
		newPreflightCommand(streams, g),
		newCleanupCommand(streams, g),
	}
	for _, c := range cluster {
		addClusterFlags(c, g)
	}
	root.AddCommand(newVersionCommand(streams), newPlanCommand(streams, g))
	root.AddCommand(cluster[:2]...)
	root.AddCommand(newReportCommand(streams, g), newCompareCommand(streams, g), newProjectCommand(streams, g), newExportCommand(streams, g))
	root.AddCommand(cluster[2:]...)
	root.AddCommand(newImagesCommand(streams, g))
	addCompletionCommand(root)
	return root
}

// addCompletionCommand adds cobra's completion command now (cobra adds it lazily at Execute) and makes an unknown
// shell an error: cobra's own is not runnable, so "completion bogus-shell" printed the help and exited 0. Runnable,
// its NoArgs refuses the argument (unknown command: exit 2), as images does for an unknown verb.
func addCompletionCommand(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Args = cobra.NoArgs
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// addClusterFlags registers --kubeconfig and --context on a verb that talks to a cluster.
func addClusterFlags(c *cobra.Command, g *globalFlags) {
	c.Flags().StringVar(&g.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	c.Flags().StringVar(&g.Context, "context", "", "kubeconfig context to use (default: the current context)")
}

// deprecatedAlias registers old as a hidden, deprecated spelling of the flag new (same value): scripts written for
// the old name keep working and are told the new name on w (stderr). Not cobra's MarkDeprecated: cobra prints that
// notice on the command's output stream, stdout here, which would corrupt `-o json` and `plan --show-objects` output.
func deprecatedAlias(c *cobra.Command, w io.Writer, old, new string) {
	f := c.Flags().Lookup(new)
	c.Flags().Var(&deprecatedValue{Value: f.Value, w: w, old: old, new: new}, old, "deprecated: use --"+new)
	alias := c.Flags().Lookup(old)
	alias.NoOptDefVal, alias.Hidden = f.NoOptDefVal, true
}

// deprecatedValue is the value of a deprecated flag: it sets the new flag's value and warns once per use.
type deprecatedValue struct {
	pflag.Value
	w        io.Writer
	old, new string
}

func (v *deprecatedValue) Set(s string) error {
	fmt.Fprintf(v.w, "Flag --%s has been deprecated, use --%s\n", v.old, v.new)
	return v.Value.Set(s)
}

// IsBoolFlag keeps a boolean alias usable without a value (--retain), as the flag it replaces was.
func (v *deprecatedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Main runs meshbench and returns the process exit code.
func Main() int {
	streams := Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, stop := signalContext(streams, os.Exit, signalNoticeFor(os.Args[1:]))
	defer stop()
	return Execute(ctx, streams, os.Args[1:])
}

// Execute runs the command line args and returns the exit code; errors are printed once, on ErrOut.
func Execute(ctx context.Context, streams Streams, args []string) int {
	root := newRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && isUsageError(err) {
		err = badInput(err)
	}
	se := interrupt.FromContext(ctx)
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "Error: %v\n", err)
		if se != nil || errors.Is(err, context.Canceled) {
			fmt.Fprintln(streams.ErrOut, "interrupted: results measured so far are kept in the run directory")
		}
	}
	if se != nil {
		// Interrupted, whatever the command made of it (even a run whose last case was recorded before the
		// signal came): the shell's code, so a script knows the user or the system stopped it.
		return se.ExitCode()
	}
	return exitCode(err)
}

// isUsageError recognises cobra's own argument errors (unknown command, missing required flag, wrong argument
// count), which reach us as plain errors: they are bad input (exit 2).
func isUsageError(err error) bool {
	var ee *exitError
	if errors.As(err, &ee) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command ", "required flag(s) ", "accepts ", "requires at least ", "requires at most ", "invalid argument "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
