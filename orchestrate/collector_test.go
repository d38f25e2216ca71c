package orchestrate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// TestRunCollectorRecordsAllocation: the runner's collector writes, beside the usage of each window, the requests and
// limits the measured pods had at collection time, over the window the usage was queried for.
func TestRunCollectorRecordsAllocation(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	proxy := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "mb", Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "web"}},
				InitContainers: []corev1.Container{{Name: "istio-proxy", RestartPolicy: &always, Resources: proxy}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	kube := fake.NewClientset(pods[0], pods[1], pods[2])
	queried := results.Window{Kind: results.WindowLoad, Start: time.Unix(1001, 0).UTC(), End: time.Unix(1300, 0).UTC()}
	var gotSets []podset.PodSet
	c := runCollector{&Collector{pods: prom.KubePods{Kube: kube}, collect: func(_ context.Context, _ results.Window, sets []podset.PodSet) (podset.Collected, error) {
		gotSets = sets
		got := measured(queried, sets)
		got.Samples = append(got.Samples, results.Sample{Window: queried, Component: results.ComponentSidecar, Metric: results.MetricCPU, Stat: "max", Value: 42})
		return got, nil
	}}}
	tg := target.Target{Namespaces: []string{"mb"}, AppSelector: "app=web"}
	col, err := c.Collect(context.Background(), tg, scenario.Case{Mode: scenario.ModeSidecar}, results.Window{Kind: results.WindowLoad, Start: time.Unix(1000, 500), End: time.Unix(1300, 200)})
	if err != nil {
		t.Fatal(err)
	}
	if len(gotSets) == 0 {
		t.Fatal("collect got no sets")
	}
	var got []string
	for _, s := range col.Samples {
		if s.Window != queried {
			t.Errorf("%+v: window %v, want the queried one", s, s.Window)
		}
		got = append(got, fmt.Sprintf("%s %s %s %g %s", s.Component, s.Metric, s.Stat, s.Value, s.Unit))
	}
	for _, want := range []string{"sidecar cpu max 42 ", "sidecar cpu request 300 millicores", "sidecar cpu limit 6000 millicores",
		"sidecar memory request 384 MiB", "sidecar memory limit 3072 MiB", "sidecar pods count 3 pods", "app cpu no-limit 3 containers"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %q in %q", want, got)
		}
	}
}

// TestRunCollectorGroupsPodsByWorkload: the runner's collector hands the pod sets each app pod's workload, found
// with the target's own pod selectors (app "existing": the workload's spec.selector; catalog apps: the app selector
// plus meshbench.dev/component).
func TestRunCollectorGroupsPodsByWorkload(t *testing.T) {
	t.Parallel()
	mk := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "bank", Name: name, Labels: labels},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	kube := fake.NewClientset(
		mk("frontend-1", map[string]string{"meshbench.dev/app": "bank", target.ComponentLabel: "frontend"}),
		mk("ledger-0", map[string]string{"meshbench.dev/app": "bank", "tier": "ledger"}),
	)
	var gotSets []podset.PodSet
	c := runCollector{&Collector{pods: prom.KubePods{Kube: kube}, collect: func(_ context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
		gotSets = sets
		return measured(w, sets), nil
	}}}
	tg := target.Target{Namespaces: []string{"bank"}, AppSelector: "meshbench.dev/app=bank", Workloads: []target.WorkloadRef{
		{Kind: target.KindDeployment, Namespace: "bank", Name: "frontend", Replicas: 1},
		{Kind: target.KindStatefulSet, Namespace: "bank", Name: "ledger", Replicas: 1, Selector: "tier=ledger"},
	}}
	if _, err := c.Collect(context.Background(), tg, scenario.Case{Mode: scenario.ModeNone}, results.Window{Kind: results.WindowIdle, Start: time.Unix(1000, 0), End: time.Unix(1060, 0)}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"bank/frontend-1": "Deployment/bank/frontend", "bank/ledger-0": "StatefulSet/bank/ledger"}
	for _, s := range gotSets {
		switch s.Component {
		case results.ComponentApp, results.ComponentSidecar:
			if !maps.Equal(s.Workloads, want) {
				t.Errorf("%s workloads %v, want %v", s.Component, s.Workloads, want)
			}
		}
	}
	if len(gotSets) == 0 {
		t.Fatal("collect got no sets")
	}
	// A workload selector that does not parse fails the collection rather than dropping the breakdown silently.
	tg.Workloads = append(tg.Workloads, target.WorkloadRef{Kind: target.KindDeployment, Namespace: "bank", Name: "bad", Selector: "a in (("})
	if _, err := c.Collect(context.Background(), tg, scenario.Case{Mode: scenario.ModeNone}, results.Window{Kind: results.WindowIdle, Start: time.Unix(1000, 0), End: time.Unix(1060, 0)}); err == nil ||
		!strings.Contains(err.Error(), "pod selector of Deployment bank/bad") {
		t.Errorf("bad selector: %v", err)
	}
}

