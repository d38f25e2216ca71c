package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/runner"
)

type runFlags struct {
	file          string
	resume        string
	keep          bool
	allowExisting bool
	prometheusURL string
	outputDir     string
	readyTimeout  time.Duration
	verifyTimeout time.Duration
	deleteTimeout time.Duration
	imageRegistry string
	skipImages    bool
}

// newRunCommand runs a scenario end to end: deploy, switch modes, verify, load, collect, summarise.
func newRunCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run -f SCENARIO | --resume RUN_DIR [-f SCENARIO]",
		Short: "Run a scenario: deploy, switch data-plane modes, verify, load with fortio, collect min/max/avg CPU and memory",
		Long: `Run every case of a scenario's plan. Per case: switch the data-plane mode when it changes (apply, wait for
the workloads, verify every pod; a case whose verification fails is recorded failed and not measured), measure the
idle window, run fortio load from client pods in the app's namespace (same data plane as the app), and read min,
max and avg CPU and memory per component from Prometheus (or, without one, the kubelets' resource metrics) over
the exact windows. Each case is written to RUN_DIR/samples.jsonl and cases.jsonl as soon as it ends; --resume
RUN_DIR continues an interrupted or killed run without repeating recorded cases (ok or skipped; failed ones run
again), after removing what a killed session left. At the end summary.json and a report are written and the
resource tables are printed.

Flags override the scenario file (defaults < file < flags) and are checked like it; run.json records the scenario
with the flags applied, so --resume repeats what ran. Nothing is created (no run directory, nothing in the
cluster) before the scenario and flags are valid, every image resolves and the API server answers.

` + resumeRuleHelp + `
--prometheus-url may differ (a Prometheus that moved).

Ctrl-C or SIGTERM stops after cleaning up (app namespaces deleted, namespace labels restored) unless --keep,
marks run.json and the report interrupted (which case, which step, the cases not run) and exits 130 (SIGINT) or
143 (SIGTERM); a second signal exits at once without cleanup (meshbench cleanup removes what is left).

Exit code 1 when some cases failed (everything is still written), 2 for bad input, which includes an image the
registry does not have or refuses (--skip-image-check) and an API server that does not answer.`,
		Example: `  meshbench run -f examples/quickstart.yaml
  meshbench run --resume runs/quickstart-20261201-101500-3fa2
  meshbench run -f examples/quickstart.yaml --resume runs/quickstart-20261201-101500-3fa2`,
		Args:        cobra.NoArgs,
		Annotations: runSignal(),
		RunE:        func(cmd *cobra.Command, _ []string) error { return runRun(cmd.Context(), streams, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "scenario file (YAML); with --resume, refused unless it describes the recorded run")
	fl.StringVar(&f.resume, "resume", "", "continue the run in RUN_DIR with its recorded scenario and plan (-f, if given, must describe it)")
	fl.BoolVar(&f.keep, "keep", false, "keep the app, load clients and mode labels after the run")
	fl.BoolVar(&f.allowExisting, "allow-existing-namespaces", false, "deploy into app namespaces that already exist (never deleted)")
	fl.StringVar(&f.prometheusURL, "prometheus-url", "", "Prometheus URL (overrides spec.prometheus)")
	fl.StringVar(&f.outputDir, "output-dir", "", "directory that receives the run directory (overrides spec.output.dir)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 10*time.Minute, "how long workloads and load clients may take to become ready")
	fl.DurationVar(&f.verifyTimeout, "verify-timeout", 3*time.Minute, "how long every pod may take to prove the data-plane mode")
	fl.DurationVar(&f.deleteTimeout, "delete-timeout", runner.DefaultDeleteTimeout, "bound on teardown and label restore (also after Ctrl-C)")
	addImageRegistryFlag(fl, &f.imageRegistry)
	addSkipImageCheckFlag(fl, &f.skipImages)
	deprecatedAlias(cmd, streams.ErrOut, "retain", "keep")
	deprecatedAlias(cmd, streams.ErrOut, "finalize-timeout", "delete-timeout")
	return cmd
}

func runRun(ctx context.Context, streams Streams, g *globalFlags, f *runFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	s, err := runScenario(f)
	if err != nil {
		return err
	}
	// Every image is resolved, and the API server must answer, before anything is created.
	clients, kubeVersion, err := connectRun(ctx, g, streams, s, true, false, f.skipImages)
	if err != nil {
		return err
	}
	cfg := orchestrate.RunConfig{Scenario: s, ResumeDir: f.resume, Keep: f.keep, AllowExisting: f.allowExisting,
		ReadyTimeout: f.readyTimeout, VerifyTimeout: f.verifyTimeout, DeleteTimeout: f.deleteTimeout}
	res, runErr := orchestrate.Run(ctx, cfg, orchestrate.Deps{Clients: clients, KubeVersion: kubeVersion,
		Log: g.logger(streams.ErrOut), Progress: progressWriter(g, streams.ErrOut)})
	return runDone(ctx, streams, g, res, runErr)
}

// runDone prints what a run wrote and turns its outcome into the verb's error: the runner's, an interruption
// (wrapping the context's cause, an interrupt.SignalError after a signal: exit 130/143), or the failed cases (exit 1).
func runDone(ctx context.Context, streams Streams, g *globalFlags, res orchestrate.RunResult, runErr error) error {
	if res.Dir == "" { // refused before the run directory existed
		return runErr
	}
	if res.Markdown != "" {
		if err := printValue(streams.Out, g.Output, res.Summary, func() string { return res.Markdown }); err != nil {
			return errors.Join(runErr, err)
		}
	}
	// Which of the app's services pays most for its sidecar, in brief (all of them are in the report).
	fmt.Fprint(streams.ErrOut, sidecarCostBrief(res.Summary, 3))
	fmt.Fprintf(streams.ErrOut, "run directory: %s (report: %s)\n", res.Dir, filepath.Join(res.Dir, "report", report.MarkdownFile))
	out := res.Outcome
	switch {
	case runErr != nil:
		return runErr
	case out.Interrupted:
		return fmt.Errorf("run %s interrupted after %d of %d cases (continue with --resume %s): %w",
			res.RunID, out.Recorded(), out.Total, res.Dir, context.Cause(ctx))
	case len(out.Failed) > 0:
		return &exitError{Code: exitRunFailed, Err: fmt.Errorf("%d of %d cases failed (results and reasons are in %s):\n  %s",
			len(out.Failed), out.Total, res.Dir, strings.Join(out.Failed, "\n  "))}
	}
	return nil
}
