package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/export"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
)

// exportFormatOpenMetrics is the one format export writes so far (issue 35 adds csv and json).
const exportFormatOpenMetrics = "openmetrics"

type exportFlags struct {
	format string
	to     string
}

// newExportCommand writes finished runs in a format other tools read.
func newExportCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &exportFlags{}
	cmd := &cobra.Command{
		Use:   "export RUN_DIR...",
		Short: "Write runs' summary figures as OpenMetrics for backfilling into a Prometheus (history of runs)",
		Long: `Write the summary figures of one or more runs (the gauges 'report --push' sends: resource means and intervals,
per-1000-rps means, measurements, mode deltas, case counts, run facts) as one OpenMetrics exposition. Every series is
labelled with its run's ID (run_id) and scenario and stamped with the run's end, so that Prometheus's own tool turns
it into blocks of history:

  promtool tsdb create-blocks-from openmetrics runs.om ./blocks

then move the blocks into the Prometheus data directory (see docs/export.md).`,
		Example: `  meshbench export runs/nightly-* --to runs.om`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), streams, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", exportFormatOpenMetrics, "output format: openmetrics")
	fl.StringVar(&f.to, "to", "-", "file to write (- = standard output)")
	return cmd
}

func runExport(_ context.Context, streams Streams, f *exportFlags, dirs []string) error {
	if f.format != exportFormatOpenMetrics {
		return badInput(fmt.Errorf("--format %q: the formats are %s", f.format, exportFormatOpenMetrics))
	}
	reps := make([]report.Report, 0, len(dirs))
	for _, dir := range dirs {
		run, err := results.Read(dir)
		if err != nil {
			return badInput(fmt.Errorf("run %s: %w", dir, err))
		}
		reps = append(reps, report.Build(run))
	}
	var buf bytes.Buffer
	if err := export.OpenMetrics(&buf, reps...); err != nil {
		return badInput(err)
	}
	if f.to == "-" {
		_, err := streams.Out.Write(buf.Bytes())
		return err
	}
	// Written whole, then renamed: a reader (promtool, a watcher) never sees half an exposition.
	tmp, err := os.CreateTemp(filepath.Dir(f.to), ".export-*")
	if err != nil {
		return fmt.Errorf("--to %s: %w", f.to, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--to %s: %w", f.to, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--to %s: %w", f.to, err)
	}
	if err := os.Rename(tmp.Name(), f.to); err != nil {
		return fmt.Errorf("--to %s: %w", f.to, err)
	}
	fmt.Fprintf(streams.ErrOut, "wrote %d runs to %s\n", len(reps), f.to)
	return nil
}