// measured is a collection of w that has the CPU and memory averages of every set (what a complete Prometheus
// window gives).
func measured(w results.Window, sets []podset.PodSet) podset.Collected {
	out := podset.Collected{Window: w}
	for _, s := range sets {
		for _, m := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
			out.Samples = append(out.Samples, results.Sample{Window: w, Component: s.Component, Metric: results.Metric(m), Stat: "avg", Value: 1})
		}
	}
	return out
}

// Issue 15: a load window that gave everything but the app's CPU (Prometheus paused over it) was recorded ok with
// only a warning. The app's, its sidecars' (and in ambient modes the ztunnels') figures are the case's primary
// figures: without one the runner's collector fails, naming it, so the runner records the case as failed.
func TestRunCollectorFailsWithoutAPrimaryFigure(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mb", Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "web"}, {Name: "istio-proxy"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel-1", Labels: map[string]string{"app": "ztunnel"}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "istio-proxy"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istiod-1", Labels: map[string]string{"app": "istiod"}},
		Spec:       corev1.PodSpec{NodeName: "node2", Containers: []corev1.Container{{Name: "discovery"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	})
	tg := target.Target{Namespaces: []string{"mb"}, AppSelector: "app=web"}
	w := results.Window{Kind: results.WindowLoad, Start: time.Unix(1000, 0), End: time.Unix(1060, 0)}
	for _, tc := range []struct {
		mode    scenario.Mode
		drop    string // the component whose CPU average the collection lacks
		wantErr string
	}{
		{scenario.ModeSidecar, string(results.ComponentApp), "no figure for app cpu (1 pods)"},
		{scenario.ModeSidecar, string(results.ComponentSidecar), "no figure for sidecar cpu (1 pods)"},
		{scenario.ModeAmbient, string(results.ComponentZtunnel), "no figure for ztunnel cpu (1 pods)"},
		{scenario.ModeAmbient, string(results.ComponentIstiod), ""}, // shared and not primary: its warning suffices
	} {
		c := runCollector{&Collector{pods: prom.KubePods{Kube: kube}, collect: func(_ context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
			if !slices.ContainsFunc(sets, func(s podset.PodSet) bool { return string(s.Component) == tc.drop }) {
				t.Errorf("%s: no %s set to drop the cpu of", tc.mode, tc.drop)
			}
			got := measured(w, sets)
			got.Samples = slices.DeleteFunc(got.Samples, func(s results.Sample) bool { return string(s.Component) == tc.drop && s.Metric == results.MetricCPU })
			return got, nil
		}}}
		_, err := c.Collect(context.Background(), tg, scenario.Case{Mode: tc.mode}, w)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s without %s cpu: %v", tc.mode, tc.drop, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s without %s cpu: error %v, want %q", tc.mode, tc.drop, err, tc.wantErr)
		}
	}
}
