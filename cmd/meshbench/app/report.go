package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/push"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
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

// NewReportCommand renders a run directory into report.md, report.html, CSVs and charts, and optionally pushes the
// summary to a Pushgateway.
func NewReportCommand(streams Streams, g *GlobalFlags) *cobra.Command {
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

func runReport(ctx context.Context, streams Streams, g *GlobalFlags, f *reportFlags, dirs []string) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	var sections []report.SectionID
	if f.show != nil {
		if g.Output != "table" {
			return badInput(fmt.Errorf("--show prints text for a terminal: it cannot be combined with --output %s", g.Output))
		}
		s, err := report.ParseSections(f.show)
		if err != nil {
			return badInput(fmt.Errorf("--show: %w", err))
		}
		sections = s
	}
	if f.latest && len(dirs) > 1 {
		return badInput(errors.New("--latest takes one directory of runs; give both run directories without --latest to combine them"))
	}
	if f.latest {
		latest, err := report.LatestRun(dirs[0])
		if err != nil {
			return badInput(err)
		}
		dirs = []string{latest}
	}
	var runs []*results.Run
	for _, dir := range dirs {
		run, err := results.Read(dir)
		if err != nil {
			return badInput(fmt.Errorf("report %s: %w", dir, err))
		}
		runs = append(runs, run)
	}
	rep, err := report.Combine(runs...)
	if err != nil {
		return badInput(fmt.Errorf("report %s: %w", strings.Join(dirs, " "), err))
	}
	dir := rep.Dir
	if f.show == nil {
		// --show prints the banner itself, at the top of its text: once is enough on a terminal.
		for _, line := range rep.Banner() {
			fmt.Fprintf(streams.ErrOut, "warning: %s\n", line)
		}
	}
	written := []string{}
	if !f.noFiles {
		out := f.out
		if out == "" {
			out = filepath.Join(dir, "report")
		}
		if written, err = report.Write(out, rep.Files()); err != nil {
			return err
		}
	}
	if f.push != "" {
		opts := push.Options{URL: f.push, Job: f.pushJob, Instance: f.pushInstance, Insecure: f.pushInsecure}
		if f.pushInsecure {
			fmt.Fprintf(streams.ErrOut, "warning: --push-insecure: the TLS certificate of %s is not verified\n", push.RedactURL(f.push))
		}
		if err := push.Push(ctx, rep, opts); err != nil {
			return err
		}
		fmt.Fprintf(streams.ErrOut, "pushed the summary of %s to %s\n", rep.Meta.RunID, push.RedactURL(f.push))
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
