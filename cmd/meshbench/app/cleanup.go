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
	"github.com/meshbench/meshbench/workloads"
)

type cleanupFlags struct {
	run       string
	all       bool
	runDir    string
	outputDir string
	timeout   time.Duration
}

// NewCleanupCommand deletes what meshbench created (found by its labels) and restores recorded namespace labels and
// workload restart annotations.
func NewCleanupCommand(streams Streams, g *GlobalFlags) *cobra.Command {
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCleanup(cmd.Context(), streams, g, f) },
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

func runCleanup(ctx context.Context, streams Streams, g *GlobalFlags, f *cleanupFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	if (f.run == "") == !f.all {
		return badInput(errors.New("give exactly one of --run ID or --all"))
	}
	if f.timeout <= 0 {
		return badInput(fmt.Errorf("--timeout %s: must be a positive duration, e.g. --timeout 5m", f.timeout))
	}
	clients, _, err := orchestrate.Connect(ctx, g.Kubeconfig, g.Context, orchestrate.DefaultConnectTimeout)
	if err != nil {
		return err
	}
	log := g.Logger(streams.ErrOut)
	var errs []error
	res := cleanupResult{Deleted: []string{}, Restored: []string{}}
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
