package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/capacity"
	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/results"
)

type projectFlags struct {
	file               string
	pods, nodes, ns    int
	rps                float64
	rpsPerPod          string
	priceCPU, priceMem float64
	holdout            string
	istiodCurve        string
}

// newProjectCommand projects each mode's cost to a production shape from a run's fitted lines.
func newProjectCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &projectFlags{}
	cmd := &cobra.Command{
		Use:   "project RUN_DIR",
		Short: "Project each mode's mesh CPU, memory and cost to your production shape, with prediction intervals",
		Long: `Fit, per mode and component, fixed + slope x load from the run's load levels (sidecar and app per pod,
ztunnel per node, waypoint per waypoint, istiod per mesh) and project them to the shape given: mesh and total
CPU and memory (usage, and reserved when the run recorded requests), the difference from mode none, the monthly
cost at the prices given, the break-even pods per node between sidecar and ambient, the assumptions, and a
warning wherever the projection leaves the measured range. A figure is marked when it is less sure than its
interval says: i incomplete (a component the mode has was not measured), s no slope (one load level, one mesh
size, or levels less than 1.5x apart: no interval away from it), n not linear (lack-of-fit test, Holm-adjusted for
the run's tests), x extrapolated, u linearity untested. -f reads the shape from YAML (pods, nodes, namespaces,
rps, rpsPerPod, priceCPU, priceMemory, istiodCurve); flags override it.

--istiod-curve FILE takes istiod from a curve that hack/istiodscale measured (istiod-curve.json) instead of the
run: the run sees istiod at its own mesh size only, the curve at several. istiod's CPU and memory are then fixed +
slope x app pods fitted over the curve's windows, with prediction intervals; a shape beyond the curve's largest
size is flagged as extrapolated.

--holdout LEVEL checks the model on the run itself instead: every usage line is refitted without the load level
LEVEL (as the scenario names it, e.g. 200) and each of that level's points is predicted with its prediction
interval; the output says which fell inside (a 95 % interval misses about 5 % of new points by design), whether
more fits missed than that allows, and whether the scatter between repetitions at LEVEL is larger than at the
others. The intervals assume it is the same at every load; hold out the top level (the projection names it) to
check them where the extrapolation starts.`,
		Example: `  meshbench project runs/levels-20261201 --pods 500 --nodes 20 --namespaces 10 --rps 5000 --price-cpu 25 --price-memory 3.5`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.holdout != "" {
				if f.istiodCurve != "" {
					return badInput(fmt.Errorf("--istiod-curve: --holdout checks the run's own fits; leave one of them out"))
				}
				return runHoldout(cmd.Context(), streams, g, f.holdout, args[0])
			}
			sh, curve, err := projectShape(cmd, f)
			if err != nil {
				return badInput(err)
			}
			return runProject(cmd.Context(), streams, g, sh, curve, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "the shape as YAML (flags override its fields)")
	fl.IntVar(&f.pods, "pods", 0, "app pods in the mesh")
	fl.IntVar(&f.nodes, "nodes", 0, "nodes (one ztunnel each)")
	fl.IntVar(&f.ns, "namespaces", 0, "namespaces (one waypoint each)")
	fl.Float64Var(&f.rps, "rps", 0, "requests per second into the app")
	fl.StringVar(&f.rpsPerPod, "rps-per-pod", "", `file with one pod per line: "NAME RPS" or "RPS"`)
	fl.Float64Var(&f.priceCPU, "price-cpu", 0, "price per vCPU-month")
	fl.Float64Var(&f.priceMem, "price-memory", 0, "price per GiB-month")
	fl.StringVar(&f.istiodCurve, "istiod-curve", "", "istiod-curve.json (hack/istiodscale): fit istiod against the mesh size from it instead of the run")
	fl.StringVar(&f.holdout, "holdout", "", "check the model instead: refit without this load level and predict it (no shape needed; the top level checks the constant-noise assumption)")
	return cmd
}

// istiodCurve is a parsed curve and its file's name (as the output names it).
type istiodCurve struct {
	curve *capacity.IstiodCurve
	name  string
}

