package prom

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// The label layouts below are the ones the supported Prometheus setups give whole-node series (read upstream):
//
//   - kube-prometheus-stack (prometheus-community/helm-charts, charts/kube-prometheus-stack, tags
//     kube-prometheus-stack-60.0.0 through -88.5.3, unchanged): templates/exporters/kubelet/servicemonitor.yaml scrapes
//     /metrics/cadvisor (cAdvisor: true) and /metrics/probes by default, /metrics/resource only with
//     kubelet.serviceMonitor.resource (false; resourcePath "/metrics/resource/v1alpha1"), job = the Service's k8s-app
//     label "kubelet", metrics_path from __metrics_path__ (values.yaml cAdvisorRelabelings, resourceRelabelings).
//     values.yaml cAdvisorMetricRelabelings drops sourceLabels [id, pod] regex '.+;' (since 37.0.0, PR #2197): every
//     cgroup without a pod, so the root cgroup id="/" is gone. prometheus-operator (v0.93.0,
//     pkg/prometheus/promcfg.go) sets node from the Endpoints address' Node target (regex "Node;(.*)"), and its
//     kubelet controller (pkg/kubelet/controller.go) gives that address as the node's InternalIP, so
//     instance="<InternalIP>:10250". node-exporter (subchart prometheus-node-exporter 4.56.1 in 88.5.3; nodeExporter.enabled
//     true): job "node-exporter" (jobLabel), hostNetwork, no relabelings by default, so instance="<node IP>:9100"
//     and no node label.
//   - plain Prometheus (prometheus/prometheus v3.14.0 and v2.42.0, documentation/examples/prometheus-kubernetes.yml):
//     jobs kubernetes-nodes and kubernetes-cadvisor with role: node, whose instance is the node name
//     (discovery/kubernetes/node.go: model.InstanceLabel = node.Name), plus a labelmap of node labels
//     (kubernetes_io_hostname, ...); no node label; cAdvisor's id="/" kept. Istio's sample (istio/istio 1.30.3,
//     samples/addons/prometheus.yaml) is the same, job kubernetes-nodes-cadvisor, plus metrics_path.
//   - the local harness (hack/localcluster/conf/prometheus.yml.in): static targets "<IP>:10250" with node=<name>,
//     jobs kubelet-cadvisor and kubelet-resource.
var testNodes = []podset.NodeRef{
	{Name: "node1", Addresses: []string{"10.0.0.1"}, Hostname: "node1"},
	{Name: "ip-10-0-0-2.ec2.internal", Addresses: []string{"10.0.0.2", "fd00::2"}, Hostname: "ip-10-0-0-2"},
	{Name: "node3", Addresses: []string{"10.0.0.3"}, Hostname: "node3"},
}

func TestNodeRefIdentifiedBy(t *testing.T) {
	t.Parallel()
	n1, n2 := testNodes[0], testNodes[1]
	for _, tc := range []struct {
		name   string
		node   podset.NodeRef
		labels map[string]string
		want   bool
	}{
		{"harness node label", n1, map[string]string{"job": "kubelet-cadvisor", "instance": "10.0.0.1:10250", "node": "node1"}, true},
		{"kps kubelet node label", n1, map[string]string{"job": "kubelet", "instance": "10.0.0.1:10250", "node": "node1", "metrics_path": "/metrics/resource"}, true},
		{"node label decides over instance", n1, map[string]string{"instance": "10.0.0.1:10250", "node": "node3"}, false},
		{"plain: instance is the node name", n1, map[string]string{"job": "kubernetes-cadvisor", "instance": "node1", "kubernetes_io_hostname": "node1"}, true},
		{"plain: other node", n1, map[string]string{"instance": "node3", "kubernetes_io_hostname": "node3"}, false},
		{"instance name with port", n1, map[string]string{"instance": "node1:10250"}, true},
		{"node-exporter by InternalIP", n1, map[string]string{"job": "node-exporter", "instance": "10.0.0.1:9100"}, true},
		{"no prefix match of IPs", n1, map[string]string{"job": "node-exporter", "instance": "10.0.0.10:9100"}, false},
		{"IPv6 instance, other spelling", n2, map[string]string{"instance": "[fd00:0::2]:9100"}, true},
		{"hostname label differs from the node name", n2, map[string]string{"kubernetes_io_hostname": "ip-10-0-0-2"}, true},
		{"instance is the hostname", n2, map[string]string{"instance": "ip-10-0-0-2:9100"}, true},
		{"nodename of node-exporter relabeling", n2, map[string]string{"nodename": "ip-10-0-0-2.ec2.internal"}, true},
		{"nothing identifying", n1, map[string]string{"job": "kubelet"}, false},
	} {
		if got := tc.node.IdentifiedBy(tc.labels); got != tc.want {
			t.Errorf("%s: %s.IdentifiedBy(%v) = %v, want %v", tc.name, tc.node.Name, tc.labels, got, tc.want)
		}
	}
}

