package cni

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/results"
)

// listening reports whether /proc/net/tcp or /proc/net/tcp6 content has a socket in LISTEN state on port. It is
// how the run waits for iperf3 servers without connecting to them (a stray connection can wedge iperf3 3.12).
func listening(procNetTCP string, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, l := range strings.Split(procNetTCP, "\n") {
		f := strings.Fields(l)
		// sl local_address rem_address st ...
		if len(f) < 4 || f[0] == "sl" {
			continue
		}
		if strings.HasSuffix(strings.ToUpper(f[1]), want) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// defaultRouteInterface is the interface of the default IPv4 route in /proc/net/route content ("" if none): the
// node's main interface, seen from a hostNetwork pod.
func defaultRouteInterface(procNetRoute string) string {
	for _, l := range strings.Split(procNetRoute, "\n") {
		f := strings.Fields(l)
		// Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT
		if len(f) >= 8 && f[0] != "Iface" && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return ""
}

// routeInterface is the interface /proc/net/route content sends dst (an IPv4 address) through: the most specific
// matching route, the default route last ("" if none). From a hostNetwork pod it is the node interface that
// carries traffic to the other node, whose MTU matters for cross-node paths.
func routeInterface(procNetRoute, dst string) string {
	ip, err := netip.ParseAddr(strings.TrimSpace(dst))
	if err != nil || !ip.Is4() {
		return ""
	}
	d := ip.As4()
	target := uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24 // /proc/net/route is little-endian hex
	best, bestBits := "", -1
	for _, l := range strings.Split(procNetRoute, "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || f[0] == "Iface" {
			continue
		}
		dest, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil || uint32(dest)&uint32(mask) != target&uint32(mask) {
			continue
		}
		if bits := popcount(uint32(mask)); bits > bestBits {
			best, bestBits = f[0], bits
		}
	}
	return best
}

func popcount(v uint32) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

// validInterfaceName guards the interface name before it is used in a path inside the pod.
func validInterfaceName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if r == '/' || r <= ' ' || r > '~' {
			return false
		}
	}
	return true
}

// parseMTU reads /sys/class/net/<if>/mtu.
func parseMTU(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 68 || v > 1<<20 {
		return 0, fmt.Errorf("not an MTU: %q", strings.TrimSpace(s))
	}
	return v, nil
}

// knownCNIs maps a DaemonSet name fragment to the CNI it belongs to, most specific first.
var knownCNIs = []struct{ fragment, cni string }{
	{"canal", "canal"}, {"calico-node", "calico"}, {"cilium", "cilium"}, {"flannel", "flannel"},
	{"weave-net", "weave"}, {"antrea-agent", "antrea"}, {"kube-router", "kube-router"}, {"kube-ovn-cni", "kube-ovn"},
	{"ovnkube-node", "ovn-kubernetes"}, {"aws-node", "aws-vpc-cni"}, {"azure-cni", "azure-cni"}, {"kindnet", "kindnet"},
}

// knownCNIAnnotations are node annotations some CNIs set.
var knownCNIAnnotations = []struct{ prefix, cni string }{
	{"projectcalico.org/", "calico"}, {"io.cilium.", "cilium"}, {"network.cilium.io/", "cilium"},
	{"flannel.alpha.coreos.com/", "flannel"}, {"kube-router.io/", "kube-router"}, {"ovn.kubernetes.io/", "kube-ovn"},
	{"k8s.ovn.org/", "ovn-kubernetes"},
}

// detectCNI names the CNI from DaemonSet names and node annotations, and says how it knows; ("", reason) when
// nothing matches (e.g. a CNI configured statically on each node, like the local test cluster's bridge plugin).
// It is pure and reads nothing from the nodes' file systems.
func detectCNI(daemonSets []appsv1.DaemonSet, nodes []corev1.Node) (cni, how string) {
	var found []string
	for _, k := range knownCNIs {
		for _, ds := range daemonSets {
			if strings.Contains(ds.Name, k.fragment) && !slices.Contains(found, k.cni) {
				found = append(found, k.cni)
				how = fmt.Sprintf("DaemonSet %s/%s", ds.Namespace, ds.Name)
			}
		}
	}
	if len(found) == 0 {
		for _, n := range nodes {
			for a := range n.Annotations {
				for _, k := range knownCNIAnnotations {
					if strings.HasPrefix(a, k.prefix) && !slices.Contains(found, k.cni) {
						found = append(found, k.cni)
						how = "node annotation " + a
					}
				}
			}
		}
	}
	switch len(found) {
	case 0:
		return "", "no known CNI DaemonSet or node annotation (a CNI configured statically on the nodes?)"
	case 1:
		return found[0], how
	default:
		slices.Sort(found)
		return strings.Join(found, "+"), "several CNIs detected"
	}
}

// nodeFacts describes a node for run.json.
func nodeFacts(n *corev1.Node) results.NodeFacts {
	f := results.NodeFacts{
		Name: n.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion, KernelVersion: n.Status.NodeInfo.KernelVersion,
		OSImage: n.Status.NodeInfo.OSImage, ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion,
		MachineID: n.Status.NodeInfo.MachineID, BootID: n.Status.NodeInfo.BootID,
	}
	if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
		f.CPU = q.String()
	}
	if q, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok {
		f.Memory = q.String()
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && f.InternalIP == "" {
			f.InternalIP = a.Address
		}
	}
	return f
}
