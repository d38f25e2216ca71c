package hbonenode

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"

	"istio.io/istio/pkg/workloadapi"
	"istio.io/istio/pkg/workloadapi/security"
	"istio.io/istio/security/pkg/pki/util"
)

// Istio's own test certificates (istio.io/istio tests/testdata/certs/mountedcerts-{client,server} at the pin
// v0.0.0-20260827124520-eed52ebb66ad): one root "cluster.local", leaves valid until 2296 with the URI SANs below.
const (
	clientID = "spiffe://cluster.local/ns/mounted-certs/sa/client"
	serverID = "spiffe://cluster.local/ns/mounted-certs/sa/server"
)

var (
	istioDirOnce sync.Once
	istioDir     string
	istioDirErr  error
)

// istioModuleDir is the pinned istio.io/istio module's directory (go list resolves it as the build does).
func istioModuleDir(t *testing.T) string {
	t.Helper()
	istioDirOnce.Do(func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/istio").Output()
		istioDir, istioDirErr = strings.TrimSpace(string(out)), err
	})
	if istioDirErr != nil || istioDir == "" {
		t.Fatalf("locating istio.io/istio: %v", istioDirErr)
	}
	return istioDir
}

func mountedCert(t *testing.T, who, id string) (*Cert, []byte) {
	t.Helper()
	dir := filepath.Join(istioModuleDir(t), "tests/testdata/certs/mountedcerts-"+who)
	chain, err := os.ReadFile(filepath.Join(dir, "cert-chain.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile(filepath.Join(dir, "root-cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(chain, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := util.ParsePemEncodedCertificate(chain)
	if err != nil {
		t.Fatal(err)
	}
	pair.Leaf = leaf
	return &Cert{Identity: id, TLS: &pair, Chain: []string{string(chain), string(root)}, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter}, root
}

// fixedSigner hands out fixed certificates by identity.
type fixedSigner map[string]*Cert

func (f fixedSigner) Sign(_ context.Context, id string) (*Cert, error) {
	if c := f[id]; c != nil {
		return c, nil
	}
	return nil, errors.New("no test certificate for " + id)
}

// plainDialer stands in for NetnsDialer: the test's "pods" are loopback addresses in the test's own netns.
type plainDialer struct{}

func (plainDialer) DialContext(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", a.String())
}

// echoServer is the "app": it echoes what it reads and counts the connections it accepted.
type echoServer struct {
	addr     netip.AddrPort
	accepted atomic.Int64
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveEcho(t, ln)
}

// serveEcho echoes on ln until the test ends.
func serveEcho(t *testing.T, ln net.Listener) *echoServer {
	t.Cleanup(func() { ln.Close() })
	e := &echoServer{addr: netip.MustParseAddrPort(ln.Addr().String())}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return e
}

// loopbackNode: a node proxy with two "pods" on loopback: server (mounted-certs/server, the workload at 127.0.0.1,
// its 15008 and 15006 on random loopback ports) and client (mounted-certs/client, no listeners).
type loopbackNode struct {
	n              *Node
	wds            *WDS
	server, client *enrolled
	hboneAddr      netip.AddrPort // the server pod's HBONE listener
	plainAddr      netip.AddrPort // the server pod's plaintext listener (delivers to the echo app)
	echo           *echoServer    // the server pod's app
	clientTLS      *tls.Config    // the client's certificate and trust, for direct probes
	metrics        *Metrics
}

func newLoopbackNode(t *testing.T, policies ...*security.Authorization) *loopbackNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	clientCert, root := mountedCert(t, "client", clientID)
	serverCert, _ := mountedCert(t, "server", serverID)
	trust, err := NewTrust("cluster.local", root)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics("test")
	certs := NewCerts(fixedSigner{clientID: clientCert, serverID: serverCert}, m, log, nil)
	tb := NewTables("cluster.local")
	var names []string
	for _, p := range policies {
		tb.PutPolicy(p.GetNamespace()+"/"+p.GetName(), p)
		names = append(names, p.GetNamespace()+"/"+p.GetName())
	}
	tb.PutAddress("Kubernetes//Pod/mounted-certs/server", &workloadapi.Address{Type: &workloadapi.Address_Workload{Workload: &workloadapi.Workload{
		Uid: "Kubernetes//Pod/mounted-certs/server", Name: "server", Namespace: "mounted-certs", ServiceAccount: "server",
		Addresses: [][]byte{netip.MustParseAddr("127.0.0.1").AsSlice()}, TunnelProtocol: workloadapi.TunnelProtocol_HBONE,
		AuthorizationPolicies: names,
	}}})
	wds := newLocalWDS(tb, log)
	n := NewNode(ctx, "cluster.local", certs, trust, wds, m, log)
	n.CertWait, n.DialTimeout = 2*time.Second, 2*time.Second

	server := &enrolled{PodInfo: PodInfo{UID: "uid-server", Name: "server", Namespace: "mounted-certs", ServiceAccount: "server"},
		identity: serverID, deliver: plainDialer{}, netnsFd: -1}
	client := &enrolled{PodInfo: PodInfo{UID: "uid-client", Name: "client", Namespace: "mounted-certs", ServiceAccount: "client"},
		identity: clientID, deliver: plainDialer{}, netnsFd: -1}
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &loopbackNode{n: n, wds: wds, server: server, client: client, metrics: m,
		hboneAddr: netip.MustParseAddrPort(hln.Addr().String()), plainAddr: netip.MustParseAddrPort(pln.Addr().String()),
		echo: startEcho(t)}
	n.startPod(server, nil, nil, hln)
	n.startPod(client, nil, nil, nil)
	// The plaintext listener: no REDIRECT on loopback, so the "original destination" is given.
	server.closers = append(server.closers, pln)
	go n.acceptLoop(pln, func(c net.Conn) { n.servePlaintext(server, c, ln.echo.addr) })
	t.Cleanup(func() { n.DelPod(server.UID); n.DelPod(client.UID) })

	ln.clientTLS = clientTLS(trust, func() (*tls.Certificate, error) { return clientCert.TLS, nil }, []string{serverID})
	ln.clientTLS.NextProtos = []string{"h2"}
	return ln
}

func roundTrip(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf)
}

func TestHBONERoundTripLoopback(t *testing.T) {
	// ALLOW only the client's principal (Istio's form, without spiffe://): the stream passes only if the handler
	// took the principal from the verified peer certificate.
	allowClient := &security.Authorization{Name: "allow-client", Namespace: "mounted-certs", Scope: security.Scope_WORKLOAD_SELECTOR,
		Action: security.Action_ALLOW, Groups: []*security.Group{{Rules: []*security.Rules{{Matches: []*security.Match{{
			Principals: []*security.StringMatch{exact("cluster.local/ns/mounted-certs/sa/client")}}}}}}}}
	ln := newLoopbackNode(t, allowClient, staticStrict())
	echo := ln.echo
	ctx := context.Background()
	d := Decision{Protocol: ProtocolHBONE, Via: ViaNode, NextHop: ln.hboneAddr,
		Authority: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), echo.addr.Port()), SANs: []string{serverID}}

	// Through pkg/hbone's real Dialer, twice (the second stream reuses the HTTP/2 connection).
	for i := range 2 {
		c, err := ln.n.connect(ctx, ln.client, d)
		if err != nil {
			t.Fatalf("HBONE connect %d: %v", i, err)
		}
		if got := roundTrip(t, c, "hello through HBONE"); got != "hello through HBONE" {
			t.Fatalf("echo %d = %q", i, got)
		}
	}
	if got := testutil.ToFloat64(ln.metrics.inbound.WithLabelValues(string(ProtocolHBONE), string(ResultAllowed))); got != 2 {
		t.Errorf("inbound hbone allowed = %v, want 2", got)
	}
	if echo.accepted.Load() != 2 {
		t.Errorf("app accepted %d connections, want 2", echo.accepted.Load())
	}
	if n := len(ln.n.dialers); n != 1 {
		t.Errorf("%d HBONE dialers for one source and next hop, want 1", n)
	}

	// The server side is HTTP/2 over TLS 1.3 only, with the server pod's certificate.
	tc, err := tls.Dial("tcp", ln.hboneAddr.String(), ln.clientTLS)
	if err != nil {
		t.Fatalf("direct TLS: %v", err)
	}
	st := tc.ConnectionState()
	tc.Close()
	if st.NegotiatedProtocol != "h2" || st.Version != tls.VersionTLS13 {
		t.Errorf("negotiated %q, TLS %x; want h2, TLS 1.3", st.NegotiatedProtocol, st.Version)
	}
	if id, _ := peerIdentity(st); id != serverID {
		t.Errorf("server presented %s, want %s", id, serverID)
	}
	old := ln.clientTLS.Clone()
	old.MaxVersion = tls.VersionTLS12
	if c, err := tls.Dial("tcp", ln.hboneAddr.String(), old); err == nil {
		c.Close()
		t.Error("TLS 1.2 handshake accepted")
	}
}