func TestNodeRefOf(t *testing.T) {
	t.Parallel()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-a", Labels: map[string]string{corev1.LabelHostname: "host-a"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: "host-a"}, {Type: corev1.NodeExternalIP, Address: "203.0.113.7"},
			{Type: corev1.NodeInternalIP, Address: "10.1.0.7"}, {Type: corev1.NodeInternalIP, Address: "fd00::7"},
		}}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: "m-1", BootID: "b-1"}
	got := podset.NodeRefOf(n)
	if got.MachineID != "m-1" || got.BootID != "b-1" {
		t.Errorf("NodeRefOf = %+v: want status.nodeInfo's machineID and bootID", got)
	}
	if got.Name != "n-a" || got.Hostname != "host-a" || !slices.Equal(got.Addresses, []string{"10.1.0.7", "fd00::7", "203.0.113.7", "host-a"}) {
		t.Errorf("NodeRefOf = %+v: want InternalIPs first", got)
	}
}

func group(samples int, kv ...string) NodeGroup {
	g := NodeGroup{Labels: map[string]string{}, Samples: samples}
	for i := 0; i < len(kv); i += 2 {
		g.Labels[kv[i]] = kv[i+1]
	}
	return g
}

func TestChooseNodeSeries(t *testing.T) {
	t.Parallel()
	test := []podset.NodeRef{testNodes[0], testNodes[2]} // node1 and node3 of three
	empty := func(src string) NodeCandidates {
		return NodeCandidates{Source: src, Probe: src + "{}", Absent: "why " + src}
	}
	t.Run("kube-prometheus-stack with resource", func(t *testing.T) {
		t.Parallel()
		res := empty(NodeSeriesResource)
		for i, n := range []string{"node1", "ip-10-0-0-2.ec2.internal", "node3"} {
			res.Groups = append(res.Groups, group(30, "job", "kubelet", "instance", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}[i]+":10250",
				"node", n, "metrics_path", "/metrics/resource"))
		}
		picks, notes := chooseNodeSeries(test, []NodeCandidates{empty(NodeSeriesCadvisor), res, empty(NodeSeriesNodeExporter)})
		if len(notes) != 0 || len(picks) != 2 {
			t.Fatalf("picks %+v notes %q", picks, notes)
		}
		want := `{job="kubelet",instance="10.0.0.3:10250",node="node3",nodename="",kubernetes_io_hostname="",metrics_path="/metrics/resource",service="",endpoint=""}`
		if picks[1].Node != "node3" || picks[1].Source != NodeSeriesResource || !slices.Equal(picks[1].Selectors(), []string{want}) {
			t.Errorf("node3 pick %+v selectors %q", picks[1], picks[1].Selectors())
		}
	})
	t.Run("preference order and the node-exporter fallback", func(t *testing.T) {
		t.Parallel()
		cad := empty(NodeSeriesCadvisor)
		cad.Groups = []NodeGroup{group(30, "job", "kubernetes-cadvisor", "instance", "node3")}
		ne := empty(NodeSeriesNodeExporter)
		ne.Groups = []NodeGroup{group(10, "job", "node-exporter", "instance", "10.0.0.1:9100"), group(10, "job", "node-exporter", "instance", "10.0.0.3:9100")}
		picks, notes := chooseNodeSeries(test, []NodeCandidates{cad, empty(NodeSeriesResource), ne})
		if len(notes) != 0 || len(picks) != 2 || picks[0].Source != NodeSeriesNodeExporter || picks[1].Source != NodeSeriesCadvisor {
			t.Errorf("picks %+v notes %q: want node1 from node-exporter, node3 from cAdvisor", picks, notes)
		}
		if picks[0].MaxSamples() != 10 {
			t.Errorf("max samples %d", picks[0].MaxSamples())
		}
	})
	t.Run("absent says why, per source", func(t *testing.T) {
		t.Parallel()
		ne := empty(NodeSeriesNodeExporter)
		ne.Groups = []NodeGroup{group(10, "job", "node-exporter", "instance", "10.0.0.9:9100")}
		res := empty(NodeSeriesResource)
		res.Err = errorString("503")
		picks, notes := chooseNodeSeries(test[:1], []NodeCandidates{empty(NodeSeriesCadvisor), res, ne})
		if len(picks) != 0 || len(notes) != 1 {
			t.Fatalf("picks %+v notes %q", picks, notes)
		}
		for _, want := range []string{"node CPU and memory of node node1 not collected", "addresses 10.0.0.1",
			"cadvisor-root cadvisor-root{}: no series (why cadvisor-root)", "kubelet-resource kubelet-resource{}: query failed: 503",
			`node-exporter node-exporter{}: only series of other targets ({job="node-exporter",instance="10.0.0.9:9100"})`} {
			if !strings.Contains(notes[0], want) {
				t.Errorf("note %q lacks %q", notes[0], want)
			}
		}
	})
	t.Run("two jobs, moved target, ambiguous series", func(t *testing.T) {
		t.Parallel()
		ne := empty(NodeSeriesNodeExporter)
		ne.Groups = []NodeGroup{
			group(10, "job", "node-exporter", "instance", "10.0.0.1:9100", "endpoint", "http-metrics"),
			group(4, "job", "node-exporter", "instance", "10.0.0.1:9100", "endpoint", "metrics"),
			group(10, "job", "extra-node-exporter", "instance", "10.0.0.1:9100"),
			group(10, "job", "weird", "kubernetes_io_hostname", "node3", "instance", "node1"), // names both test nodes
		}
		picks, notes := chooseNodeSeries(test, []NodeCandidates{ne})
		// The job first by name wins (extra-node-exporter), so one group remains for node1; the group naming both
		// test nodes is left out for both, and node3 has nothing else.
		if len(picks) != 1 || picks[0].Node != "node1" || len(picks[0].Groups) != 1 || picks[0].Groups[0].Labels["job"] != "extra-node-exporter" {
			t.Fatalf("picks %+v", picks)
		}
		joined := strings.Join(notes, "\n")
		for _, want := range []string{
			`node node1: node-exporter series {job="weird",instance="node1",kubernetes_io_hostname="node3"} also match node(s) node3: not attributable`,
			`node node1: node-exporter series of jobs extra-node-exporter, node-exporter identify it; using job "extra-node-exporter" only`,
			`node node3: node-exporter series {job="weird",instance="node1",kubernetes_io_hostname="node3"} also match node(s) node1`,
			"node CPU and memory of node node3 not collected",
		} {
			if !strings.Contains(joined, want) {
				t.Errorf("notes lack %q:\n%s", want, joined)
			}
		}
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestChooseNodeSeriesMovedTarget(t *testing.T) {
	t.Parallel()
	// One job, two targets naming node1 (the node-exporter pod was replaced and its endpoint label changed): both
	// are used, with a note.
	ne := NodeCandidates{Source: NodeSeriesNodeExporter, Groups: []NodeGroup{
		group(10, "job", "node-exporter", "instance", "10.0.0.1:9100", "endpoint", "metrics"),
		group(4, "job", "node-exporter", "instance", "10.0.0.1:9100", "endpoint", "http-metrics"),
	}}
	picks, notes := chooseNodeSeries(testNodes[:1], []NodeCandidates{ne})
	if len(picks) != 1 || len(picks[0].Selectors()) != 2 || len(notes) != 1 || !strings.Contains(notes[0], "counted together") {
		t.Errorf("picks %+v notes %q", picks, notes)
	}
	if picks[0].MaxSamples() != 10 {
		t.Errorf("max samples %d", picks[0].MaxSamples())
	}
}

func TestNodeParams(t *testing.T) {
	t.Parallel()
	base := Params{Rate: 4 * time.Second, Window: 30 * time.Second, Step: time.Second}
	if p, note := nodeParams(base, 34*time.Second, 34); note != "" || p.Rate != base.Rate || p.Step != base.Step {
		t.Errorf("samples at the step: %+v %q, want unchanged", p, note)
	}
	if p, note := nodeParams(base, 34*time.Second, 0); note != "" || p.Rate != base.Rate || p.Step != base.Step {
		t.Errorf("no samples: %+v %q", p, note)
	}
	p, note := nodeParams(base, 34*time.Second, 12) // about 2.8 s apart
	if p.Step != 3*time.Second || p.Rate != 12*time.Second || p.Window != 30*time.Second {
		t.Errorf("sparse samples: %+v", p)
	}
	if !strings.Contains(note, "rates over 12s at steps of 3s") || strings.Contains(note, "longer than") {
		t.Errorf("note %q", note)
	}
	short := base
	short.Window = 5 * time.Second
	if p, note := nodeParams(short, 9*time.Second, 3); p.Rate != 12*time.Second || !strings.Contains(note, "longer than the 5s window: the CPU figures cover the 12s up to its end") {
		t.Errorf("short window: %+v %q, want the 12s rate range said to cover more than the window", p, note)
	}
}

func TestExpandSel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tmpl, inner, want string }{
		{`m{id="/",$match}`, `job="k"`, `m{id="/",job="k"}`},
		{`m{id="/",$match}`, ``, `m{id="/"}`},
		{`m$sel`, `job="k"`, `m{job="k"}`},
		{`m$sel`, ``, `m`},
	} {
		if got := expandSel(tc.tmpl, tc.inner); got != tc.want {
			t.Errorf("expandSel(%q, %q) = %q, want %q", tc.tmpl, tc.inner, got, tc.want)
		}
	}
}