// projectShape merges the shape file and the flags that were set, reads --rps-per-pod and the istiod curve, and
// validates.
func projectShape(cmd *cobra.Command, f *projectFlags) (capacity.Shape, *istiodCurve, error) {
	var sf capacity.ShapeFile
	base := ""
	if f.file != "" {
		data, err := inputfile.ReadFile(f.file, inputfile.Shape)
		if err != nil {
			return capacity.Shape{}, nil, fmt.Errorf("--file: %w", err)
		}
		if sf, err = capacity.ParseShapeFile(data); err != nil {
			return capacity.Shape{}, nil, fmt.Errorf("--file %s: %w", f.file, err)
		}
		base = filepath.Dir(f.file)
	}
	sh := sf.Shape()
	set := cmd.Flags().Changed
	if set("pods") {
		sh.Pods = f.pods
	}
	if set("nodes") {
		sh.Nodes = f.nodes
	}
	if set("namespaces") {
		sh.Namespaces = f.ns
	}
	if set("rps") {
		sh.RPS = f.rps
	}
	if set("price-cpu") {
		sh.PriceCPU = &f.priceCPU
	}
	if set("price-memory") {
		sh.PriceMemory = &f.priceMem
	}
	perPod := sf.RPSPerPod
	if perPod != "" && !filepath.IsAbs(perPod) {
		perPod = filepath.Join(base, perPod)
	}
	if set("rps-per-pod") {
		perPod = f.rpsPerPod
	}
	if perPod != "" {
		data, err := inputfile.ReadFile(perPod, inputfile.RPSPerPod)
		if err != nil {
			return capacity.Shape{}, nil, fmt.Errorf("--rps-per-pod: %w", err)
		}
		if sh.RPSPerPod, err = capacity.ParseRPSPerPod(data); err != nil {
			return capacity.Shape{}, nil, fmt.Errorf("--rps-per-pod %s: %w", perPod, err)
		}
	}
	curve, err := readIstiodCurve(sf.IstiodCurve, base, f.file, f.istiodCurve, set("istiod-curve"))
	if err != nil {
		return capacity.Shape{}, nil, err
	}
	sh.Complete()
	if err := sh.Validate(); err != nil {
		return capacity.Shape{}, nil, fmt.Errorf("the production shape:\n%w", err)
	}
	return sh, curve, nil
}

// readIstiodCurve reads the curve the flag names, else the shape file's istiodCurve (relative to the shape file);
// an error names the flag or the field.
func readIstiodCurve(field, base, shapeFile, flag string, flagSet bool) (*istiodCurve, error) {
	path, what := flag, "--istiod-curve"
	if !flagSet {
		if field == "" {
			return nil, nil
		}
		path, what = field, fmt.Sprintf("istiodCurve (in --file %s)", shapeFile)
		if !filepath.IsAbs(path) {
			path = filepath.Join(base, path)
		}
	}
	if path == "" {
		return nil, nil
	}
	fh, err := inputfile.Open(path, inputfile.IstiodCurve)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer fh.Close()
	c, err := capacity.ParseIstiodCurve(fh)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return &istiodCurve{curve: c, name: filepath.Base(path)}, nil
}

func runProject(_ context.Context, streams Streams, g *globalFlags, sh capacity.Shape, curve *istiodCurve, dir string) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	m, err := loadModel(dir)
	if err != nil {
		return err
	}
	if curve != nil {
		if err := m.UseIstiodCurve(curve.curve, curve.name); err != nil {
			return badInput(fmt.Errorf("--istiod-curve: %w", err))
		}
	}
	p := capacity.Project(m, sh)
	return printValue(streams.Out, g.Output, p, func() string { return capacity.Text(p) })
}

// runHoldout checks the run's model against one of its own load levels.
func runHoldout(_ context.Context, streams Streams, g *globalFlags, level, dir string) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	m, err := loadModel(dir)
	if err != nil {
		return err
	}
	h, err := capacity.CheckHoldout(m, level)
	if err != nil {
		return badInput(err)
	}
	return printValue(streams.Out, g.Output, h, func() string { return capacity.HoldoutText(h) })
}

// loadModel reads the run directory and fits its model; both failures are the user's input.
func loadModel(dir string) (*capacity.Model, error) {
	run, err := results.Read(dir)
	if err != nil {
		return nil, badInput(err)
	}
	m, err := capacity.Build(run, 0)
	if err != nil {
		return nil, badInput(err)
	}
	return m, nil
}
