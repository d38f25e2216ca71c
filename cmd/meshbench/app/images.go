package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/images"
	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/version"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/preflight"
	"github.com/meshbench/meshbench/scenario"
)

type imagesFlags struct {
	source    string
	registry  string
	tag       string
	platforms []string
	caCerts   string
	insecure  bool   // push
	file      string // save
}

const imagesLong = `Build meshbench's own container images from this source tree, as ko and crane do: no Docker, no Dockerfile.

  REG/meshbench-agent:TAG  the agent (/usr/local/bin/meshbench-agent): fortio servers, load clients, RR/CRR tests
  REG/meshbench:TAG        the CLI (/usr/local/bin/meshbench), which the CronJob of 'meshbench schedule' runs

Each is a multi-arch OCI index (linux/amd64 and linux/arm64 unless --platform), cross-compiled with CGO_ENABLED=0
and -trimpath, static, running as 65532:65532, with the build host's CA certificates and OCI labels. Builds are
reproducible: created is SOURCE_DATE_EPOCH, else the source commit's time, and layer mtimes are fixed. Every
platform is another compile of both binaries (minutes each with a cold Go cache): --platform linux/amd64 builds only
what amd64 nodes pull. Progress goes to stderr: a line per binary and image, and one every minute while a compile or
a push runs.

TAG is this meshbench's version (` + "`meshbench version`" + `), which is also the default of spec.images.tag: the agent a
run deploys is built from the same version as the CLI that deploys it. REG is spec.images.registry's default; runs
pull from the scenario's spec.images.registry (or --image-registry), so push to the registry the scenario names.

  build   build both indexes and print their references, digests, platforms and sizes (nothing leaves the machine)
  push    build and push to --registry (credentials from the Docker config: docker login / crane auth login)
  save    build and write one OCI layout tarball holding both, for ctr / kind:
          ctr -n k8s.io images import FILE; kind load image-archive FILE`

// newImagesCommand builds, pushes or saves meshbench's own images.
func newImagesCommand(streams Streams, g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images build|push|save",
		Short: "Build, push or save meshbench's own images (agent and CLI), multi-arch, without Docker",
		Long:  imagesLong,
		Example: `  meshbench images build
  meshbench images push --registry ghcr.io/myorg/meshbench
  meshbench images push --registry 172.30.0.1:5000/meshbench --insecure
  meshbench images save -o meshbench-images.tar --platform linux/amd64 && kind load image-archive meshbench-images.tar`,
		Args: cobra.NoArgs, // with RunE: an unknown verb is an error (exit 2), not the help
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newImagesVerb(streams, g, "build", "Build the agent and CLI images and print refs, digests, platforms and sizes (no push)"),
		newImagesVerb(streams, g, "push", "Build the agent and CLI images and push them to --registry; prints ref@digest"),
		newImagesVerb(streams, g, "save", "Build the agent and CLI images into one OCI layout tarball (ctr images import, kind load image-archive)"),
	)
	return cmd
}

func newImagesVerb(streams Streams, g *globalFlags, verb, short string) *cobra.Command {
	f := &imagesFlags{}
	cmd := &cobra.Command{
		Use:   verb,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runImages(cmd.Context(), streams, g, verb, f) },
	}
	switch verb {
	case "build":
		cmd.Example = "  meshbench images build\n  meshbench images build --platform linux/arm64 -o json"
	case "push":
		cmd.Example = "  meshbench images push --registry ghcr.io/myorg/meshbench\n  meshbench images push --registry 172.30.0.1:5000/meshbench --insecure"
	case "save":
		cmd.Use = "save -o FILE"
		cmd.Example = "  meshbench images save -o images.tar\n  ctr -n k8s.io images import images.tar\n  kind load image-archive images.tar"
	}
	fl := cmd.Flags()
	fl.StringVar(&f.source, "source", "", "meshbench source tree to build (default: the module root at or above the current directory)")
	fl.StringVar(&f.registry, "registry", scenario.DefaultRegistry, "registry and path the images are named under: REG/meshbench-agent:TAG and REG/meshbench:TAG")
	fl.StringVar(&f.tag, "tag", images.Tag(version.Get().Version), "image tag (default: this meshbench's version; another tag needs spec.images.tag in the scenarios)")
	fl.StringSliceVar(&f.platforms, "platform", images.DefaultPlatforms(), "platforms of each image index, comma separated")
	fl.StringVar(&f.caCerts, "ca-certs", images.DefaultCACerts, "PEM bundle copied to "+images.CACertsPath+" in the images (\"\" for none)")
	switch verb {
	case "push":
		fl.BoolVar(&f.insecure, "insecure", false, "allow plain HTTP and unverified TLS to the registry (a local registry)")
	case "save":
		// Shadows the global --output format flag: the archive is the output.
		fl.StringVarP(&f.file, "output", "o", "", "archive file to write (required)")
		_ = cmd.MarkFlagRequired("output")
	}
	return cmd
}

