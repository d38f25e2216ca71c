package workloads

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/meshbench/meshbench/scenario"
)

// checkRunID names the objects CheckResources builds to read their containers; nothing is applied.
const checkRunID = "resources-check"

// CheckResources reports spec.workload.resources values that, merged with the catalog's per-container requests and
// limits, give a container a request above its limit (which the API server would refuse after the namespaces exist),
// naming the field to set too. Pure; call it on a scenario that validated.
func CheckResources(s *scenario.Scenario) scenario.Problems {
	w := s.Spec.Workload
	if w.Resources == nil || !slices.Contains(scenario.CatalogApps, w.App) || len(w.Topologies) == 0 {
		return nil
	}
	objs, _, err := Objects(s, w.Topologies[0], checkRunID)
	if err != nil {
		return scenario.Problems{{Path: "spec.workload", Message: fmt.Sprintf("cannot build the app's objects to check workload.resources: %v", err)}}
	}
	var containers []namedContainer
	for _, w := range workloadPodSpecs(objs) {
		containers = appendContainers(containers, w.name, *w.spec)
	}
	p := field.NewPath("spec", "workload", "resources")
	r := w.Resources
	var ps scenario.Problems
	for _, pair := range []struct {
		res                  corev1.ResourceName
		reqField, limField   string
		reqGiven, limitGiven bool
	}{
		{corev1.ResourceCPU, "cpuRequest", "cpuLimit", r.CPURequest != "", r.CPULimit != ""},
		{corev1.ResourceMemory, "memoryRequest", "memoryLimit", r.MemoryRequest != "", r.MemoryLimit != ""},
	} {
		if pair.reqGiven == pair.limitGiven {
			continue // neither: the catalog's own, consistent; both: scenario.Validate compares them
		}
		var over []string
		var req, lim resource.Quantity
		for _, c := range containers {
			rq, okReq := c.resources.Requests[pair.res]
			lm, okLim := c.resources.Limits[pair.res]
			if okReq && okLim && rq.Cmp(lm) > 0 {
				req, lim = rq, lm
				if pair.reqGiven {
					over = append(over, fmt.Sprintf("%s (%s)", c.name, lm.String()))
				} else {
					over = append(over, fmt.Sprintf("%s (%s)", c.name, rq.String()))
				}
			}
		}
		if len(over) == 0 {
			continue
		}
		if pair.reqGiven {
			ps = append(ps, scenario.Problem{Path: p.Child(pair.reqField).String(), Message: fmt.Sprintf(
				"is %s, above the %s limit the %s catalog sets for %s: the API server refuses a request above its limit; set %s too (at least %s), or lower %s",
				req.String(), pair.res, w.App, strings.Join(over, ", "), pair.limField, req.String(), pair.reqField)})
		} else {
			ps = append(ps, scenario.Problem{Path: p.Child(pair.limField).String(), Message: fmt.Sprintf(
				"is %s, below the %s request the %s catalog sets for %s: the API server refuses a request above its limit; set %s too (at most %s), or raise %s",
				lim.String(), pair.res, w.App, strings.Join(over, ", "), pair.reqField, lim.String(), pair.limField)})
		}
	}
	return ps
}

// namedPodSpec is the pod template of one of the app's workloads.
type namedPodSpec struct {
	name string
	spec *corev1.PodSpec
}

// workloadPodSpecs are the pod templates of the Deployments and StatefulSets among objs, in order.
func workloadPodSpecs(objs []runtime.Object) []namedPodSpec {
	var out []namedPodSpec
	for _, o := range objs {
		switch x := o.(type) {
		case *appsv1.Deployment:
			out = append(out, namedPodSpec{x.Name, &x.Spec.Template.Spec})
		case *appsv1.StatefulSet:
			out = append(out, namedPodSpec{x.Name, &x.Spec.Template.Spec})
		}
	}
	return out
}

// namedContainer is one container of the app's workloads, named "workload" or "workload/container" (a pod of
// several containers).
type namedContainer struct {
	name      string
	resources corev1.ResourceRequirements
}

func appendContainers(out []namedContainer, workload string, spec corev1.PodSpec) []namedContainer {
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		n := workload
		if len(all) > 1 {
			n += "/" + c.Name
		}
		out = append(out, namedContainer{name: n, resources: c.Resources})
	}
	return out
}
