package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/push"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

type reportFlags struct {
	out          string
	noFiles      bool
	push         string
	pushJob      string
	pushInstance string
	pushInsecure bool
	latest       bool
	show         []string
}

// newReportCommand renders a run directory into report.md, report.html, CSVs and charts, and optionally pushes the
// summary to a Pushgateway.
func newReportCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report RUN_DIR [CNI_RUN_DIR]",
		Short: "Write report.md, a self-contained report.html, CSVs and SVG charts for a run (offline)",
		Long: `Render a run directory (run.json, samples.jsonl, cases.jsonl, summary.json) into report.md, a single
self-contained report.html (inline CSS and SVG, no scripts, no external assets), series.csv, deltas.csv, cases.csv
and charts/*.svg. Nothing but the run directory is read; no cluster is contacted. A run without summary.json (killed
before its end) is summarised in memory for the report, which says so; summary.json is left to run --resume.

With a second directory, one report holds a mesh run (meshbench run) and a pod network run (meshbench cni) of the
same cluster, in either order: the network underneath next to what each mode adds on top of it. Runs of different
clusters (other nodes or Kubernetes version in run.json) are refused (exit 2). The files go to the mesh run's
report directory unless --output-dir.

With --push, the summary is also sent to a Prometheus Pushgateway as gauges (meshbench_resource_mean,
meshbench_delta_percent, meshbench_case_failed_total, ...; see the push package documentation), replacing the
previous push of the same job and instance.

With --show, sections of the report are printed on stdout as text for a terminal (aligned tables, no Markdown or
HTML), e.g. --show headlines,modes as make demo ends; the report files are still written unless --no-files.`,
		Example: `  meshbench report runs/20261130-030000
  meshbench report runs/20261130-030000 runs/20261130-020000-cni
  meshbench report runs/20261130-030000 --push http://pushgateway.monitoring:9091 --push-instance prod-eu
  meshbench report runs/20261130-030000 --no-files --show headlines,modes`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return runReport(cmd.Context(), streams, g, f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "output-dir", "", "directory that receives the report files (default RUN_DIR/report)")
	deprecatedAlias(cmd, streams.ErrOut, "out", "output-dir")
	fl.BoolVar(&f.latest, "latest", false, "RUN_DIR is a directory of runs: report the one that started last")
	fl.BoolVar(&f.noFiles, "no-files", false, "write no files (with --push: push only)")
	fl.StringVar(&f.push, "push", "", "Pushgateway URL to push the summary to, e.g. http://pushgateway:9091")
	fl.StringVar(&f.pushJob, "push-job", "meshbench", "Pushgateway job label")
	fl.BoolVar(&f.pushInsecure, "push-insecure", false, "do not verify the Pushgateway's TLS certificate (a warning is printed)")
	fl.StringVar(&f.pushInstance, "push-instance", "", "Pushgateway instance label (default: the scenario name)")
	fl.StringSliceVar(&f.show, "show", nil, "print these sections as text on stdout (comma separated, or all): "+report.SectionList())
	return cmd
}

func runReport(ctx context.Context, streams Streams, g *globalFlags, f *reportFlags, dirs []string) error {
	sections, err := reportSections(g, f)
	if err != nil {
		return err
	}
	if f.latest && len(dirs) > 1 {
		return badInput(errors.New("--latest takes one directory of runs; give both run directories without --latest to combine them"))
	}
	if err := checkReportFlags(f); err != nil {
		return err
	}
	rep, err := readReport(f.latest, dirs)
	if err != nil {
		return err
	}
	if f.show == nil {
		// --show prints the banner itself, at the top of its text: once is enough on a terminal.
		for _, line := range rep.Banner() {
			fmt.Fprintf(streams.ErrOut, "warning: %s\n", line)
		}
	}
	written := []string{}
	if !f.noFiles {
		if written, err = writeReport(f.out, rep); err != nil {
			return err
		}
	}
	if f.push != "" {
		if err := pushReport(ctx, streams, f, rep); err != nil {
			return err
		}
	}
	if f.show != nil {
		text, missing := rep.Text(sections...)
		for _, id := range missing {
			fmt.Fprintf(streams.ErrOut, "note: report %s has no section %s (the run has no data for it)\n", rep.Meta.RunID, id)
		}
		if len(written) > 0 {
			fmt.Fprintf(streams.ErrOut, "wrote %d report files to %s\n", len(written), filepath.Dir(written[0]))
		}
		_, err := streams.Out.Write(text)
		return err
	}
	return printValue(streams.Out, g.Output, map[string]any{"runID": rep.Meta.RunID, "files": written}, func() string {
		s := ""
		for _, p := range written {
			s += p + "\n"
		}
		return s
	})
}