func runImages(ctx context.Context, streams Streams, g *globalFlags, verb string, f *imagesFlags) error {
	if verb != "save" {
		if err := g.checkOutput("table", "json", "yaml"); err != nil {
			return err
		}
	}
	o, err := imageBuildOptions(ctx, verb, f)
	if err != nil {
		return err
	}
	if !g.Quiet {
		o.Progress = progressWriter(g, streams.ErrOut)
		fmt.Fprintf(streams.ErrOut, "building %s and %s for %s from %s (version %s, created %s)\n",
			images.RefOf(o.Registry, images.Agent(), o.Tag), images.CLI().Repository, strings.Join(f.platforms, ","), o.Source,
			o.Stamp.Version, o.Stamp.Created.Format(time.RFC3339))
		if o.CACerts == "" {
			fmt.Fprintln(streams.ErrOut, "note: no CA certificates added (--ca-certs): TLS from the images needs a bundle of its own")
		}
	}
	start := time.Now()
	built, err := images.Build(ctx, o)
	if err != nil {
		return err
	}
	if !g.Quiet {
		fmt.Fprintf(streams.ErrOut, "built %d images in %s\n", len(built), time.Since(start).Round(100*time.Millisecond))
	}
	switch verb {
	case "push":
		if f.insecure {
			fmt.Fprintf(streams.ErrOut, "--insecure: plain HTTP and unverified TLS are allowed to %s\n", o.Registry)
		}
		refs, err := images.Push(ctx, built, images.PushOptions{Insecure: f.insecure, Progress: progressWriter(g, streams.ErrOut)})
		if err != nil && !f.insecure && images.Unreachable(err) {
			err = fmt.Errorf("%w (a plain-HTTP registry needs --insecure)", err)
		}
		if g.Output != "table" {
			if perr := printValue(streams.Out, g.Output, refs, nil); perr != nil {
				return errors.Join(err, perr)
			}
			return err
		}
		for _, r := range refs {
			fmt.Fprintln(streams.Out, r)
		}
		return err
	case "save":
		size, err := images.SaveFile(f.file, built)
		if err != nil {
			return err
		}
		refs := make([]string, len(built))
		for i, b := range built {
			refs[i] = b.Ref
		}
		fmt.Fprintf(streams.Out, "wrote %s (%s): %s\n", f.file, images.HumanBytes(size), strings.Join(refs, ", "))
		fmt.Fprintf(streams.ErrOut, "load it with: ctr -n k8s.io images import %s   or: kind load image-archive %s\n", f.file, f.file)
		return nil
	}
	return printValue(streams.Out, g.Output, built, func() string { return builtTable(built) })
}

// imageBuildOptions turns the flags and this binary's identity into build options; bad flags are bad input, all of
// them at once and before anything is built (a build takes minutes: save's -o is checked first, not after it).
func imageBuildOptions(ctx context.Context, verb string, f *imagesFlags) (images.Options, error) {
	var o images.Options
	var errs []error
	dir := f.source
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return o, err
		}
		dir = wd
	}
	src, err := images.FindSource(dir)
	if err != nil {
		errs = append(errs, err)
	}
	plats, err := images.ParsePlatforms(f.platforms)
	if err != nil {
		errs = append(errs, fmt.Errorf("--platform: %w", err))
	}
	if err := images.CheckName(f.registry, f.tag); err != nil {
		errs = append(errs, fmt.Errorf("--registry/--tag: %w", err))
	}
	if f.caCerts != "" {
		if _, err := inputfile.Check(f.caCerts, inputfile.CABundle); err != nil {
			if f.caCerts != images.DefaultCACerts || !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("--ca-certs: %w", err))
			} else {
				f.caCerts = "" // the default bundle is optional: a host without one builds images without one
			}
		}
	}
	if verb == "save" {
		if err := images.CheckSavePath(f.file); err != nil {
			errs = append(errs, fmt.Errorf("-o/--output: %w", err))
		}
	}
	if len(errs) > 0 {
		return o, badInput(errors.Join(errs...))
	}
	v := version.Get()
	commit, commitTime := images.SourceRevision(ctx, src)
	if commit == "" {
		commit = v.Commit
	}
	created, err := images.CreatedTime(os.Getenv("SOURCE_DATE_EPOCH"), commitTime, v.BuildDate)
	if err != nil {
		return o, badInput(err)
	}
	return images.Options{Source: src, Registry: f.registry, Tag: f.tag, Platforms: plats, CACerts: f.caCerts,
		Stamp: images.Stamp{Version: v.Version, Commit: commit, Created: created}}, nil
}

