package workloads

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestCheckResources: spec.workload.resources merged with the catalog's values per container: a request above a
// container's catalog limit (or a limit below its catalog request) is refused naming the field, the containers and
// the field to set too; consistent values and apps without catalog limits pass.
func TestCheckResources(t *testing.T) {
	t.Parallel()
	head := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: r}\nspec:\n  workload:\n"
	tests := []struct {
		name     string
		workload string
		path     string
		want     []string
	}{
		{"boa memory request above the frontend's limit", "    app: bank-of-anthos\n    resources: {memoryRequest: 300Mi}\n",
			"spec.workload.resources.memoryRequest", []string{"is 300Mi, above the memory limit the bank-of-anthos catalog sets for", "frontend (128Mi)", "set memoryLimit too (at least 300Mi)"}},
		{"boa cpu limit below the requests", "    app: bank-of-anthos\n    resources: {cpuLimit: 50m}\n",
			"spec.workload.resources.cpuLimit", []string{"is 50m, below the cpu request", "frontend (100m)", "accounts-db (100m)", "set cpuRequest too (at most 50m)"}},
		{"fortio-chain cpu request above the limit of 1", "    app: fortio-chain\n    resources: {cpuRequest: \"2\"}\n",
			"spec.workload.resources.cpuRequest", []string{"is 2, above the cpu limit the fortio-chain catalog sets for chain-0 (1)"}},
		{"within the catalog's limits", "    app: bank-of-anthos\n    resources: {cpuRequest: 120m, memoryRequest: 100Mi}\n", "", nil},
		{"both halves given", "    app: fortio-chain\n    resources: {cpuRequest: \"2\", cpuLimit: \"3\", memoryRequest: 1Gi, memoryLimit: 2Gi}\n", "", nil},
		{"bookinfo sets no limits", "    app: bookinfo\n    resources: {cpuRequest: \"4\"}\n", "", nil},
		{"no resources", "    app: bank-of-anthos\n", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustScenario(t, head+tc.workload)
			ps := CheckResources(s)
			if tc.path == "" {
				if len(ps) > 0 {
					t.Fatalf("want no problem, got %v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Path != tc.path {
				t.Fatalf("want one problem at %s, got %v", tc.path, ps)
			}
			for _, w := range tc.want {
				if !strings.Contains(ps[0].Message, w) {
					t.Errorf("message lacks %q:\n%s", w, ps[0].Message)
				}
			}
		})
	}
}

// TestCheckResourcesMatchesObjects: the check reads the same merged values the objects carry, so a scenario it
// passes never gives a container a request above its limit.
func TestCheckResourcesMatchesObjects(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: r}\nspec:\n  workload:\n    app: bank-of-anthos\n    resources: {cpuRequest: 250m, memoryRequest: 128Mi}\n")
	if ps := CheckResources(s); len(ps) > 0 {
		t.Fatalf("unexpected problems: %v", ps)
	}
	objs, _, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range workloadPodSpecs(objs) {
		for _, c := range w.spec.Containers {
			n++
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, okReq := c.Resources.Requests[res]
				lim, okLim := c.Resources.Limits[res]
				if okReq && okLim && req.Cmp(lim) > 0 {
					t.Errorf("%s: %s request %s above limit %s", c.Name, res, req.String(), lim.String())
				}
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d containers checked", n)
	}
}