func TestHBONERefusals(t *testing.T) {
	allowClient := &security.Authorization{Name: "allow-other", Namespace: "mounted-certs", Scope: security.Scope_WORKLOAD_SELECTOR,
		Action: security.Action_ALLOW, Groups: []*security.Group{{Rules: []*security.Rules{{Matches: []*security.Match{{
			Principals: []*security.StringMatch{exact("cluster.local/ns/mounted-certs/sa/someone-else")}}}}}}}}
	ln := newLoopbackNode(t, staticStrict())
	echo := ln.echo
	ctx := context.Background()
	good := Decision{Protocol: ProtocolHBONE, Via: ViaNode, NextHop: ln.hboneAddr,
		Authority: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), echo.addr.Port()), SANs: []string{serverID}}

	t.Run("server identity not the expected SAN", func(t *testing.T) {
		d := good
		d.SANs = []string{"spiffe://cluster.local/ns/mounted-certs/sa/not-the-server"}
		if c, err := ln.n.connect(ctx, ln.client, d); err == nil {
			c.Close()
			t.Fatal("HBONE to a peer with an unexpected identity succeeded")
		}
	})
	t.Run("client without certificate", func(t *testing.T) {
		cfg := ln.clientTLS.Clone()
		cfg.GetClientCertificate = nil
		c, err := tls.Dial("tcp", ln.hboneAddr.String(), cfg)
		if err == nil {
			// TLS 1.3: the server's verdict on the client's (empty) certificate arrives after the client's handshake.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("server accepted a client without certificate: %v", err)
		}
	})
	t.Run(":authority of another address", func(t *testing.T) {
		d := good
		d.Authority = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), echo.addr.Port())
		if c, err := ln.n.connect(ctx, ln.client, d); err == nil || !strings.Contains(err.Error(), "400") {
			if c != nil {
				c.Close()
			}
			t.Fatalf("CONNECT to another pod's address: %v, want 400", err)
		}
	})
	t.Run(":authority on the node proxy's own port", func(t *testing.T) {
		d := good
		d.Authority = netip.MustParseAddrPort("127.0.0.1:15001")
		if c, err := ln.n.connect(ctx, ln.client, d); err == nil || !strings.Contains(err.Error(), "400") {
			if c != nil {
				c.Close()
			}
			t.Fatalf("CONNECT to 15001: %v, want 400", err)
		}
	})
	t.Run("non-CONNECT", func(t *testing.T) {
		tr := &http2.Transport{TLSClientConfig: ln.clientTLS}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("https://" + ln.hboneAddr.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("GET: %d, want 405", resp.StatusCode)
		}
	})
	t.Run("STRICT refuses plaintext", func(t *testing.T) {
		c, err := net.Dial("tcp", ln.plainAddr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "plaintext")
		if k, err := c.Read(make([]byte, 16)); err == nil {
			t.Fatalf("plaintext under STRICT got %d bytes back", k)
		}
		if got := testutil.ToFloat64(ln.metrics.inbound.WithLabelValues(string(ProtocolPlaintext), string(ResultDenied))); got != 1 {
			t.Errorf("plaintext denied = %v, want 1", got)
		}
	})
	t.Run("ALLOW for another principal", func(t *testing.T) {
		ln.wds.Update(func(tb *Tables) {
			tb.PutPolicy("mounted-certs/allow-other", allowClient)
			w := tb.WorkloadByName("mounted-certs", "server")
			w.AuthorizationPolicies = append(w.AuthorizationPolicies, "mounted-certs/allow-other")
		})
		if c, err := ln.n.connect(ctx, ln.client, good); err == nil || !strings.Contains(err.Error(), "401") {
			if c != nil {
				c.Close()
			}
			t.Fatalf("CONNECT not allowed by policy: %v, want 401", err)
		}
	})
	if n := echo.accepted.Load(); n != 0 {
		t.Errorf("the app accepted %d connections; every attempt should have been refused before it", n)
	}
	if got := testutil.ToFloat64(ln.metrics.inbound.WithLabelValues(string(ProtocolHBONE), string(ResultAllowed))); got != 0 {
		t.Errorf("inbound hbone allowed = %v, want 0", got)
	}
}

