// Package hbonenode is a TEST DOUBLE for ztunnel (Rust, not buildable here), never shipped: the "Go HBONE node
// proxy (test double; not ztunnel's cost)". It runs in Istio's own ztunnel DaemonSet and does what ztunnel does for
// the paths meshbench measures (ZDS, certificates from istiod's CA, workload discovery, HBONE out and in, RBAC),
// with Istio's own Go pieces from the pinned module. What each file does and where it deviates from ztunnel:
// hack/localistio/README.md, "The Go HBONE node proxy".
package hbonenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	cniconfig "istio.io/istio/cni/pkg/config"
	"istio.io/istio/pkg/hbone"
	"istio.io/istio/pkg/spiffe"
)

// ownPorts are the node proxy's in-pod ports: no connection may target them (ztunnel's illegal_ports).
var ownPorts = map[uint16]bool{
	cniconfig.ZtunnelOutboundPort: true, cniconfig.ZtunnelInboundPlaintextPort: true, cniconfig.ZtunnelInboundPort: true,
}

// workloadView is what the node reads of workload discovery (*WDS).
type workloadView interface {
	Read(func(*Tables))
	Await(ctx context.Context, cond func(*Tables) bool) error
}

// upstreamDialer connects to an address on the pod's behalf (NetnsDialer in a pod; a plain dialer in tests).
type upstreamDialer interface {
	DialContext(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
}

// Node is the node proxy: the enrolled pods of one node and what they share.
type Node struct {
	TrustDomain string
	// CertWait bounds how long a connection waits for its pod's first certificate or workload entry (fail closed).
	CertWait time.Duration
	// DialTimeout bounds every upstream connect (pkg/hbone's Dialer ignores its context: wrapped).
	DialTimeout time.Duration

	log     *slog.Logger
	metrics *Metrics
	certs   *Certs
	trust   *Trust
	wds     workloadView
	ctx     context.Context

	mu      sync.Mutex
	pods    map[string]*enrolled
	dialers map[dialerKey]hbone.Dialer
	rr      atomic.Uint32
}

// NewNode returns a node proxy with no pods; ctx bounds everything it starts.
func NewNode(ctx context.Context, td string, certs *Certs, trust *Trust, wds workloadView, m *Metrics, log *slog.Logger) *Node {
	return &Node{TrustDomain: td, CertWait: 10 * time.Second, DialTimeout: 10 * time.Second,
		log: log, metrics: m, certs: certs, trust: trust, wds: wds, ctx: ctx,
		pods: map[string]*enrolled{}, dialers: map[dialerKey]hbone.Dialer{}}
}

// enrolled is one pod the istio-cni agent handed over.
type enrolled struct {
	PodInfo
	identity string
	deliver  upstreamDialer
	closers  []io.Closer
	netnsFd  int // -1 when none is owned (tests)
}

func (p *enrolled) close() {
	for _, c := range p.closers {
		c.Close()
	}
	if p.netnsFd >= 0 {
		unix.Close(p.netnsFd)
	}
}

// podIdentity is the SPIFFE identity of a pod of service account sa in namespace ns.
func (n *Node) podIdentity(ns, sa string) string {
	if sa == "" {
		sa = "default"
	}
	return spiffe.Identity{TrustDomain: n.TrustDomain, Namespace: ns, ServiceAccount: sa}.String()
}

// AddPod listens on 15001, 15006 and 15008 inside the pod's netns and requests its identity's certificate. A pod
// added again (the agent's snapshot after a reconnect) keeps its listeners.
func (n *Node) AddPod(info PodInfo, netnsFd int) error {
	n.mu.Lock()
	_, known := n.pods[info.UID]
	n.mu.Unlock()
	if known {
		unix.Close(netnsFd)
		return nil
	}
	p := &enrolled{PodInfo: info, identity: n.podIdentity(info.Namespace, info.ServiceAccount),
		deliver: NetnsDialer{Fd: netnsFd, Timeout: n.DialTimeout}, netnsFd: netnsFd}
	lns := map[int]net.Listener{}
	for _, port := range []int{cniconfig.ZtunnelOutboundPort, cniconfig.ZtunnelInboundPlaintextPort, cniconfig.ZtunnelInboundPort} {
		ln, err := listenIn(netnsFd, port)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			unix.Close(netnsFd)
			return fmt.Errorf("listen on %d in the netns of %s/%s: %w", port, info.Namespace, info.Name, err)
		}
		lns[port] = ln
	}
	n.startPod(p, lns[cniconfig.ZtunnelOutboundPort], lns[cniconfig.ZtunnelInboundPlaintextPort], lns[cniconfig.ZtunnelInboundPort])
	return nil
}

// startPod registers p and serves its three listeners (any may be nil).
func (n *Node) startPod(p *enrolled, outbound, plaintext, hboneLn net.Listener) {
	n.certs.Acquire(n.ctx, p.identity)
	if outbound != nil {
		p.closers = append(p.closers, outbound)
		go n.acceptLoop(outbound, func(c net.Conn) { n.handleOutbound(p, c) })
	}
	if plaintext != nil {
		p.closers = append(p.closers, plaintext)
		go n.acceptLoop(plaintext, func(c net.Conn) { n.handlePlaintextInbound(p, c) })
	}
	if hboneLn != nil {
		srv := n.hboneServer(p)
		p.closers = append(p.closers, srv)
		go func() {
			if err := srv.ServeTLS(hboneLn, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.log.Warn("HBONE server ended", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
		}()
	}
	n.mu.Lock()
	n.pods[p.UID] = p
	n.metrics.workloads.Set(float64(len(n.pods)))
	n.mu.Unlock()
}

// DelPod stops serving the pod and releases its certificate.
func (n *Node) DelPod(uid string) {
	n.mu.Lock()
	p := n.pods[uid]
	delete(n.pods, uid)
	n.metrics.workloads.Set(float64(len(n.pods)))
	n.mu.Unlock()
	if p == nil {
		return
	}
	p.close()
	n.certs.Release(p.identity)
	n.dropDialers(p.identity)
}

// KeepOnly drops every pod not in uids.
func (n *Node) KeepOnly(uids map[string]bool) {
	n.mu.Lock()
	var gone []string
	for uid := range n.pods {
		if !uids[uid] {
			gone = append(gone, uid)
		}
	}
	n.mu.Unlock()
	for _, uid := range gone {
		n.log.Info("pod not in the agent's snapshot: dropped", "uid", uid)
		n.DelPod(uid)
	}
}

func (n *Node) acceptLoop(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go handle(c)
	}
}

// relay copies both ways until the upstream direction ends. A half-close is passed on where the other side can
// take one (TCP); the HBONE client side (a net.Pipe) cannot, so the downstream's FIN closes the tunnel there.
func (n *Node) relay(down, up net.Conn, toUp, toDown Direction) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		k, _ := io.Copy(up, down)
		n.metrics.copied(toUp, k)
		if !closeWrite(up) {
			up.Close()
		}
	}()
	k, _ := io.Copy(down, up)
	n.metrics.copied(toDown, k)
	closeWrite(down)
	<-done
	down.Close()
	up.Close()
}

func closeWrite(c net.Conn) bool {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite() == nil
	}
	return false
}