// reportSections checks --output and parses --show (nil: no --show), which prints text and so needs --output table.
func reportSections(g *globalFlags, f *reportFlags) ([]report.SectionID, error) {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return nil, err
	}
	if f.show == nil {
		return nil, nil
	}
	if g.Output != "table" {
		return nil, badInput(fmt.Errorf("--show prints text for a terminal: it cannot be combined with --output %s", g.Output))
	}
	s, err := report.ParseSections(f.show)
	if err != nil {
		return nil, badInput(fmt.Errorf("--show: %w", err))
	}
	return s, nil
}

// readReport reads the run directories (with latest, the run of dirs[0] that started last) into one report; a
// directory that cannot be read or runs that cannot be combined are bad input.
func readReport(latest bool, dirs []string) (report.Report, error) {
	if latest {
		dir, err := report.LatestRun(dirs[0])
		if err != nil {
			return report.Report{}, badInput(err)
		}
		dirs = []string{dir}
	}
	var runs []*results.Run
	for _, dir := range dirs {
		run, err := results.Read(dir)
		if err != nil {
			return report.Report{}, badInput(fmt.Errorf("report %s: %w", dir, err))
		}
		runs = append(runs, run)
	}
	rep, err := report.Combine(runs...)
	if err != nil {
		return report.Report{}, badInput(fmt.Errorf("report %s: %w", strings.Join(dirs, " "), err))
	}
	return rep, nil
}

// writeReport writes the report files to out (default: the run directory's report/, which must be writable) and
// returns their paths.
func writeReport(out string, rep report.Report) ([]string, error) {
	if out == "" {
		out = filepath.Join(rep.Dir, "report")
		if err := orchestrate.CheckWritableDir(out, "give --output-dir elsewhere (the run directory is not writable here)"); err != nil {
			return nil, badInput(err)
		}
	}
	return report.Write(out, rep.Files())
}

// pushReport sends the summary to the Pushgateway of --push, warning first when its certificate is not verified.
func pushReport(ctx context.Context, streams Streams, f *reportFlags, rep report.Report) error {
	opts := push.Options{URL: f.push, Job: f.pushJob, Instance: f.pushInstance, Insecure: f.pushInsecure}
	if f.pushInsecure {
		fmt.Fprintf(streams.ErrOut, "warning: --push-insecure: the TLS certificate of %s is not verified\n", push.RedactURL(f.push))
	}
	if err := push.Push(ctx, rep, opts); err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "pushed the summary of %s to %s\n", rep.Meta.RunID, push.RedactURL(f.push))
	return nil
}

// checkReportFlags lists every bad flag at once (exit 2) before any run is read, rendered, written or pushed: an
// invocation that would do nothing, a Pushgateway URL that cannot be pushed to, an output directory that cannot be
// written.
func checkReportFlags(f *reportFlags) error {
	var errs []error
	switch {
	case f.noFiles && f.push == "" && f.show == nil:
		errs = append(errs, errors.New("--no-files without --push or --show: nothing would be written, pushed or shown; "+
			"add --push URL (push only) or --show SECTIONS, or drop --no-files"))
	case f.noFiles && f.out != "":
		errs = append(errs, fmt.Errorf("--output-dir %s with --no-files: no file is written; drop one of them", f.out))
	}
	if f.push != "" {
		if err := scenario.CheckHTTPURL(f.push, "http://pushgateway.monitoring:9091"); err != nil {
			errs = append(errs, fmt.Errorf("--push: the Pushgateway URL %w", err))
		}
		if f.pushJob == "" {
			errs = append(errs, errors.New("--push-job is empty: the Pushgateway groups pushes by job; keep the default \"meshbench\""))
		}
	}
	if f.out != "" && !f.noFiles {
		if err := orchestrate.CheckWritableDir(f.out, "choose another --output-dir"); err != nil {
			errs = append(errs, fmt.Errorf("--output-dir: %w", err))
		}
	}
	if len(errs) > 0 {
		return badInput(errors.Join(errs...))
	}
	return nil
}
