package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
)

type planFlags struct {
	file          string
	dryRun        bool
	imageRegistry string
}

// NewPlanCommand prints the expanded plan of a scenario without touching any cluster.
func NewPlanCommand(streams Streams, g *GlobalFlags) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan -f SCENARIO",
		Short: "Print the expanded, ordered plan of a scenario (no cluster needed)",
		Long: `Print the cases a scenario expands to (topology x mode x load x repetition) with stable IDs, the order that
keeps mode switches and restarts few while interleaving repetitions across modes, and an estimated wall time.
The output is deterministic. A bad config exits 2 with every problem listed; no cluster is contacted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.Context(), streams, g, f) },
	}
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "scenario file (YAML)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print every object each case would apply, as YAML (-o yaml)")
	addImageRegistryFlag(cmd.Flags(), &f.imageRegistry)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runPlan(_ context.Context, streams Streams, g *GlobalFlags, f *planFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return err
	}
	p := scenario.NewPlan(s)
	if f.dryRun {
		return mesh.WriteDryRun(streams.Out, s, p)
	}
	return printValue(streams.Out, g.Output, p, p.Table)
}

// loadScenario loads and validates a scenario with this binary's image tag and the --image-registry override
// (scenarioLoadOptions); every problem is bad input (exit 2).
func loadScenario(path, imageRegistry string) (*scenario.Scenario, error) {
	s, err := scenario.LoadWith(path, scenarioLoadOptions(imageRegistry))
	if err != nil {
		return nil, badInput(err)
	}
	return s, nil
}
