package orchestrate

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/images"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// CheckImages resolves every image a run (run) or a cni run (cni) will pull, before anything is created: a FAIL
// (missing, unauthorized, no image for the nodes' platforms) is an *InputError listing each with its fix; WARN and OK
// are logged. clients may be nil (the nodes' platforms are then not compared).
func CheckImages(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, run, cni bool, log *slog.Logger) error {
	wants, err := ImageWants(s, run, cni)
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

// ImageWants lists the images a command pulls: for a run the agent (load clients) and every container image of the
// app as workloads builds it; for cni the network and agent images.
func ImageWants(s *scenario.Scenario, run, cni bool) ([]images.Want, error) {
	im := s.Spec.Images
	want := func(ref string) images.Want {
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
	var out []images.Want
	if run || cni {
		out = append(out, want(im.Agent))
	}
	if cni {
		out = append(out, want(im.Network))
	}
	if run && s.Spec.Workload.App != "" {
		r := new(workloads.Renderer) // app manifests: read once for every topology
		for _, topo := range s.Spec.Workload.Topologies {
			objs, _, err := r.Objects(s, topo, "preflight")
			if err != nil {
				return nil, fmt.Errorf("list the app's images: %w", err)
			}
			for _, ref := range podImages(objs) {
				out = append(out, want(ref))
			}
		}
	}
	return out, nil
}

// podImages are the container images of every pod template in objs, in order.
func podImages(objs []runtime.Object) []string {
	var out []string
	for _, obj := range objs {
		var spec *corev1.PodSpec
		switch o := obj.(type) {
		case *appsv1.Deployment:
			spec = &o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			spec = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
		case *batchv1.Job:
			spec = &o.Spec.Template.Spec
		case *corev1.Pod:
			spec = &o.Spec
		}
		if spec == nil {
			continue
		}
		for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
			out = append(out, c.Image)
		}
	}
	return out
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
