package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

type cniFlags struct {
	file          string
	resume        string
	outputDir     string
	keep          bool
	readyTimeout  time.Duration
	deleteTimeout time.Duration
	imageRegistry string
	skipImages    bool
}

// newCNICommand benchmarks the pod network underneath the mesh.
func newCNICommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &cniFlags{}
	cmd := &cobra.Command{
		Use:   "cni -f SCENARIO | --resume RUN_DIR [-f SCENARIO]",
		Short: "Benchmark the pod network: same node, cross node, ClusterIP, host baseline (iperf3 TCP/UDP, TCP_RR, TCP_CRR)",
		Long: `Measure the pod network underneath the mesh, as the CNI benchmarks do, with every cell either a mean with
its 95% confidence interval or the reason it is empty. Paths: same-node (client and server on node A),
cross-node (server on node B), service (a ClusterIP Service whose only backend is on node B; each iperf3 sample
proves it went through the Service), host (hostNetwork client on A to hostNetwork server on B: the baseline).
Tests: iperf3 TCP (goodput, retransmits, RTT), iperf3 UDP at spec.cni.udpBitrate (delivered rate, loss, jitter),
TCP_RR and TCP_CRR (netperf when the network image has it, else the built-in fortio tool of the agent image).

Everything runs in one namespace, deleted at the end (also on failure and Ctrl-C) unless --keep. Raw tool output
is kept in RUN_DIR/raw/ (<path>-<test>-<n>.json only when it parses as JSON, .txt netperf text, .err.txt an exec
error or other output), samples in RUN_DIR/samples.jsonl. The scenario needs a spec.cni section; a bad config or
flag exits 2 before the cluster is touched, and so do an image its registry does not have or refuses (the agent and
network images are resolved first; --skip-image-check) and an API server that does not answer. Exit 1 when a case
failed (the table says why); 130 after Ctrl-C, 143 after SIGTERM (cleanup ran, run.json marks the run
interrupted). ` + "`meshbench report MESH_RUN_DIR CNI_RUN_DIR`" + ` puts this run next to a mesh run of the same cluster in
one report.

--resume RUN_DIR continues a cni run that was interrupted or killed: the recorded scenario runs again on the nodes
the kept cases used, recorded cases (ok or skipped) are kept as they are, the others (failed, interrupted, never
started) run, after the namespace a killed run left is deleted.

` + resumeRuleHelp,
		Example: `  meshbench cni -f examples/study-b-network.yaml
  meshbench cni -f examples/study-b-network.yaml -o json --output-dir runs
  meshbench cni --resume runs/cni-20261201-101500-3fa2
  meshbench cni -f examples/study-b-network.yaml --resume runs/cni-20261201-101500-3fa2`,
		Args:        cobra.NoArgs,
		Annotations: cniSignal(),
		RunE:        func(cmd *cobra.Command, _ []string) error { return runCNI(cmd.Context(), streams, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "scenario file (YAML) with a spec.cni section; with --resume, refused unless it describes the recorded run")
	fl.StringVar(&f.resume, "resume", "", "continue the cni run in RUN_DIR with its recorded scenario, nodes and kept cases (-f, if given, must describe it)")
	fl.StringVar(&f.outputDir, "output-dir", "", "directory that receives the run directory (overrides spec.output.dir)")
	fl.BoolVar(&f.keep, "keep", false, "keep the test namespace and pods after the run (delete them with meshbench cleanup)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 3*time.Minute, "how long the test pods may take to become ready")
	fl.DurationVar(&f.deleteTimeout, "delete-timeout", 3*time.Minute, "bound on deleting the test namespace (also after Ctrl-C)")
	deprecatedAlias(cmd, streams.ErrOut, "retain", "keep")
	deprecatedAlias(cmd, streams.ErrOut, "finalize-timeout", "delete-timeout")
	addImageRegistryFlag(fl, &f.imageRegistry)
	addSkipImageCheckFlag(fl, &f.skipImages)
	return cmd
}

func runCNI(ctx context.Context, streams Streams, g *globalFlags, f *cniFlags) error {
	if err := g.checkOutput("table", "json", "yaml", "csv"); err != nil {
		return err
	}
	s, err := cniScenario(f)
	if err != nil {
		return err
	}
	clients, kubeVersion, err := connectRun(ctx, g, streams, s, false, true, f.skipImages)
	if err != nil {
		return err
	}
	res, runErr := orchestrate.CNI(ctx, orchestrate.CNIConfig{Scenario: s, ResumeDir: f.resume, Keep: f.keep, ReadyTimeout: f.readyTimeout, DeleteTimeout: f.deleteTimeout},
		orchestrate.Deps{Clients: clients, KubeVersion: kubeVersion, Log: g.logger(streams.ErrOut), Progress: progressWriter(g, streams.ErrOut)})
	if res.Report == nil {
		return runErr
	}
	if err := printCNIReport(streams, g.Output, res.Report); err != nil {
		return errors.Join(runErr, err)
	}
	if errors.Is(runErr, context.Canceled) {
		return fmt.Errorf("cni run %s: %w (continue it with meshbench cni --resume %s)", res.RunID, runErr, res.Dir)
	}
	var cf *cni.CasesFailedError
	if errors.As(runErr, &cf) {
		return &exitError{Code: exitRunFailed, Err: fmt.Errorf("%w; results in %s", runErr, res.Dir)}
	}
	return runErr
}

// cniScenario is the scenario of a cni run with its flags applied and checked (every bad flag at once); nothing is
// written.
func cniScenario(f *cniFlags) (*scenario.Scenario, error) {
	s, err := cniScenarioOf(f)
	if derr := checkDurations(
		durationFlag{"ready-timeout", f.readyTimeout, "3m"},
		durationFlag{"delete-timeout", f.deleteTimeout, "3m"},
	); derr != nil {
		return nil, errors.Join(derr, err)
	}
	return s, err
}

func cniScenarioOf(f *cniFlags) (*scenario.Scenario, error) {
	if f.resume != "" {
		return resumeScenario(results.CommandCNI, f.resume, f.file, f.imageRegistry, f.outputDir)
	}
	if f.file == "" {
		return nil, badInput(errors.New("give the scenario with -f/--file (it needs a spec.cni section)"))
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return nil, err
	}
	if !s.Spec.CNI.Configured() {
		return nil, badInput(fmt.Errorf("%s: no spec.cni section: meshbench cni needs at least spec.cni.tests or spec.cni.paths", f.file))
	}
	if err := applyOverrides(s, outputDirOverride(f.outputDir)); err != nil {
		return nil, err
	}
	return s, checkOutputDir(s.Spec.Output.Dir)
}

func printCNIReport(streams Streams, format string, rep *cni.Report) error {
	if format == "csv" {
		out, err := rep.CSV()
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(streams.Out, out)
		return err
	}
	return printValue(streams.Out, format, rep, rep.Table)
}