func TestGroupsOf(t *testing.T) {
	t.Parallel()
	v := model.Vector{
		{Metric: model.Metric{"job": "b", "instance": "node3"}, Value: 7},
		{Metric: model.Metric{"job": "a", "instance": "node1", "cpu": "ignored"}, Value: 30},
	}
	got := groupsOf(v)
	if len(got) != 2 || got[0].Labels["job"] != "a" || got[0].Samples != 30 || got[0].Labels["cpu"] != "" || len(got[0].Labels) != 2 {
		t.Errorf("groupsOf = %+v", got)
	}
}

func TestPodSetsTestNodes(t *testing.T) {
	t.Parallel()
	app := map[string]string{"meshbench.dev/app": "fortio-chain"}
	lg := map[string]string{"meshbench.dev/component": "loadgen"}
	on := func(p *corev1.Pod, node string) *corev1.Pod { p.Spec.NodeName = node; return p }
	mkNode := func(name, ip string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	}
	oneHost := func(n *corev1.Node) *corev1.Node {
		n.Status.NodeInfo.MachineID, n.Status.NodeInfo.BootID = "4c1f0e9d2b7a4e6f", "b0071d00-0001"
		return n
	}
	kube := fake.NewClientset(
		// node-a is not readable; node-b and node-c run on one host (the local cluster's case)
		oneHost(mkNode("node-b", "10.0.0.2")), oneHost(mkNode("node-c", "10.0.0.3")), mkNode("node-d", "10.0.0.4"),
		on(pod("mb", "svc-0", app, []string{"app"}, nil, corev1.PodRunning), "node-b"),
		on(pod("mb", "svc-1", app, []string{"app"}, nil, corev1.PodRunning), "node-a"),
		on(pod("mb", "svc-old", app, []string{"app"}, nil, corev1.PodFailed), "node-d"), // ended: not a test node
		on(pod("mb", "loadgen-0", lg, []string{"loadgen"}, nil, corev1.PodRunning), "node-b"),
		on(pod("mb", "waypoint-1", map[string]string{"gateway.networking.k8s.io/gateway-name": "waypoint"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node-c"),
		on(pod("istio-system", "ztunnel-d", map[string]string{"app": "ztunnel"}, []string{"istio-proxy"}, nil, corev1.PodRunning), "node-d"), // every node has one
		// not scheduled yet: no node
		pod("mb", "svc-2", app, []string{"app"}, nil, corev1.PodPending),
	)
	sets, err := PodSets(context.Background(), KubePods{Kube: kube}, Scope{AppNamespaces: []string{"mb"}, AppSelector: "meshbench.dev/app=fortio-chain",
		LoadgenSelector: "meshbench.dev/component=loadgen", Node: true, Mesh: MeshScope{NodeAgents: true, Waypoints: []NamespacedName{{Namespace: "mb", Name: "waypoint"}}}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sets, func(s podset.PodSet) bool { return s.Component == results.ComponentNode })
	if i < 0 {
		t.Fatalf("no node set in %+v", sets)
	}
	node := sets[i]
	want := []podset.NodeRef{{Name: "node-a"}, {Name: "node-b", Addresses: []string{"10.0.0.2"}}, {Name: "node-c", Addresses: []string{"10.0.0.3"}}}
	if !slices.EqualFunc(node.Nodes, want, func(a, b podset.NodeRef) bool { return a.Name == b.Name && slices.Equal(a.Addresses, b.Addresses) }) {
		t.Errorf("test nodes %+v, want %+v", node.Nodes, want)
	}
	if len(node.Notes) != 2 || !strings.Contains(node.Notes[0], `node node-a: get node "node-a"`) ||
		node.Notes[1] != "node figures of node-b and node-c are the same machine's (machineID 4c1f0e9d…, bootID b0071d00…): whole-node totals count it once" {
		t.Errorf("notes %q: want one for the unreadable node and one for the shared host", node.Notes)
	}
	if node.Selector() != "" {
		t.Errorf("a node set has no pod selector: %q", node.Selector())
	}
}
