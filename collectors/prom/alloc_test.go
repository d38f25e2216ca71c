package prom

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

func resources(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, x := range []struct {
		list corev1.ResourceList
		name corev1.ResourceName
		v    string
	}{{r.Requests, corev1.ResourceCPU, reqCPU}, {r.Requests, corev1.ResourceMemory, reqMem}, {r.Limits, corev1.ResourceCPU, limCPU}, {r.Limits, corev1.ResourceMemory, limMem}} {
		if x.v != "" {
			x.list[x.name] = resource.MustParse(x.v)
		}
	}
	return r
}

// TestPodSetsAllocation: requests and limits are read from the pods as the API server has them, per component, with
// the sidecar rendered the way Istio's injector renders it. Upstream (istio/istio, tags 1.24.0 and 1.28.0):
// manifests/charts/istio-control/istio-discovery/files/injection-template.yaml puts istio-proxy under
// initContainers with "restartPolicy: Always" when $nativeSidecar is true (1.24.0 line 173, 1.28.0 line 193; the
// "containers:" key is then written after it), and renders the one-shot istio-init (istio-validation with CNI) with
// the same `template "resources"` as the proxy; manifests/charts/istio-control/istio-discovery/values.yaml
// global.proxy.resources defaults to requests cpu 100m, memory 128Mi, limits cpu 2000m, memory 1024Mi.
func TestPodSetsAllocation(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	proxy := resources("100m", "128Mi", "2000m", "1024Mi") // global.proxy.resources
	app := map[string]string{"meshbench.dev/app": "web"}
	lg := map[string]string{"meshbench.dev/component": "loadgen"}

	native := onNode(pod("mb", "web-native", app, []string{"web"}, nil, corev1.PodRunning), "node1")
	native.Spec.Containers[0].Resources = resources("50m", "64Mi", "", "256Mi") // no CPU limit
	native.Spec.InitContainers = []corev1.Container{
		{Name: "istio-validation", Resources: proxy},                    // one-shot: ended before the window
		{Name: "istio-proxy", Resources: proxy, RestartPolicy: &always}, // native sidecar
	}
	classic := onNode(pod("mb", "web-classic", app, []string{"web", "istio-proxy"}, []string{"istio-init"}, corev1.PodRunning), "node1")
	classic.Spec.Containers[0].Resources = resources("50m", "64Mi", "", "256Mi")
	classic.Spec.Containers[1].Resources = proxy
	classic.Spec.InitContainers[0].Resources = proxy
	// A pod whose one-shot init container asks for more than its running containers: the scheduler reserves that.
	big := onNode(pod("mb", "web-biginit", app, []string{"web"}, []string{"migrate"}, corev1.PodRunning), "node1")
	big.Spec.Containers[0].Resources = resources("50m", "64Mi", "", "256Mi")
	big.Spec.InitContainers[0].Resources = resources("500m", "64Mi", "", "")
	client := onNode(pod("mb", "loadgen-0", lg, []string{"fortio"}, nil, corev1.PodRunning), "node1") // no resources at all
	zt := onNode(pod("istio-system", "ztunnel-1", map[string]string{"app": "ztunnel"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node1")
	zt.Spec.Containers[0].Resources = resources("200m", "512Mi", "", "")
	// A client alone on its node: that node's ztunnel is the benchmark's (loadgen-proxy), its requests too.
	client2 := onNode(pod("mb", "loadgen-1", lg, []string{"fortio"}, nil, corev1.PodRunning), "node2")
	zt2 := onNode(pod("istio-system", "ztunnel-2", map[string]string{"app": "ztunnel"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node2")
	zt2.Spec.Containers[0].Resources = resources("200m", "512Mi", "", "")
	ended := pod("mb", "web-old", app, []string{"web"}, nil, corev1.PodSucceeded)
	ended.Spec.Containers[0].Resources = resources("9", "9Gi", "", "")

	kube := fake.NewClientset(native, classic, big, client, zt, client2, zt2, ended)
	sets, err := PodSets(context.Background(), KubePods{Kube: kube}, Scope{AppNamespaces: []string{"mb"},
		AppSelector: "meshbench.dev/app=web", LoadgenSelector: "meshbench.dev/component=loadgen", Mesh: MeshScope{NodeAgents: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]podset.Allocation{
		// three web containers (the ended pod is not counted), none with a CPU limit
		string(results.ComponentApp): {Pods: 3, Containers: 3, CPURequest: 150, MemoryRequest: 192, MemoryLimit: 768, CPUNoLimit: 3},
		// the native sidecar counts like the classic one; the istio-init / istio-validation copies do not
		string(results.ComponentSidecar):      {Pods: 2, Containers: 2, CPURequest: 200, MemoryRequest: 256, CPULimit: 4000, MemoryLimit: 2048},
		string(results.ComponentLoadgen):      {Pods: 2, Containers: 2, CPUNoLimit: 2, MemoryNoLimit: 2},
		string(results.ComponentZtunnel):      {Pods: 1, Containers: 1, CPURequest: 200, MemoryRequest: 512, CPUNoLimit: 1, MemoryNoLimit: 1},
		string(results.ComponentLoadgenProxy): {Pods: 1, Containers: 1, CPURequest: 200, MemoryRequest: 512, CPUNoLimit: 1, MemoryNoLimit: 1},
	}
	var notes []string
	for _, s := range sets {
		notes = append(notes, s.Notes...)
		w, ok := want[string(s.Component)]
		if !ok {
			t.Errorf("unexpected set %s", s.Component)
			continue
		}
		delete(want, string(s.Component))
		if s.Allocation == nil || *s.Allocation != w {
			t.Errorf("%s allocation %+v, want %+v", s.Component, s.Allocation, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("sets missing: %v", want)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "pod mb/web-biginit: the scheduler reserves more than its containers' requests: its init containers' cpu request (500m) is larger than its running containers' (50m)") ||
		!strings.HasPrefix(notes[1], "ztunnel istio-system/ztunnel-1 on node node1 carries the load client pod(s) mb/loadgen-0 as well as the app's") {
		t.Errorf("notes: %q", notes)
	}

	// As samples: in usage's units, "no limit" never written as a limit of 0.
	w := results.Window{Kind: results.WindowIdle, Start: time.Unix(100, 0).UTC(), End: time.Unix(400, 0).UTC()}
	var got []string
	for _, s := range AllocationSamples(sets, w) {
		if s.Window != w || s.Source != results.SourcePodSpec {
			t.Errorf("sample %+v: window or source", s)
		}
		got = append(got, fmt.Sprintf("%s %s %s %g %s", s.Component, s.Metric, s.Stat, s.Value, s.Unit))
	}
	wantSamples := []string{
		"app cpu request 150 millicores", "app cpu no-limit 3 containers", "app memory request 192 MiB", "app memory limit 768 MiB", "app pods count 3 pods",
		"sidecar cpu request 200 millicores", "sidecar cpu limit 4000 millicores", "sidecar memory request 256 MiB", "sidecar memory limit 2048 MiB", "sidecar pods count 2 pods",
		"ztunnel cpu request 200 millicores", "ztunnel cpu no-limit 1 containers", "ztunnel memory request 512 MiB", "ztunnel memory no-limit 1 containers", "ztunnel pods count 1 pods",
		"loadgen cpu request 0 millicores", "loadgen cpu no-limit 2 containers", "loadgen memory request 0 MiB", "loadgen memory no-limit 2 containers", "loadgen pods count 2 pods",
		"loadgen-proxy cpu request 200 millicores", "loadgen-proxy cpu no-limit 1 containers", "loadgen-proxy memory request 512 MiB", "loadgen-proxy memory no-limit 1 containers", "loadgen-proxy pods count 1 pods",
	}
	if strings.Join(got, "\n") != strings.Join(wantSamples, "\n") {
		t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSamples, "\n"))
	}

	// The node set is not built from pod specs: no allocation.
	if s := AllocationSamples([]podset.PodSet{podset.NodeSet(podset.NodeRef{Name: "node1"})}, w); len(s) != 0 {
		t.Errorf("node set: %v", s)
	}
}

// TestCheckRequiredIgnoresAllocation: a waypoint's requests prove nothing about its usage being measured.
func TestCheckRequiredIgnoresAllocation(t *testing.T) {
	t.Parallel()
	set := podset.PodSet{Component: results.ComponentWaypoint, Required: true, Pods: map[string][]string{"mb": {"waypoint-1"}}}
	alloc := []results.Sample{{Component: results.ComponentWaypoint, Metric: results.MetricCPU, Stat: results.StatRequest},
		{Component: results.ComponentWaypoint, Metric: results.MetricMemory, Stat: results.StatRequest}}
	if err := CheckRequired([]podset.PodSet{set}, alloc); err == nil || !strings.Contains(err.Error(), "waypoint cpu (1 pods)") {
		t.Errorf("CheckRequired with allocation samples only: %v", err)
	}
}
