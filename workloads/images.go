package workloads

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/scenario"
)

// Images lists the container images (init containers first) of every pod the app of s runs, over each of its
// topologies, in the order the objects are built; repeats are kept. Preflight and the run's image check resolve
// them before anything is created. Nil for a scenario without an app.
func Images(s *scenario.Scenario) ([]string, error) {
	if s.Spec.Workload.App == "" {
		return nil, nil
	}
	var out []string
	r := new(Renderer) // app manifests: read once for every topology
	for _, topo := range s.Spec.Workload.Topologies {
		objs, _, err := r.Objects(s, topo, "preflight")
		if err != nil {
			return nil, fmt.Errorf("list the app's images: %w", err)
		}
		out = append(out, podImages(objs)...)
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
