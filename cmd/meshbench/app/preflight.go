package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/preflight"
	"github.com/meshbench/meshbench/schedule"
)

type preflightFlags struct {
	file          string
	allowExisting bool
	prometheusURL string
	imageRegistry string
}

// newPreflightCommand checks, without changing anything, whether a scenario can run on the cluster.
func newPreflightCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &preflightFlags{}
	cmd := &cobra.Command{
		Use:   "preflight -f SCENARIO",
		Short: "Check the cluster for a scenario: Kubernetes, Istio, ambient, native sidecars, Gateway API, Prometheus, permissions",
		Long: `Check, read-only, everything a run of the scenario needs: Kubernetes version and nodes; Istio presence and version
(istiod's /version through the API server); ambient capability (PILOT_ENABLE_AMBIENT, ztunnel, istio-cni);
native sidecars; Gateway API CRDs and their bundle-version against the Istio version; a test stand-in data plane;
the app's namespaces; every image the pods pull (a manifest HEAD from here: missing or unauthorized is a FAIL, an
unreachable registry a WARN, an index without the nodes' platforms a FAIL); Prometheus and its cAdvisor series; and
every permission (SelfSubjectAccessReview). Each check is OK, WARN or FAIL with the fix. Exit 2 when a FAIL blocks
the requested modes.`,
		Example: `  meshbench preflight -f examples/quickstart.yaml
  meshbench preflight -f examples/study-a-multi.yaml -o json
  meshbench preflight -f examples/quickstart.yaml --image-registry 172.30.0.1:5000/meshbench`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPreflight(cmd.Context(), streams, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "scenario file (YAML)")
	fl.BoolVar(&f.allowExisting, "allow-existing-namespaces", false, "existing app namespaces are a warning, not a failure")
	fl.StringVar(&f.prometheusURL, "prometheus-url", "", "Prometheus URL (overrides spec.prometheus)")
	addImageRegistryFlag(fl, &f.imageRegistry)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runPreflight(ctx context.Context, streams Streams, g *globalFlags, f *preflightFlags) error {
	if err := g.checkOutput("table", "json", "yaml"); err != nil {
		return err
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return err
	}
	// Checked as run checks it (the same override): a bad URL names the flag before anything connects.
	if err := applyOverrides(s, prometheusURLOverride(f.prometheusURL)); err != nil {
		return err
	}
	clients, err := kube.NewClients(g.Kubeconfig, g.Context)
	if err != nil {
		return badInput(err)
	}
	rep, err := preflight.Run(ctx, clients, s, preflight.Options{Permissions: schedule.RequiredPermissions, AllowExisting: f.allowExisting, Images: imageChecker{}})
	if err != nil {
		return err
	}
	if err := printValue(streams.Out, g.Output, rep, rep.Table); err != nil {
		return err
	}
	if rep.Failed() {
		return badInput(fmt.Errorf("preflight failed for scenario %q: see the FAIL lines", s.Metadata.Name))
	}
	return nil
}