func TestPlaintextAllowedWithoutPolicies(t *testing.T) {
	// The control for "STRICT refuses plaintext": the same path delivers when no policy applies.
	ln := newLoopbackNode(t)
	echo := ln.echo
	c, err := net.Dial("tcp", ln.plainAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, c, "plain"); got != "plain" {
		t.Fatalf("echo = %q", got)
	}
	if echo.accepted.Load() != 1 {
		t.Errorf("app accepted %d connections, want 1", echo.accepted.Load())
	}
}

// TestTrustRejectsForeignRoot: a peer chain from another CA fails verification even with the right SAN.
func TestTrustRejectsForeignRoot(t *testing.T) {
	_, root := mountedCert(t, "client", clientID)
	trust, err := NewTrust("cluster.local", root)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := util.GenCertKeyFromOptions(util.CertOptions{Host: serverID, TTL: time.Hour, IsSelfSigned: true,
		IsServer: true, IsClient: true, ECSigAlg: util.EcdsaSigAlg})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := util.ParsePemEncodedCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.verify([][]byte{foreign.Raw}, nil); err == nil {
		t.Fatal("self-signed certificate with a mesh SAN verified")
	}
	if err := trust.verify(nil, nil); !errors.Is(err, ErrNoPeerCert) {
		t.Fatalf("no certificate: %v, want ErrNoPeerCert", err)
	}
}
