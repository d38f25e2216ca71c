package orchestrate

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/images"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// CheckImages resolves every image a run (run) or a cni run (cni) will pull, before anything is created: a FAIL
// (missing, unauthorized, no image for the nodes' platforms) is an *InputError listing each with its fix; WARN and OK
// are logged. clients may be nil (the nodes' platforms are then not compared).
func CheckImages(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, run, cniRun bool, log *slog.Logger) error {
	wants, err := ImageWants(s, run, cniRun)
	if err != nil {
		return inputError(err)
	}
	rs := images.Check(ctx, wants, images.CheckOptions{Registry: s.Spec.Images.Registry, NodePlatforms: nodePlatforms(ctx, clients)})
	var fails []string
	for _, r := range rs {
		switch r.Status {
		case images.StatusOK:
			log.Info("image", "ref", r.Ref, "digest", r.Digest, "platforms", strings.Join(r.Platforms, ","))
		case images.StatusWarn:
			log.Warn("image", "ref", r.Ref, "detail", r.Detail, "fix", r.Fix)
		default:
			fails = append(fails, r.Detail+"\n    fix: "+r.Fix)
		}
	}
	if len(fails) > 0 {
		return inputError(fmt.Errorf("%d image(s) cannot be pulled, nothing was created (skip this check with --skip-image-check):\n  %s",
			len(fails), strings.Join(fails, "\n  ")))
	}
	return nil
}

// ImageWants lists the images a command pulls, each with the scenario field that sets it: for a run the agent (the
// load clients) and the app's images (workloads.Images); for cni the test pods' (cni.PulledImages).
func ImageWants(s *scenario.Scenario, run, cniRun bool) ([]images.Want, error) {
	var refs []string
	switch {
	case cniRun:
		refs = cni.PulledImages(s) // the agent first: the load clients' image too
	case run:
		refs = []string{s.Spec.Images.Agent}
	}
	if run {
		app, err := workloads.Images(s)
		if err != nil {
			return nil, err
		}
		refs = append(refs, app...)
	}
	var out []images.Want
	for _, ref := range refs {
		out = append(out, imageWant(s.Spec.Images, ref))
	}
	return out, nil
}

// imageWant is ref with the field of im that sets it, for the fix of a failed check.
func imageWant(im scenario.Images, ref string) images.Want {
	switch {
	case ref == im.Agent:
		return images.Want{Ref: ref, Field: "spec.images.agent", Ours: true}
	case ref == im.Meshbench:
		return images.Want{Ref: ref, Field: "spec.images.meshbench", Ours: true}
	case ref == im.Network:
		return images.Want{Ref: ref, Field: "spec.images.network"}
	case strings.HasPrefix(ref, strings.TrimSuffix(im.BankOfAnthos.Registry, "/")+"/"):
		return images.Want{Ref: ref, Field: "spec.images.bankOfAnthos"}
	case strings.HasPrefix(ref, strings.TrimSuffix(im.Bookinfo.Registry, "/")+"/examples-bookinfo-"):
		return images.Want{Ref: ref, Field: "spec.images.bookinfo"}
	}
	return images.Want{Ref: ref}
}

// nodePlatforms are the nodes' os/arch, for comparing with image indexes; nil when they cannot be listed.
func nodePlatforms(ctx context.Context, clients *kube.Clients) []string {
	if clients == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	nodes, err := clients.Kube.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nodes.Items {
		if goos, arch := n.Status.NodeInfo.OperatingSystem, n.Status.NodeInfo.Architecture; goos != "" && arch != "" {
			out = append(out, goos+"/"+arch)
		}
	}
	return out
}
