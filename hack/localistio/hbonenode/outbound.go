package hbonenode

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"istio.io/istio/pkg/hbone"
)

// handleOutbound serves one connection an enrolled pod opened (REDIRECTed to its 15001): route it, connect the
// next hop, relay.
func (n *Node) handleOutbound(p *enrolled, c net.Conn) {
	defer c.Close()
	dst, err := origDst(c)
	if err != nil {
		n.metrics.outboundConn(ProtocolTCP, ViaNone, ResultError)
		n.log.Warn("outbound: original destination", "pod", p.Namespace+"/"+p.Name, "err", err)
		return
	}
	var d Decision
	n.wds.Read(func(t *Tables) { d, err = Route(t, Source{Namespace: p.Namespace}, dst, n.rr.Add(1)) })
	if err != nil {
		n.metrics.outboundConn(ProtocolTCP, ViaNone, ResultError)
		n.log.Warn("outbound: no route", "pod", p.Namespace+"/"+p.Name, "dst", dst, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.CertWait+n.DialTimeout)
	up, err := n.connect(ctx, p, d)
	cancel()
	if err != nil {
		n.metrics.outboundConn(d.Protocol, d.Via, ResultError)
		n.log.Warn("outbound: connect", "pod", p.Namespace+"/"+p.Name, "dst", dst, "via", d.Via, "next_hop", d.NextHop, "err", err)
		return
	}
	n.metrics.outboundConn(d.Protocol, d.Via, ResultOK)
	n.relay(c, up, DirectionOutbound, DirectionInbound)
}

// connect opens the decided next hop for pod p: an HBONE stream with p's certificate, or plaintext from p's netns.
func (n *Node) connect(ctx context.Context, p *enrolled, d Decision) (net.Conn, error) {
	if d.Protocol != ProtocolHBONE {
		return p.deliver.DialContext(ctx, d.NextHop)
	}
	waitCtx, cancel := context.WithTimeout(ctx, n.CertWait)
	_, err := n.certs.Wait(waitCtx, p.identity)
	cancel()
	if err != nil {
		return nil, err
	}
	return n.dialHBONE(ctx, p.identity, d)
}

// dialHBONE opens one HBONE stream as identity src: CONNECT d.Authority through d.NextHop, which must present one
// of d.SANs. Streams to the same next hop share one HTTP/2 connection per source identity (a pkg/hbone Dialer
// each, as ztunnel pools by source and destination identity).
func (n *Node) dialHBONE(ctx context.Context, src string, d Decision) (net.Conn, error) {
	dl := n.hboneDialer(src, d)
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := dl.DialContext(ctx, "tcp", d.Authority.String())
		ch <- result{c, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, n.DialTimeout)
	defer cancel()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("HBONE CONNECT %s via %s: %w", d.Authority, d.NextHop, r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		go func() { // the Dialer ignores ctx: close what it returns late
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, fmt.Errorf("HBONE CONNECT %s via %s: %w", d.Authority, d.NextHop, context.Cause(ctx))
	}
}

type dialerKey struct {
	src  string
	hop  netip.AddrPort
	sans string
}

func (n *Node) hboneDialer(src string, d Decision) hbone.Dialer {
	k := dialerKey{src: src, hop: d.NextHop, sans: strings.Join(d.SANs, ",")}
	n.mu.Lock()
	defer n.mu.Unlock()
	if dl := n.dialers[k]; dl != nil {
		return dl
	}
	dl := hbone.NewDialer(hbone.Config{
		ProxyAddress: d.NextHop.String(),
		TLS:          clientTLS(n.trust, func() (*tls.Certificate, error) { return n.certs.TLS(src) }, d.SANs),
	})
	n.dialers[k] = dl
	return dl
}

// dropDialers forgets the Dialers of identity src once no pod has it; their HTTP/2 connections end when the peer
// closes them (the inbound side's idle timeout), pkg/hbone offers no way to close them.
func (n *Node) dropDialers(src string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.pods {
		if p.identity == src {
			return
		}
	}
	for k := range n.dialers {
		if k.src == src {
			delete(n.dialers, k)
		}
	}
}
