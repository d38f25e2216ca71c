package workloads

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/scenario"
)

// fortio-chain ports: meshbench-agent serve's defaults.
const (
	chainHTTPPort = 8080
	chainEchoPort = 8078 // TCP and UDP echo
)

// chainName is the Service name of node i of the chain; node 0 is the entry.
func chainName(i int) string { return "chain-" + strconv.Itoa(i) }

// chainChildren returns the children of node i in a chain of n nodes with fan-out f, numbered breadth-first
// (heap order: the children of i are f*i+1 .. f*i+f).
func chainChildren(i, n, f int) []int {
	var out []int
	for c := f*i + 1; c <= f*i+f && c < n; c++ {
		out = append(out, c)
	}
	return out
}

func (b *builder) fortioChain() error {
	ch := b.s.Spec.Workload.ChainFor(b.topo) // the topology's chainDepth, when set, replaces the workload's depth
	if ch == nil {
		return fmt.Errorf("fortio-chain: spec.workload.chain is not set (scenario defaults not applied?)")
	}
	if ch.Depth < 0 || ch.FanOut < 1 {
		return fmt.Errorf("fortio-chain: depth %d and fanOut %d: need depth >= 0 and fanOut >= 1", ch.Depth, ch.FanOut)
	}
	n := ch.Services()
	names := make([]string, n)
	for i := range names {
		names[i] = chainName(i)
	}
	p := newPlacement(b.s.Spec.Workload, b.topo, names)
	b.namespaces(p.namespaces)
	cpuReq, memReq := "50m", "32Mi"
	if b.s.Spec.Profile == scenario.ProfileLocalCluster {
		cpuReq, memReq = "5m", "16Mi" // the local cluster has 2 CPUs for everything
	}
	for i, name := range names {
		ns := p.ns(name)
		b.serviceAccount(ns, name)
		udp := corev1.ServicePort{Name: "udp-echo", Port: chainEchoPort, TargetPort: tcpPort("", chainEchoPort).TargetPort, Protocol: corev1.ProtocolUDP}
		b.service(ns, name, httpPort("http", chainHTTPPort, chainHTTPPort), tcpPort("tcp-echo", chainEchoPort), udp)
		args := []string{"serve", "--http-port", strconv.Itoa(chainHTTPPort), "--tcp-port", strconv.Itoa(chainEchoPort), "--udp-port", strconv.Itoa(chainEchoPort)}
		children := chainChildren(i, n, ch.FanOut)
		probe := httpProbe("/", chainHTTPPort, 0, 2, 1, 3)
		if len(children) > 0 {
			urls := make([]string, len(children))
			for j, c := range children {
				urls[j] = "http://" + p.addr(chainName(c), chainHTTPPort)
			}
			args = append(args, "--forward", strings.Join(urls, ","))
			if ch.Serial {
				args = append(args, "--serial")
			}
			// A forwarding node answers every path by calling its children: probe the socket so that readiness
			// does not cascade down the chain.
			probe = tcpProbe(chainHTTPPort, 2)
		}
		tmp, tmpMount := tmpVolume()
		b.deployment(ns, name, corev1.PodSpec{
			SecurityContext: podSecurity(65532),
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           b.s.Spec.Images.Agent,
				ImagePullPolicy: b.pullPolicy(),
				Args:            args,
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: chainHTTPPort, Protocol: corev1.ProtocolTCP},
					{Name: "tcp-echo", ContainerPort: chainEchoPort, Protocol: corev1.ProtocolTCP},
					{Name: "udp-echo", ContainerPort: chainEchoPort, Protocol: corev1.ProtocolUDP},
				},
				ReadinessProbe:  probe,
				Resources:       b.resources(cpuReq, memReq, "1", "256Mi"),
				SecurityContext: containerSecurity(true),
				VolumeMounts:    []corev1.VolumeMount{tmpMount},
			}},
			Volumes: []corev1.Volume{tmp},
		})
	}
	b.target.EntryService = chainName(0)
	b.target.EntryNamespace = p.ns(chainName(0))
	path := b.s.Spec.Load.Path
	if path == "" {
		path = "/"
	}
	if ch.PayloadBytes > 0 {
		path = withQuery(path, "size="+strconv.Itoa(ch.PayloadBytes))
	}
	b.target.EntryURL = "http://" + p.fqdn(chainName(0)) + ":" + strconv.Itoa(chainHTTPPort) + path
	return nil
}
