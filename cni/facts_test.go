package cni

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Captured from a pod on the local cluster (cat /proc/net/tcp /proc/net/tcp6) with iperf3 -s -p 5201 and the agent's
// echo server on 8078, plus one established connection.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0E00F40A:1F9E 0E00F40A:C5D6 01 00000000:00000000 00:00000000 00000000 65532        0 123 1 0000000000000000 20 4 30 10 -1
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1451 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 65532        0 9876 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 65532        0 9877 1 0000000000000000 100 0 0 10 0
`

func TestListening(t *testing.T) {
	t.Parallel()
	for port, want := range map[int]bool{5201: true, 8080: true, 8078: false /* established, not listening */, 4444: false} {
		if got := listening(procNetTCP, port); got != want {
			t.Errorf("Listening(%d) = %v, want %v", port, got, want)
		}
	}
}

// /proc/net/route of node1 of the local cluster (the host network namespace), captured as is.
const procNetRoute = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	010200C0	0003	0	0	0	00000000	0	0	0
mbcni0	0000F40A	00000000	0001	0	0	0	00FFFFFF	0	0	0
mbnode2	0001F40A	02001EAC	0003	0	0	0	00FFFFFF	0	0	0
mbnode2	00001EAC	00000000	0001	0	0	0	00FFFFFF	0	0	0
eth0	000200C0	00000000	0001	0	0	0	00FFFFFF	0	0	0
`

func TestRouteInterface(t *testing.T) {
	t.Parallel()
	if got := defaultRouteInterface(procNetRoute); got != "eth0" {
		t.Errorf("default route interface %q", got)
	}
	for dst, want := range map[string]string{"172.30.0.2": "mbnode2", "10.244.0.7": "mbcni0", "10.244.1.9": "mbnode2", "192.0.2.9": "eth0", "8.8.8.8": "eth0", "fd00::1": "", "x": ""} {
		if got := routeInterface(procNetRoute, dst); got != want {
			t.Errorf("RouteInterface(%s) = %q, want %q", dst, got, want)
		}
	}
	if defaultRouteInterface("Iface\tDestination\n") != "" {
		t.Error("default route from an empty table")
	}
}

func TestValidInterfaceNameAndMTU(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"eth0": true, "mbnode2": true, "": false, "..": false, "a/b": false, "a b": false, "averyveryverylongname": false} {
		if validInterfaceName(s) != want {
			t.Errorf("ValidInterfaceName(%q) != %v", s, want)
		}
	}
	if v, err := parseMTU("1450\n"); err != nil || v != 1450 {
		t.Errorf("ParseMTU = %v, %v", v, err)
	}
	for _, s := range []string{"", "abc", "0", "-1"} {
		if _, err := parseMTU(s); err == nil {
			t.Errorf("ParseMTU(%q) accepted", s)
		}
	}
}

func TestDetectCNI(t *testing.T) {
	t.Parallel()
	ds := func(ns, name string) appsv1.DaemonSet {
		return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	annotated := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{"projectcalico.org/IPv4Address": "10.0.0.1/24"}}}
	tests := []struct {
		name string
		dss  []appsv1.DaemonSet
		ns   []corev1.Node
		want string
	}{
		{"cilium", []appsv1.DaemonSet{ds("kube-system", "kube-proxy"), ds("kube-system", "cilium")}, nil, "cilium"},
		{"canal is not calico", []appsv1.DaemonSet{ds("kube-system", "canal")}, nil, "canal"},
		{"flannel", []appsv1.DaemonSet{ds("kube-flannel", "kube-flannel-ds")}, nil, "flannel"},
		{"annotation", nil, []corev1.Node{annotated}, "calico"},
		{"two", []appsv1.DaemonSet{ds("a", "cilium"), ds("b", "kube-flannel-ds")}, nil, "cilium+flannel"},
		{"unknown", []appsv1.DaemonSet{ds("istio-system", "ztunnel")}, nil, ""},
	}
	for _, tt := range tests {
		if got, how := detectCNI(tt.dss, tt.ns); got != tt.want || how == "" {
			t.Errorf("%s: DetectCNI = %q (%s), want %q", tt.name, got, how, tt.want)
		}
	}
}

func TestNodeFactsHostIDs(t *testing.T) {
	t.Parallel()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: corev1.NodeStatus{
		NodeInfo:  corev1.NodeSystemInfo{MachineID: "4c1f0e9d", BootID: "b0071d00", KernelVersion: "6.18.0"},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.30.0.1"}}}}
	f := nodeFacts(n)
	if f.MachineID != "4c1f0e9d" || f.BootID != "b0071d00" || f.KernelVersion != "6.18.0" || f.InternalIP != "172.30.0.1" {
		t.Errorf("NodeFacts = %+v: want status.nodeInfo's machineID and bootID with the rest", f)
	}
}
