package scenario

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateCNI checks spec.cni, the pod network benchmark (only when the section is present).
func validateCNI(c *collector, p *field.Path, n CNI) {
	hasUDP := false
	for i, t := range n.Tests {
		c.oneOf(p.Child("tests").Index(i), string(t), strs(AllCNITests))
		hasUDP = hasUDP || t == CNITestUDP
	}
	for _, i := range dups(n.Tests) {
		c.add(p.Child("tests").Index(i), "lists %q twice", n.Tests[i])
	}
	for i, pa := range n.Paths {
		c.oneOf(p.Child("paths").Index(i), string(pa), strs(AllCNIPaths))
	}
	for _, i := range dups(n.Paths) {
		c.add(p.Child("paths").Index(i), "lists %q twice", n.Paths[i])
	}
	if n.Duration.Duration < time.Second {
		c.add(p.Child("duration"), "must be >= 1s (got %s)", n.Duration)
	}
	c.intRange(p.Child("samples"), n.Samples, 1, 100, "use >= 3 for confidence intervals")
	c.intRange(p.Child("streams"), n.Streams, 1, 128, "")
	if n.Omit.Duration < 0 || (n.Duration.Duration > 0 && n.Omit.Duration >= n.Duration.Duration) {
		c.add(p.Child("omit"), "must be >= 0 and shorter than cni.duration (got %s)", n.Omit)
	}
	switch {
	case hasUDP && n.UDPBitrate == "":
		c.add(p.Child("udpBitrate"), "is required with the udp test: set a target such as \"1G\" or \"0\" (unlimited); iperf3's silent 1 Mbit/s default is not a measurement")
	case n.UDPBitrate != "":
		if _, err := ParseBitrate(n.UDPBitrate); err != nil {
			c.add(p.Child("udpBitrate"), "%v", err)
		}
	}
	c.intRange(p.Child("udpPacketBytes"), n.UDPPacketBytes, 0, 65507, "")
	c.intRange(p.Child("requestBytes"), n.RequestBytes, 1, 1<<20, "")
	c.intRange(p.Child("responseBytes"), n.ResponseBytes, 1, 1<<20, "")
	c.oneOf(p.Child("rrTool"), string(n.RRTool), []string{string(RRToolAuto), string(RRToolNetperf), string(RRToolBuiltin)})
	pl := n.Placement
	for _, nd := range []struct{ name, v string }{{"clientNode", pl.ClientNode}, {"serverNode", pl.ServerNode}} {
		if nd.v != "" && len(validation.IsDNS1123Subdomain(nd.v)) > 0 {
			c.add(p.Child("placement", nd.name), "must be a node name as kubectl get nodes shows it: lower-case letters, digits, '-' and '.' (got %q)", nd.v)
		}
	}
	if pl.ClientNode != "" && pl.ClientNode == pl.ServerNode {
		c.add(p.Child("placement", "serverNode"), "must differ from clientNode (%q): cross-node paths need two nodes", pl.ClientNode)
	}
}
