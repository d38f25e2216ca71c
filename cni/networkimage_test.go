package cni_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/scenario"
)

// Issue 29 section 1 item 7: the network image's tag (the default's :latest) moves. The client pod's node resolves
// it; every later test pod runs that digest, and the report (run.json's networkImage) records it with the tools'
// versions. Before, every pod resolved the tag itself and nothing recorded what ran.
func TestNetworkImagePinnedAndRecorded(t *testing.T) {
	t.Parallel()
	kc := fakeClusterWith(t, func(p *corev1.Pod) {
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				ImageID: "quay.io/cloud-bulldozer/k8s-netperf@" + cni.TestDigest, Ready: true})
		}
	}, cni.Node("node1"), cni.Node("node2"))
	var images []string
	kc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			images = append(images, p.Name+"/"+c.Name+"="+c.Image)
		}
		return false, nil, nil
	})
	cfg := testConfig(t)
	cfg.Images.Network = "quay.io/cloud-bulldozer/k8s-netperf:latest"
	cfg.CNI.Paths, cfg.CNI.Tests, cfg.CNI.Samples = []scenario.CNIPath{scenario.CNIPathSameNode, scenario.CNIPathHost}, []scenario.CNITest{scenario.CNITestTCP}, 1
	rep, err := Run(context.Background(), cfg, deps{Kube: kc, Exec: &fakeExec{}, Store: &fakeStore{}, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	pinned := "quay.io/cloud-bulldozer/k8s-netperf@" + cni.TestDigest
	var first, later []string
	for _, im := range images {
		if !strings.Contains(im, "k8s-netperf") {
			continue // the agent image
		}
		if strings.HasPrefix(im, string(cni.RoleClient)+"/") {
			first = append(first, im)
		} else {
			later = append(later, im)
		}
	}
	if len(first) == 0 || len(later) == 0 {
		t.Fatalf("network image containers: client %v, others %v", first, later)
	}
	for _, im := range later {
		if !strings.HasSuffix(im, "="+pinned) {
			t.Errorf("%s: a pod after the client must run the digest the client's node resolved (%s)", im, pinned)
		}
	}
	ni := rep.NetworkImage
	if ni == nil || ni.Ref != cfg.Images.Network || ni.Digest != cni.TestDigest || ni.Pinned != pinned || ni.Iperf3 != "3.12" || ni.Netperf != "" {
		t.Errorf("recorded network image %+v", ni)
	}
	if slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "not pinned") }) {
		t.Errorf("notes %v", rep.Notes)
	}
	var b strings.Builder
	b.WriteString(rep.Table())
	if !strings.Contains(b.String(), "network image: quay.io/cloud-bulldozer/k8s-netperf:latest ran as "+pinned+"; iperf3 3.12, netperf -") {
		t.Errorf("table lacks the network image line:\n%s", b.String())
	}
}
