package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/workloads"
)

type cleanupFlags struct {
	run       string
	all       bool
	runDir    string
	outputDir string
	timeout   time.Duration
	// outputDirSet: --output-dir (or --runs-dir) was given, so a directory that does not exist is a mistake, not
	// the default "runs" of another working directory.
	outputDirSet bool
}

// newCleanupCommand deletes what meshbench created (found by its labels) and restores recorded namespace labels and
// workload restart annotations.
func newCleanupCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &cleanupFlags{}
	cmd := &cobra.Command{
		Use:   "cleanup --run ID | --all",
		Short: "Delete everything a run (or every run) created and restore the namespace labels it changed",
		Long: `Delete every namespace labelled app.kubernetes.io/managed-by=meshbench and meshbench.dev/run=ID (every run with
--all), every such labelled object in other namespaces (the app in --allow-existing-namespaces namespaces, waypoint
Gateways, load clients) and labelled cluster-scoped objects, then wait until the namespaces are gone. Namespaces
meshbench did not create are never deleted: the labels it changed on them are restored from the run directory's
namespace-labels.json (--run-dir, or <output-dir>/<ID>; with --all every <output-dir>/*/namespace-labels.json),
and so is the restart annotation meshbench put on the pod template of an app existing workload: labels first, so
the rollout that restoring the annotation causes brings the app's pods back in their original mode.`,
		Example: `  meshbench cleanup --run quickstart-20261201-101500
  meshbench cleanup --all --output-dir runs`,
		Args:        cobra.NoArgs,
		Annotations: cleanupSignal(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.outputDirSet = cmd.Flags().Changed("output-dir") || cmd.Flags().Changed("runs-dir")
			return runCleanup(cmd.Context(), streams, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.run, "run", "", "run ID to clean up")
	fl.BoolVar(&f.all, "all", false, "clean up every meshbench run in the cluster")
	fl.StringVar(&f.runDir, "run-dir", "", "run directory holding namespace-labels.json (default <output-dir>/<run ID>)")
	fl.StringVar(&f.outputDir, "output-dir", "runs", "directory of run directories (spec.output.dir, run --output-dir)")
	deprecatedAlias(cmd, streams.ErrOut, "runs-dir", "output-dir")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for namespaces to be deleted")
	return cmd
}

// cleanupResult is what cleanup prints with -o json|yaml.
type cleanupResult struct {
	Deleted  []string `json:"deleted"`
	Restored []string `json:"restoredNamespaceLabels"`
	// RestoredWorkloads ("Kind ns/name") had their pod-template restart annotation restored (app existing).
	RestoredWorkloads []string `json:"restoredWorkloadAnnotations,omitempty"`
	// Notes name what was skipped (a workload deleted meanwhile).
	Notes  []string `json:"notes,omitempty"`
	Waited string   `json:"waited"`
}

func runCleanup(ctx context.Context, streams Streams, g *globalFlags, f *cleanupFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	if err := checkCleanupFlags(f); err != nil {
		return err
	}
	clients, _, err := orchestrate.Connect(ctx, g.Kubeconfig, g.Context, orchestrate.DefaultConnectTimeout)
	if err != nil {
		return err
	}
	log := g.logger(streams.ErrOut)
	var errs []error
	res := cleanupResult{Deleted: []string{}, Restored: []string{}}
	if f.run != "" && f.runDir == "" {
		if dir := filepath.Join(f.outputDir, f.run); !isDir(dir) {
			res.Notes = append(res.Notes, fmt.Sprintf("no run directory %s: labels and restart annotations the run changed on namespaces "+
				"it did not create (app existing) are restored from its %s only; give --run-dir where the run directory is", dir, mesh.LabelRecordFile))
		}
	}
	// Labels first: a namespace that is about to be deleted needs no restore, one that stays does.
	for _, path := range labelRecords(f) {
		rec, err := mesh.OpenLabelRecord(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// RestoreAll: namespace labels, then workload annotations (their rollout then follows the original labels).
		restored, err := rec.RestoreAll(ctx, clients.Kube)
		res.Restored = append(res.Restored, restored.Namespaces...)
		res.RestoredWorkloads = append(res.RestoredWorkloads, restored.Workloads...)
		res.Notes = append(res.Notes, restored.Notes...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	rep, err := workloads.Cleaner{Clients: clients, Log: log}.Clean(ctx, workloads.CleanOptions{RunID: f.run, Wait: f.timeout})
	if err != nil {
		errs = append(errs, err)
	}
	res.Deleted = append(res.Deleted, rep.Deleted...)
	// A tracing variant's provider in istiod's mesh config (a label marks the ConfigMap; it is not deleted).
	edited, err := mesh.RemoveTracingProviders(ctx, clients, f.run)
	if err != nil {
		errs = append(errs, err)
	}
	res.Deleted = append(res.Deleted, edited...)
	res.Waited = rep.Waited.Round(time.Millisecond).String()
	if err := printValue(streams.Out, g.Output, res, func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "deleted %d objects (waited %s for namespaces)\n", len(res.Deleted), res.Waited)
		for _, d := range res.Deleted {
			b.WriteString("  " + d + "\n")
		}
		fmt.Fprintf(&b, "restored labels of %d namespaces\n", len(res.Restored))
		for _, n := range res.Restored {
			b.WriteString("  " + n + "\n")
		}
		if len(res.RestoredWorkloads) > 0 {
			fmt.Fprintf(&b, "restored the restart annotation of %d workloads (they roll out once more, into the original mode)\n", len(res.RestoredWorkloads))
			for _, w := range res.RestoredWorkloads {
				b.WriteString("  " + w + "\n")
			}
		}
		for _, n := range res.Notes {
			b.WriteString("note: " + n + "\n")
		}
		return b.String()
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// labelRecords lists the namespace-labels.json files to restore from.
func labelRecords(f *cleanupFlags) []string {
	switch {
	case f.runDir != "":
		return []string{filepath.Join(f.runDir, mesh.LabelRecordFile)}
	case f.run != "":
		p := filepath.Join(f.outputDir, f.run, mesh.LabelRecordFile)
		if _, err := os.Stat(p); err == nil {
			return []string{p}
		}
		return nil
	default:
		m, _ := filepath.Glob(filepath.Join(f.outputDir, "*", mesh.LabelRecordFile))
		sort.Strings(m)
		return m
	}
}

// checkCleanupFlags lists every bad flag at once (exit 2) before anything connects: which runs, the run ID's syntax,
// and a --run-dir that must be that run's directory (a mistyped one used to restore no namespace labels, silently).
func checkCleanupFlags(f *cleanupFlags) error {
	var errs []error
	if (f.run == "") == !f.all {
		errs = append(errs, errors.New("give exactly one of --run ID or --all"))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be a positive duration, e.g. --timeout 5m", f.timeout))
	}
	if f.run != "" {
		if err := orchestrate.CheckRunID(f.run); err != nil {
			errs = append(errs, fmt.Errorf("--run: %w", err))
		}
	}
	if f.runDir != "" {
		if err := checkCleanupRunDir(f.runDir, f.run); err != nil {
			errs = append(errs, err)
		}
	}
	if f.outputDirSet && !isDir(f.outputDir) {
		errs = append(errs, fmt.Errorf("--output-dir %s: not a directory; give the directory that holds the run directories (spec.output.dir, run --output-dir)", f.outputDir))
	}
	if len(errs) > 0 {
		return badInput(errors.Join(errs...))
	}
	return nil
}

// checkCleanupRunDir: --run-dir holds what cleanup reads there, the run's namespace-labels.json, or at least its
// run.json (a run that changed no label has no record); a run.json must name the run --run gives, and a record must
// be readable.
func checkCleanupRunDir(dir, run string) error {
	if !isDir(dir) {
		return fmt.Errorf("--run-dir %s: not a directory; give the run's directory (<output-dir>/<run ID>, the one holding run.json and %s)", dir, mesh.LabelRecordFile)
	}
	_, recErr := os.Stat(filepath.Join(dir, mesh.LabelRecordFile))
	meta, err := results.ReadMeta(dir)
	switch {
	case err == nil && run != "" && meta.RunID != run:
		return fmt.Errorf("--run-dir %s holds run %s, not --run %s: give the directory of run %s (or --run %s)", dir, meta.RunID, run, run, meta.RunID)
	case err != nil && recErr != nil:
		return fmt.Errorf("--run-dir %s: holds neither run.json nor %s, so it is not a run's directory; give the run's directory (<output-dir>/<run ID>)", dir, mesh.LabelRecordFile)
	}
	if recErr == nil {
		if _, err := mesh.OpenLabelRecord(filepath.Join(dir, mesh.LabelRecordFile)); err != nil {
			return fmt.Errorf("--run-dir %s: %w", dir, err)
		}
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
