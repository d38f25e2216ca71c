package podset

import (
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/results"
)

// Collected is what one window gave.
type Collected struct {
	// Window is the whole-second window that was queried (inside the measured one).
	Window   results.Window
	Samples  []results.Sample
	Warnings []string
	// IngestWait is how long the collection waited, before its first query, for Prometheus to have ingested the
	// window's last scrapes (collectors/prom's ReadyAt): the protocol's wait, not the queries' time.
	IngestWait time.Duration
}

// NodeNotCollected starts the warning for a test node no source identifies (the rest says why, per source).
const NodeNotCollected = "node CPU and memory of node "

// PodSet is the pods of one component, found through the Kubernetes API.
type PodSet struct {
	Component results.Component
	// Pods maps namespace -> pod names.
	Pods map[string][]string
	// Container is an extra container matcher (e.g. container="istio-proxy"), or "".
	Container string
	// Nodes, for the whole-node component (ComponentNode), are the test nodes: each is measured on its own, from
	// the series that identify it (see NodeSet); Pods is unused then.
	Nodes []NodeRef
	// Notes are problems met while building the set (e.g. a node that could not be read); the collectors pass
	// them on as warnings.
	Notes []string
	// Allocation is what the set's containers asked for, read from the same pod objects as Pods (nil when the set
	// was not built from pod specs, e.g. the node set).
	Allocation *Allocation
	// Workloads maps PodKey to the pod's workload (results.WorkloadKey) for the app and sidecar sets when the scope
	// names the app's workloads (nil otherwise); the collectors add per-workload figures from the same series.
	Workloads map[string]string
	// Required sets must give their CPU and memory averages: without them the case is not measured (the app, its
	// sidecars, the ztunnels of ambient modes, the waypoints: a waypoint case without waypoint figures would pass for
	// ambient, a case without the app's CPU for a measured one).
	Required bool
}

// PodKey is the key of a pod in PodSet.Workloads.
func PodKey(namespace, pod string) string { return namespace + "/" + pod }

// WorkloadKeys are the distinct workloads of Workloads, sorted.
func (s PodSet) WorkloadKeys() []string {
	keys := slices.Collect(maps.Values(s.Workloads))
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Empty reports whether the set matches nothing.
func (s PodSet) Empty() bool {
	if s.Component == results.ComponentNode {
		return len(s.Nodes) == 0
	}
	for _, pods := range s.Pods {
		if len(pods) > 0 {
			return false
		}
	}
	return true
}

// PodCount is the number of pods in the set.
func (s PodSet) PodCount() int {
	n := 0
	for _, pods := range s.Pods {
		n += len(pods)
	}
	return n
}

// Selector renders the set's one label selector across its namespaces ("" for the node set): namespace, pod=~ the
// sorted escaped names, container!="",container!="POD", the set's container matcher and extra. It may match a same-
// named pod in another namespace, which the caller drops. It is pure and deterministic (docs/measurement.md).
func (s PodSet) Selector(extra ...string) string {
	var nss, pods []string
	for _, ns := range slices.Sorted(maps.Keys(s.Pods)) {
		if len(s.Pods[ns]) > 0 {
			nss = append(nss, ns)
			pods = append(pods, s.Pods[ns]...)
		}
	}
	if len(nss) == 0 {
		return ""
	}
	slices.Sort(pods)
	pods = slices.Compact(pods)
	m := []string{"namespace=" + strconv.Quote(nss[0])}
	if len(nss) > 1 {
		m[0] = "namespace=~" + strconv.Quote(alternation(nss))
	}
	m = append(m, "pod=~"+strconv.Quote(alternation(pods)), `container!=""`, `container!="POD"`)
	if s.Container != "" {
		m = append(m, s.Container)
	}
	m = append(m, extra...)
	return "{" + strings.Join(m, ",") + "}"
}

// alternation is a regular expression matching exactly the given names (a plain alternation of escaped literals,
// which Prometheus turns into a lookup of each value rather than a scan of every value of the label).
func alternation(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(regexp.QuoteMeta(n))
	}
	return b.String()
}

// NodeSet is the whole-node component of the given test nodes (the nodes the measured pods run on). Each node is
// measured on its own from a series that identifies it (collectors/prom chooses it); there is no "every node" set:
// a cluster-wide sum would add nodes the test never touched.
func NodeSet(nodes ...NodeRef) PodSet {
	return PodSet{Component: results.ComponentNode, Nodes: nodes}
}

