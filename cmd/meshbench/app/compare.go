package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/compare"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
)

type compareFlags struct {
	failIf     []string
	confidence float64
	changed    bool
	latest     bool
}

// newCompareCommand compares two runs and applies regression gates.
func newCompareCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare BASE_DIR NEW_DIR",
		Short: "Compare two runs with confidence intervals; --fail-if gates exit 3 on a regression",
		Long: `Compare every measurement (component, mode, metric, stat, window) present in both runs: both means, the
difference with its Welch confidence interval, the percent change and a verdict (better, worse, not significant;
lower is better for cpu, memory and latency, higher for qps, throughput, rr and crr).

--fail-if adds a regression gate (repeatable):
  <metric>[.<stat>].<component-or-mode>[.<window>] <op> <signed number>[%|unit]
e.g. 'cpu.sidecar > +10%', 'memory.mesh.load > +5%', 'latency.p99.ambient > +1ms', 'qps.none < -5%'.
A gate fails only when the change is significant (its interval excludes 0) and crosses the threshold; then
meshbench exits 3 and names the gate and the measurement. A gate that selects nothing is an error (exit 2).`,
		Example: `  meshbench compare runs/baseline runs/nightly --fail-if 'cpu.sidecar > +10%' --fail-if 'latency.p99.ambient > +1ms'`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), streams, g, f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.failIf, "fail-if", nil, "regression gate, e.g. 'cpu.sidecar > +10%' (repeatable)")
	fl.Float64Var(&f.confidence, "confidence", 0.95, "confidence level of the intervals, in (0, 1)")
	fl.BoolVar(&f.changed, "changed", false, "table output: show only significant changes")
	fl.BoolVar(&f.latest, "latest", false, "NEW_DIR is a directory of runs: compare the one that started last (never BASE_DIR)")
	return cmd
}

func runCompare(_ context.Context, streams Streams, g *globalFlags, f *compareFlags, baseDir, newDir string) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	if !(f.confidence > 0 && f.confidence < 1) {
		return badInput(fmt.Errorf("--confidence %v: must be in (0, 1), e.g. 0.95", f.confidence))
	}
	var gates []compare.Gate
	var errs []error
	for _, expr := range f.failIf {
		gate, err := compare.ParseGate(expr)
		errs = append(errs, err)
		gates = append(gates, gate)
	}
	if err := errors.Join(errs...); err != nil {
		return badInput(fmt.Errorf("--fail-if: %w", err))
	}
	base, err := results.Read(baseDir)
	if err != nil {
		return badInput(fmt.Errorf("base run: %w", err))
	}
	if f.latest {
		if newDir, err = report.LatestRun(newDir, baseDir); err != nil {
			return badInput(err)
		}
	}
	next, err := results.Read(newDir)
	if err != nil {
		return badInput(fmt.Errorf("new run: %w", err))
	}
	if err := compare.CheckComparable(base, next); err != nil {
		return badInput(err)
	}
	res := compare.Runs(base, next, f.confidence)
	outcomes, err := compare.Evaluate(res, gates)
	if err != nil {
		return badInput(err)
	}
	doc := map[string]any{"comparison": res, "gates": outcomes}
	if err := printValue(streams.Out, g.Output, doc, func() string { return compare.Table(res, outcomes, f.changed) }); err != nil {
		return err
	}
	return compare.Violations(outcomes)
}
