package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/compare"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/schedule"
	"github.com/meshbench/meshbench/workloads"
)

type scheduleFlags struct {
	file          string
	opts          schedule.Options
	apply         bool
	dryRun        bool
	imageRegistry string
}

// newScheduleCommand emits or applies a CronJob that runs a scenario in the cluster on a schedule.
func newScheduleCommand(streams Streams, g *globalFlags) *cobra.Command {
	f := &scheduleFlags{}
	cmd := &cobra.Command{
		Use:   "schedule -f SCENARIO",
		Short: "Emit (or --apply) a CronJob, ServiceAccount and least-privilege RBAC that run a scenario on a schedule",
		Long: `Print the manifests of a scheduled benchmark as YAML: a Namespace, a ServiceAccount, a ClusterRole granting exactly
the permissions a run needs (the list preflight checks) and its binding, a ConfigMap with the scenario (and, with app manifests, its objects as rendered here: the pod cannot read
your files; at most 1 MiB together), optionally a
PersistentVolumeClaim, and a CronJob whose pod runs 'meshbench run', then 'meshbench report' (and --push), then
'meshbench compare' against --baseline with the --fail-if gates. With --apply the objects are server-side applied
(field manager meshbench); --dry-run makes the API server validate them without persisting anything. (--dry-run
never changes the cluster, in every verb; to see the objects a run applies, use plan --show-objects.)`,
		Example: `  meshbench schedule -f nightly.yaml --pvc meshbench-runs --pvc-size 20Gi > schedule.yaml
  meshbench schedule -f nightly.yaml --push http://pushgateway.monitoring:9091 --apply
  meshbench schedule -f nightly.yaml --pvc runs --baseline baseline --fail-if 'cpu.sidecar > +10%' --apply --dry-run`,
		Args:        cobra.NoArgs,
		Annotations: scheduleSignal(),
		RunE:        func(cmd *cobra.Command, _ []string) error { return runSchedule(cmd.Context(), streams, g, f) },
	}
	fl := cmd.Flags()
	o := &f.opts
	fl.StringVarP(&f.file, "file", "f", "", "scenario file (YAML)")
	_ = cmd.MarkFlagRequired("file")
	fl.StringVar(&o.Schedule, "schedule", schedule.DefaultSchedule, "cron schedule of the runs")
	fl.StringVar(&o.TimeZone, "time-zone", "", "IANA time zone of the schedule (default: the controller's)")
	fl.StringVar(&o.Namespace, "namespace", schedule.DefaultNamespace, "namespace of the CronJob, ServiceAccount and ConfigMap")
	fl.StringVar(&o.Image, "image", "", "meshbench container image (default spec.images.meshbench: <spec.images.registry>/meshbench:<this version>)")
	addImageRegistryFlag(fl, &f.imageRegistry)
	fl.StringVar(&o.PVC, "pvc", "", "PersistentVolumeClaim that keeps the runs (mounted at "+schedule.RunsDir+")")
	fl.StringVar(&o.PVCSize, "pvc-size", "", "also create the PVC with this size, e.g. 20Gi")
	fl.StringVar(&o.StorageClass, "storage-class", "", "storage class of the created PVC (default: the cluster's)")
	fl.StringVar(&o.Push, "push", "", "Pushgateway URL that receives every run's summary")
	fl.StringVar(&o.PushJob, "push-job", "meshbench", "Pushgateway job label")
	fl.StringVar(&o.PushInstance, "push-instance", "", "Pushgateway instance label (default: the scenario name)")
	fl.BoolVar(&o.PushInsecure, "push-insecure", false, "do not verify the Pushgateway's TLS certificate (passed to report --push-insecure)")
	fl.StringVar(&o.PrometheusSecret, "prometheus-secret", "", "Secret in --namespace holding the Prometheus bearer token (key "+schedule.PrometheusTokenKey+
		") and CA (key "+schedule.PrometheusCAKey+"); required when the scenario sets spec.prometheus.bearerTokenFile or caFile")
	fl.StringVar(&o.Baseline, "baseline", "", "baseline run directory on the PVC (relative to "+schedule.RunsDir+") for --fail-if")
	fl.StringArrayVar(&o.FailIf, "fail-if", nil, "regression gate against the baseline, e.g. 'cpu.sidecar > +10%' (repeatable)")
	fl.DurationVar(&o.Timeout, "timeout", 6*time.Hour, "longest a scheduled run may take")
	fl.BoolVar(&f.apply, "apply", false, "server-side apply the objects to the cluster instead of printing them")
	fl.BoolVar(&f.dryRun, "dry-run", false, "with --apply: server-side dry run (validate and admit, persist nothing)")
	return cmd
}

func runSchedule(ctx context.Context, streams Streams, g *globalFlags, f *scheduleFlags) error {
	if err := g.checkOutput("table", "yaml"); err != nil {
		return err
	}
	opts, err := scheduleOptions(f)
	if err != nil {
		return err
	}
	objs, err := schedule.Objects(opts)
	if err != nil {
		return badInput(err)
	}
	if !f.apply {
		b, err := schedule.YAML(objs)
		if err != nil {
			return err
		}
		_, err = streams.Out.Write(b)
		return err
	}
	clients, _, err := orchestrate.Connect(ctx, g.Kubeconfig, g.Context, orchestrate.DefaultConnectTimeout)
	if err != nil {
		return err
	}
	ap := kube.Applier{Dynamic: clients.Dynamic, Mapper: clients.Mapper, DryRun: f.dryRun}
	for _, obj := range objs {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		u, err := ap.Apply(cctx, obj)
		cancel()
		if err != nil {
			return err
		}
		suffix := ""
		if f.dryRun {
			suffix = " (server dry run)"
		}
		fmt.Fprintf(streams.Out, "%s/%s applied%s\n", strings.ToLower(u.GetKind()), u.GetName(), suffix)
	}
	return nil
}

// scheduleOptions are the schedule's options with the scenario loaded and every flag checked: all problems, the
// flags' and the scenario's, in one bad-input error (exit 2), before anything is rendered or applied.
func scheduleOptions(f *scheduleFlags) (schedule.Options, error) {
	var errs []error
	if f.opts.Timeout == 0 { // the library reads 0 as its default; on the command line it is a mistake
		errs = append(errs, errors.New("--timeout 0s: must be a positive duration, e.g. --timeout 6h"))
	}
	for _, expr := range f.opts.FailIf {
		if _, err := compare.ParseGate(expr); err != nil {
			errs = append(errs, fmt.Errorf("--fail-if: %w", err))
		}
	}
	opts := f.opts
	r := new(workloads.Renderer)
	s, err := loadScenarioWith(f.file, f.imageRegistry, r)
	if err != nil {
		errs = append(errs, err, opts.ValidateFlags())
		return opts, badInput(errors.Join(errs...))
	}
	opts.Scenario = s
	// The scheduled pod cannot read this machine's files: app manifests travel rendered in the ConfigMap.
	if opts.Manifests, err = r.ManifestsYAML(s); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", f.file, err))
	}
	if opts.Image == "" { // the CLI image of the scenario's registry and tag: the same version as the agent it deploys
		opts.Image = s.Spec.Images.Meshbench
	}
	errs = append(errs, opts.Validate())
	if err := errors.Join(errs...); err != nil {
		return opts, badInput(err)
	}
	return opts, nil
}