// NodeRef is a test node as the Kubernetes API describes it: the names scrape labels may call it by.
type NodeRef struct {
	Name string
	// Addresses are the node's status addresses, InternalIP first: targets found through Endpoints (the kubelet
	// Service prometheus-operator maintains, hostNetwork node-exporter pods) carry one as instance="IP:port".
	Addresses []string
	// Hostname is the node's kubernetes.io/hostname label (a labelmap of node labels makes it
	// kubernetes_io_hostname).
	Hostname string
	// MachineID and BootID are the node's status.nodeInfo.machineID and .bootID: nodes with both equal run on one host
	// (results.HostGroups), so their whole-node figures are one machine's (SharedHostNotes).
	MachineID, BootID string
}

// Facts is the part of the node's facts that HostGroups reads (name, machine and boot ID).
func (r NodeRef) Facts() results.NodeFacts {
	return results.NodeFacts{Name: r.Name, MachineID: r.MachineID, BootID: r.BootID}
}

// SharedHostNotes are the warnings of a node set whose nodes share a host (results.SharedHostNotes): the collectors
// pass a set's Notes on, so every case measuring such nodes says so in its facts.
func SharedHostNotes(nodes []NodeRef) []string {
	facts := make([]results.NodeFacts, len(nodes))
	for i, n := range nodes {
		facts[i] = n.Facts()
	}
	return results.SharedHostNotes(facts)
}

// NodeRefOf describes a node object. It is pure.
func NodeRefOf(n *corev1.Node) NodeRef {
	r := NodeRef{Name: n.Name, Hostname: n.Labels[corev1.LabelHostname], MachineID: n.Status.NodeInfo.MachineID, BootID: n.Status.NodeInfo.BootID}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && a.Address != "" && !slices.Contains(r.Addresses, a.Address) {
				r.Addresses = append(r.Addresses, a.Address)
			}
		}
	}
	return r
}

// IdentifiedBy reports whether a series' labels name this node: a node label alone, else instance's host as its name
// or an address, or nodename / kubernetes_io_hostname (docs/measurement.md). It is pure.
func (r NodeRef) IdentifiedBy(labels map[string]string) bool {
	if n := labels["node"]; n != "" {
		return n == r.Name
	}
	if inst := labels["instance"]; inst != "" && r.named(hostOf(inst)) {
		return true
	}
	for _, k := range []string{"nodename", "kubernetes_io_hostname"} {
		if v := labels[k]; v != "" && (v == r.Name || v == r.Hostname) {
			return true
		}
	}
	return false
}

func (r NodeRef) named(h string) bool {
	if h == r.Name || (r.Hostname != "" && h == r.Hostname) {
		return true
	}
	for _, a := range r.Addresses {
		if sameHost(a, h) {
			return true
		}
	}
	return false
}

func (r NodeRef) Describe() string {
	s := "name " + r.Name
	if len(r.Addresses) > 0 {
		s += ", addresses " + strings.Join(r.Addresses, " ")
	}
	if r.Hostname != "" && r.Hostname != r.Name {
		s += ", hostname " + r.Hostname
	}
	return s
}

// hostOf is the host part of an instance label: "10.0.0.5:10250" -> 10.0.0.5, "[fd00::1]:9100" -> fd00::1,
// "node1" -> node1.
func hostOf(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return strings.Trim(instance, "[]")
}

func sameHost(a, b string) bool {
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)
	if errA == nil && errB == nil {
		return pa.Unmap() == pb.Unmap()
	}
	return a == b
}

// Allocation is the requests and limits of a set's containers as the pods' specs had them: the regular containers
// the set measures and the native sidecars (init containers with restartPolicy Always, which run as long as the
// pod). One-shot init containers are not counted: they have ended before a window starts.
type Allocation struct {
	Pods       int
	Containers int
	// CPURequest (millicores) and MemoryRequest (MiB) are the sums of the containers' requests; a container without
	// a request adds 0 (the scheduler reserves nothing for it; Kubernetes defaults a missing request to the limit,
	// which the API server has already written into the spec).
	CPURequest, MemoryRequest float64
	// CPULimit and MemoryLimit are the sums of the limits that are set; CPUNoLimit and MemoryNoLimit count the
	// containers without one (then the component as a whole has no limit).
	CPULimit, MemoryLimit     float64
	CPUNoLimit, MemoryNoLimit int
}