func builtTable(built []images.Built) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE / PLATFORM\tDIGEST\tSIZE")
	for _, x := range built {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", x.Ref, x.Digest, images.HumanBytes(x.Size))
		for _, p := range x.Platforms {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Platform, p.Digest, images.HumanBytes(p.Size))
		}
	}
	_ = tw.Flush()
	return b.String()
}

// addImageRegistryFlag registers --image-registry, applied to the scenario before its defaults (so before the run
// records it).
func addImageRegistryFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "image-registry", "", "registry of meshbench's own images, e.g. 172.30.0.1:5000/meshbench (overrides spec.images.registry; moves the agent and meshbench images)")
}

// scenarioLoadOptions are what the cmd layer decides before a scenario's defaults: the registry flag and the image
// tag of this binary's version.
func scenarioLoadOptions(imageRegistry string) scenario.LoadOptions {
	return scenario.LoadOptions{ImageRegistry: imageRegistry, ImageTag: images.Tag(version.Get().Version)}
}

// addSkipImageCheckFlag registers --skip-image-check (run and cni).
func addSkipImageCheckFlag(fl *pflag.FlagSet, p *bool) {
	fl.BoolVar(p, "skip-image-check", false, "do not resolve the images from here first (when only the nodes can reach or authenticate to the registry)")
}

// connectRun builds the clients of a run or cni once, for both checks before anything is created, in this order:
// the images (checkRunImages; a kubeconfig file refused by inputfile's rule is said before any registry is asked),
// then the API server (orchestrate.Reach). It returns the clients and the server's version.
func connectRun(ctx context.Context, g *globalFlags, streams Streams, s *scenario.Scenario, run, cni, skip bool) (*kube.Clients, string, error) {
	clients, err := kube.NewClients(g.Kubeconfig, g.Context)
	if ierr := checkRunImages(ctx, g, streams, clients, err, s, run, cni, skip); ierr != nil {
		return nil, "", ierr
	}
	return orchestrate.Reach(ctx, clients, err, orchestrate.DefaultConnectTimeout)
}

// checkRunImages resolves every image a run (or cni) will pull before anything is created (orchestrate.CheckImages:
// a FAIL is bad input, exit 2). clients are kube.NewClients' with its error clientsErr: a kubeconfig file that is no
// regular file or above its cap is bad input, said before any registry is asked; without clients for another reason
// the nodes' platforms are not compared (and the run reports why itself).
func checkRunImages(ctx context.Context, g *globalFlags, streams Streams, clients *kube.Clients, clientsErr error, s *scenario.Scenario, run, cni, skip bool) error {
	log := g.logger(streams.ErrOut)
	if skip {
		log.Warn("image check skipped (--skip-image-check)")
		return nil
	}
	if errors.As(clientsErr, new(*inputfile.Error)) {
		return clientsErr
	}
	return orchestrate.CheckImages(ctx, clients, s, run, cni, log)
}

// imageChecker is images.Check as a preflight.ImageChecker.
type imageChecker struct{}

func (imageChecker) CheckImages(ctx context.Context, s *scenario.Scenario, nodes []string) []preflight.Check {
	wants, err := orchestrate.ImageWants(s, s.Spec.Workload.App != "", s.Spec.CNI.Configured())
	if err != nil {
		return []preflight.Check{{Name: "images", Status: preflight.StatusFail, Detail: err.Error(), Fix: "fix the scenario's workload"}}
	}
	var out []preflight.Check
	for _, r := range images.Check(ctx, wants, images.CheckOptions{Registry: s.Spec.Images.Registry, NodePlatforms: nodes}) {
		ch := preflight.Check{Name: "image " + imageShortName(r.Ref), Status: preflight.Status(r.Status), Detail: r.Detail, Fix: r.Fix}
		if r.Status == images.StatusOK || !strings.Contains(ch.Detail, r.Ref) {
			ch.Detail = r.Ref + ": " + r.Detail
		}
		out = append(out, ch)
	}
	return out
}

// imageShortName is the last path element of a reference without tag or digest: "meshbench-agent", "frontend".
func imageShortName(ref string) string {
	if r, err := name.ParseReference(ref); err == nil {
		return path.Base(r.Context().RepositoryStr())
	}
	return ref
}
