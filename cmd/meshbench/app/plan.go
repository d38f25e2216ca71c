package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

type planFlags struct {
	file          string
	showObjects   bool
	imageRegistry string
}

// newPlanCommand prints the expanded plan of a scenario without touching any cluster.
func newPlanCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan -f SCENARIO",
		Short: "Print the expanded, ordered plan of a scenario (no cluster needed)",
		Long: `Print the cases a scenario expands to (topology x mode x load x repetition) with stable IDs, the order that
keeps mode switches and restarts few while interleaving repetitions across modes, and an estimated wall time
(-o json: estimateSeconds and estimate as text such as "12m30s"). With --show-objects, print every object each
case would apply instead (YAML, or JSON with -o json). The output is deterministic. A bad config exits 2 with
every problem listed; no cluster is contacted.`,
		Example: `  meshbench plan -f examples/quickstart.yaml
  meshbench plan -f examples/quickstart.yaml -o json
  meshbench plan -f examples/quickstart.yaml --show-objects > objects.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.Context(), streams, g, f) },
	}
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "scenario file (YAML)")
	cmd.Flags().BoolVar(&f.showObjects, "show-objects", false, "print every object each case would apply (YAML; JSON with -o json)")
	// --dry-run means "change nothing in the cluster" everywhere (schedule --apply --dry-run); plan never does.
	deprecatedAlias(cmd, streams.ErrOut, "dry-run", "show-objects")
	addImageRegistryFlag(cmd.Flags(), &f.imageRegistry)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runPlan(_ context.Context, streams Streams, g *globalFlags, f *planFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return err
	}
	p := scenario.NewPlan(s)
	if f.showObjects {
		if g.Output == "json" {
			cases, err := orchestrate.PlanObjects(s, p)
			if err != nil {
				return err
			}
			return printValue(streams.Out, "json", cases, nil)
		}
		return orchestrate.WritePlanObjects(streams.Out, s, p)
	}
	return printValue(streams.Out, g.Output, newPlanView(p), p.Table)
}

// planView is the plan as -o json|yaml prints it: the estimates in seconds and as text ("12m30s") instead of
// time.Duration's nanoseconds. (run.json keeps the plan as scenario.Plan encodes it.)
type planView struct {
	scenario.Plan
	EstimateSeconds float64      `json:"estimateSeconds"`
	Estimate        string       `json:"estimate"`
	CNI             *cniPlanView `json:"cni,omitempty"`
}

type cniPlanView struct {
	scenario.CNIPlan
	EstimateSeconds float64 `json:"estimateSeconds"`
	Estimate        string  `json:"estimate"`
}

func newPlanView(p scenario.Plan) planView {
	v := planView{Plan: p, EstimateSeconds: p.Estimate.Seconds(), Estimate: p.Estimate.Round(time.Second).String()}
	if p.CNI != nil {
		v.CNI = &cniPlanView{CNIPlan: *p.CNI, EstimateSeconds: p.CNI.Estimate.Seconds(), Estimate: p.CNI.Estimate.Round(time.Second).String()}
	}
	return v
}

// loadScenario loads and validates a scenario with this binary's image tag and --image-registry, then checks app
// manifests and workload.resources against the catalog, so every verb refuses bad input (exit 2) before anything
// connects.
func loadScenario(path, imageRegistry string) (*scenario.Scenario, error) {
	return loadScenarioWith(path, imageRegistry, new(workloads.Renderer))
}

// loadScenarioWith is loadScenario reading app manifests through r, for a caller that needs them again (schedule).
func loadScenarioWith(path, imageRegistry string, r *workloads.Renderer) (*scenario.Scenario, error) {
	s, err := scenario.LoadWith(path, scenarioLoadOptions(imageRegistry))
	if err != nil {
		return nil, badInput(err)
	}
	ps := r.CheckManifests(s)
	ps = append(ps, workloads.CheckResources(s)...)
	if len(ps) > 0 {
		return nil, badInput(fmt.Errorf("%s: %w", path, ps))
	}
	return s, nil
}
