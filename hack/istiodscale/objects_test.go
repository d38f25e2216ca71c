package main

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/internal/kube"
)

// The builders' objects as YAML, golden: every label cleanup depends on, the taint, the toleration and the
// nodeSelector that keep the pods on the fake nodes and everything else off them.
func TestObjectsGolden(t *testing.T) {
	n0, err := FakeNode("run1", 0)
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Namespace: NamespaceName(NamespacePrefix, 0), Name: WorkloadName(3), Replicas: 7}
	var b bytes.Buffer
	if err := kube.RenderYAML(&b, []runtime.Object{n0, Namespace("run1", w.Namespace, "istio-injection", "enabled"), Deployment("run1", w, "img:1"), Service("run1", w)}); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/objects.golden.yaml", b.Bytes())
}

func TestFakeNode(t *testing.T) {
	tests := []struct {
		i        int
		wantCIDR string
		wantErr  bool
	}{
		{0, "10.244.100.0/24", false},
		{1, "10.244.101.0/24", false},
		{155, "10.244.255.0/24", false},
		{156, "", true},
		{-1, "", true},
	}
	for _, tt := range tests {
		n, err := FakeNode("r", tt.i)
		if tt.wantErr {
			if err == nil {
				t.Errorf("FakeNode(%d): no error, want one (pod CIDR out of 10.244.0.0/16)", tt.i)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FakeNode(%d): %v", tt.i, err)
		}
		if n.Spec.PodCIDR != tt.wantCIDR || len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != tt.wantCIDR {
			t.Errorf("FakeNode(%d) pod CIDR %q %v, want %q", tt.i, n.Spec.PodCIDR, n.Spec.PodCIDRs, tt.wantCIDR)
		}
		if n.Labels[FakeNodeLabel] != "true" || n.Labels[ScaleLabel] != "r" || n.Labels[kube.ManagedByLabel] != kube.ManagedByValue {
			t.Errorf("FakeNode(%d) labels %v: kwok's selector, the run and managed-by must be set", tt.i, n.Labels)
		}
	}
}

// The pods tolerate exactly the fake nodes' taint and select them: kwok's selector, the taint and the pods agree.
func TestPodsLandOnlyOnFakeNodes(t *testing.T) {
	n, _ := FakeNode("r", 0)
	d := Deployment("r", Workload{"ns", "svc-0000", 3}, "img")
	spec := d.Spec.Template.Spec
	for k, v := range spec.NodeSelector {
		if n.Labels[k] != v {
			t.Errorf("node selector %s=%s does not match the fake node's labels", k, v)
		}
	}
	for _, taint := range n.Spec.Taints {
		ok := false
		for _, tol := range spec.Tolerations {
			ok = ok || tol.ToleratesTaint(klog.Background(), &taint, false)
		}
		if !ok {
			t.Errorf("pods do not tolerate the fake node's taint %v", taint)
		}
	}
	if !strings.Contains(strings.Join(KwokArgs("k", "s"), " "), "--manage-nodes-with-label-selector="+FakeNodeLabel+"=true") {
		t.Errorf("kwok does not select the fake nodes by %s: %v", FakeNodeLabel, KwokArgs("k", "s"))
	}
	if *d.Spec.Replicas != 3 || d.Spec.Template.Labels[AppLabel] != "svc-0000" || d.Spec.Template.Labels[ScaleLabel] != "r" {
		t.Errorf("deployment replicas %d, pod labels %v", *d.Spec.Replicas, d.Spec.Template.Labels)
	}
	s := Service("r", Workload{"ns", "svc-0000", 3})
	if s.Spec.Selector[AppLabel] != "svc-0000" || s.Spec.Ports[0].TargetPort.IntValue() != ContainerPort {
		t.Errorf("service selector %v port %v", s.Spec.Selector, s.Spec.Ports)
	}
}

func TestNodeStatus(t *testing.T) {
	st := NodeStatus(250)
	if got := st.Allocatable.Pods().Value(); got != 250 {
		t.Errorf("allocatable pods %d, want 250", got)
	}
	if got := st.Capacity.Pods().Value(); got != 250 {
		t.Errorf("capacity pods %d, want 250", got)
	}
}

func TestParseLabel(t *testing.T) {
	tests := []struct {
		in, k, v string
		err      bool
	}{
		{"istio-injection=enabled", "istio-injection", "enabled", false},
		{"istio.io/rev=canary", "istio.io/rev", "canary", false},
		{"novalue", "", "", true},
		{"=x", "", "", true},
	}
	for _, tt := range tests {
		k, v, err := ParseLabel(tt.in)
		if (err != nil) != tt.err || k != tt.k || v != tt.v {
			t.Errorf("ParseLabel(%q) = %q, %q, %v", tt.in, k, v, err)
		}
	}
}

func TestHasIstioProxy(t *testing.T) {
	status := map[string]string{"sidecar.istio.io/status": `{"containers":["istio-proxy"]}`}
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"native sidecar", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: status}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "istio-proxy"}}, Containers: []corev1.Container{{Name: "app"}}}}, true},
		{"classic sidecar", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: status}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}}}, true},
		{"status without the container", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: status}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}, false},
		{"container without the status", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy"}}}}, false},
		{"not injected", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}, false},
	}
	for _, tt := range tests {
		if got := HasIstioProxy(&tt.pod); got != tt.want {
			t.Errorf("%s: HasIstioProxy = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReadyEndpoints(t *testing.T) {
	yes, no := true, false
	ep := func(r *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: r}}
	}
	tests := []struct {
		name  string
		items []discoveryv1.EndpointSlice
		want  int
	}{
		{"none", nil, 0},
		{"ready, unknown (counts as ready) and not ready", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep(&yes), ep(nil), ep(&no)}}}, 2},
		{"several slices", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep(&yes)}}, {Endpoints: []discoveryv1.Endpoint{ep(&yes), ep(&yes)}}}, 3},
	}
	for _, tt := range tests {
		if got := ReadyEndpoints(tt.items); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestStateSettled(t *testing.T) {
	size := Size{Pods: 10}
	tests := []struct {
		name string
		st   State
		want bool
	}{
		{"all there", State{Pods: 10, Running: 10, Injected: 10, Endpoints: 10}, true},
		{"one not running", State{Pods: 10, Running: 9, Injected: 10, Endpoints: 10}, false},
		{"one not injected", State{Pods: 10, Running: 10, Injected: 9, Endpoints: 10}, false},
		{"endpoints behind", State{Pods: 10, Running: 10, Injected: 10, Endpoints: 8}, false},
		{"old pods terminating", State{Pods: 10, Running: 10, Injected: 10, Endpoints: 10, Deleting: 1}, false},
		{"too many", State{Pods: 11, Running: 11, Injected: 11, Endpoints: 11}, false},
	}
	for _, tt := range tests {
		if got := tt.st.Settled(size); got != tt.want {
			t.Errorf("%s: Settled = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestKwokArgs(t *testing.T) {
	got := strings.Join(KwokArgs("/k/config", "/o/stages.yaml"), " ")
	for _, want := range []string{"--kubeconfig=/k/config", "--config=/o/stages.yaml", "--manage-all-nodes=false", "--manage-single-node=", "--manage-nodes-with-annotation-selector="} {
		if !strings.Contains(got, want) {
			t.Errorf("kwok args %q lack %q", got, want)
		}
	}
}
