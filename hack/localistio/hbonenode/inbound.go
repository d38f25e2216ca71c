package hbonenode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"time"

	"istio.io/istio/pkg/workloadapi"
)

// hboneServer is the pod's 15008: HTTP/2 over mTLS (serverTLS with the pod's certificate), CONNECT only. pkg/hbone's
// own server cannot be used here: it dials r.Host with no identity check, no authorization and no in-pod mark.
func (n *Node) hboneServer(p *enrolled) *http.Server {
	var h2only http.Protocols
	h2only.SetHTTP2(true)
	return &http.Server{
		Protocols: &h2only,
		// Flow-control windows of ztunnel's defaults (4 MiB a stream, 16 MiB a connection: src/config.rs
		// HTTP2_STREAM_WINDOW_SIZE, HTTP2_CONNECTION_WINDOW_SIZE): with Go's smaller defaults one HTTP/2 connection
		// carrying many streams would cap throughput.
		HTTP2:             &http.HTTP2Config{MaxReceiveBufferPerStream: 4 << 20, MaxReceiveBufferPerConnection: 16 << 20},
		Handler:           &hboneHandler{n: n, p: p},
		TLSConfig:         serverTLS(n.trust, func(ctx context.Context) (*tls.Certificate, error) { return n.podCert(ctx, p) }),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute, // also ends the HTTP/2 connections of Dialers the clients dropped
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

// podCert is p's certificate for a handshake, waiting (up to CertWait) for the first one: a peer may connect
// before istiod signed it.
func (n *Node) podCert(ctx context.Context, p *enrolled) (*tls.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, n.CertWait)
	defer cancel()
	c, err := n.certs.Wait(ctx, p.identity)
	if err != nil {
		return nil, err
	}
	return c.TLS, nil
}

type hboneHandler struct {
	n *Node
	p *enrolled
}

// ServeHTTP terminates one HBONE stream (ztunnel src/proxy/inbound.rs serve_connect): CONNECT only (405), the
// :authority must be this pod's IP and not one of the node proxy's ports (400), RBAC with the peer certificate's
// identity (401), connect to the app from the pod's netns before answering (503 on failure), then 200 and relay.
func (h *hboneHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, p := h.n, h.p
	if r.Method != http.MethodConnect {
		n.metrics.inboundConn(ProtocolHBONE, ResultError)
		http.Error(w, "HBONE takes CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	target, err := netip.ParseAddrPort(r.Host)
	if err != nil || ownPorts[target.Port()] {
		n.metrics.inboundConn(ProtocolHBONE, ResultError)
		http.Error(w, fmt.Sprintf("bad :authority %q", r.Host), http.StatusBadRequest)
		return
	}
	var peer string
	if r.TLS != nil {
		peer, err = peerIdentity(*r.TLS)
	}
	if r.TLS == nil || err != nil {
		n.metrics.inboundConn(ProtocolHBONE, ResultError)
		http.Error(w, "no peer identity", http.StatusUnauthorized)
		return
	}
	src, _ := netip.ParseAddrPort(r.RemoteAddr)
	ok, status, err := n.admit(r.Context(), p, Conn{Src: src, Dst: target, SrcIdentity: peer})
	if !ok {
		n.metrics.inboundConn(ProtocolHBONE, ResultDenied)
		n.log.Info("HBONE inbound refused", "pod", p.Namespace+"/"+p.Name, "peer", peer, "target", target, "err", err)
		http.Error(w, err.Error(), status)
		return
	}
	up, err := p.deliver.DialContext(r.Context(), target)
	if err != nil {
		n.metrics.inboundConn(ProtocolHBONE, ResultError)
		http.Error(w, "connect to the app: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer up.Close()
	n.metrics.inboundConn(ProtocolHBONE, ResultAllowed)
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	go func() {
		k, _ := io.Copy(up, r.Body)
		n.metrics.copied(DirectionInbound, k)
		closeWrite(up)
	}()
	// The stream ends (END_STREAM) when the handler returns: that is the app's FIN for the client.
	k, _ := io.Copy(flushWriter{w, rc}, up)
	n.metrics.copied(DirectionOutbound, k)
}

type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(b []byte) (int, error) {
	k, err := f.w.Write(b)
	if err == nil {
		err = f.rc.Flush()
	}
	return k, err
}

// Typed reasons a connection is not admitted.
var (
	ErrNotThisPod    = errors.New("destination is not this pod")
	ErrUnknownPod    = errors.New("workload discovery does not know this pod (yet)")
	ErrPolicyDenied  = errors.New("denied by authorization policy")
	ErrNoAllowPolicy = errors.New("no ALLOW policy matched")
)

// admit checks that c targets pod p and that p's policies allow it; the HTTP status says why not. It waits (up to
// CertWait) for p to appear in workload discovery: a pod is enrolled before istiod pushes it, and ztunnel waits too.
func (n *Node) admit(ctx context.Context, p *enrolled, c Conn) (bool, int, error) {
	ctx, cancel := context.WithTimeout(ctx, n.CertWait)
	defer cancel()
	var wl *workloadapi.Workload
	if err := n.wds.Await(ctx, func(t *Tables) bool { wl = t.WorkloadByName(p.Namespace, p.Name); return wl != nil }); err != nil {
		return false, http.StatusServiceUnavailable, fmt.Errorf("%w: %s/%s: %w", ErrUnknownPod, p.Namespace, p.Name, err)
	}
	ipOK := false
	for _, ip := range workloadIPs(wl) {
		ipOK = ipOK || ip == c.Dst.Addr().Unmap()
	}
	if !ipOK {
		return false, http.StatusBadRequest, fmt.Errorf("%w: %s is not an address of %s/%s", ErrNotThisPod, c.Dst.Addr(), p.Namespace, p.Name)
	}
	var v Verdict
	n.wds.Read(func(t *Tables) { v = Allowed(t.ApplicablePolicies(wl), c) })
	switch {
	case v.Allowed:
		return true, http.StatusOK, nil
	case v.Policy != "":
		return false, http.StatusUnauthorized, fmt.Errorf("%w %s", ErrPolicyDenied, v.Policy)
	default:
		return false, http.StatusUnauthorized, ErrNoAllowPolicy
	}
}

// handlePlaintextInbound serves one plaintext connection to the pod (REDIRECTed to its 15006; ztunnel
// src/proxy/inbound_passthrough.rs): RBAC without a peer identity, so STRICT's istio_converted_static_strict
// refuses it; if admitted, deliver to the original destination from the pod's netns.
func (n *Node) handlePlaintextInbound(p *enrolled, c net.Conn) {
	defer c.Close()
	dst, err := origDst(c)
	if err != nil || ownPorts[dst.Port()] {
		n.metrics.inboundConn(ProtocolPlaintext, ResultError)
		n.log.Warn("plaintext inbound: bad destination", "pod", p.Namespace+"/"+p.Name, "dst", dst, "err", err)
		return
	}
	n.servePlaintext(p, c, dst)
}

func (n *Node) servePlaintext(p *enrolled, c net.Conn, dst netip.AddrPort) {
	defer c.Close()
	src, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	ok, _, err := n.admit(n.ctx, p, Conn{Src: src, Dst: dst})
	if !ok {
		n.metrics.inboundConn(ProtocolPlaintext, ResultDenied)
		n.log.Info("plaintext inbound refused", "pod", p.Namespace+"/"+p.Name, "src", src, "dst", dst, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.DialTimeout)
	up, err := p.deliver.DialContext(ctx, dst)
	cancel()
	if err != nil {
		n.metrics.inboundConn(ProtocolPlaintext, ResultError)
		n.log.Warn("plaintext inbound: connect to the app", "pod", p.Namespace+"/"+p.Name, "dst", dst, "err", err)
		return
	}
	n.metrics.inboundConn(ProtocolPlaintext, ResultAllowed)
	n.relay(c, up, DirectionInbound, DirectionOutbound)
}
