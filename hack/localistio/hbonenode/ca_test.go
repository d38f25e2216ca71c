package hbonenode

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	pb "istio.io/api/security/v1alpha1"

	"istio.io/istio/pkg/security"
	"istio.io/istio/security/pkg/pki/util"
)

// fakeCA is an in-process IstioCertificateService on loopback TLS that records what istiod's
// security/pkg/server/ca/server.go CreateCertificate would authenticate and authorize, and signs like it (SANs
// from the impersonated identity, not from the CSR; chain leaf first, root last).
type fakeCA struct {
	pb.UnimplementedIstioCertificateServiceServer
	root    *x509.Certificate
	rootPEM []byte
	key     crypto.PrivateKey
	signAs  string // sign for this identity instead of the requested one (a misbehaving CA)

	mu   sync.Mutex
	reqs []caRequest
}

type caRequest struct {
	impersonated string
	auth         []string
	clusterID    []string
	clientCerts  int
	csrSANs      []string
}

func (f *fakeCA) CreateCertificate(ctx context.Context, req *pb.IstioCertificateRequest) (*pb.IstioCertificateResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r := caRequest{impersonated: req.GetMetadata().GetFields()[security.ImpersonatedIdentity].GetStringValue(),
		auth: md.Get("authorization"), clusterID: md.Get("clusterid")}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			r.clientCerts = len(ti.State.PeerCertificates)
		}
	}
	csr, err := util.ParsePemEncodedCSR([]byte(req.GetCsr()))
	if err != nil {
		return nil, err
	}
	for _, u := range csr.URIs {
		r.csrSANs = append(r.csrSANs, u.String())
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	id := r.impersonated
	if f.signAs != "" {
		id = f.signAs
	}
	der, err := util.GenCertFromCSR(csr, f.root, csr.PublicKey, f.key, []string{id}, time.Duration(req.GetValidityDuration())*time.Second, false)
	if err != nil {
		return nil, err
	}
	return &pb.IstioCertificateResponse{CertChain: []string{string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(f.rootPEM)}}, nil
}

func (f *fakeCA) requests() []caRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]caRequest(nil), f.reqs...)
}

// startFakeCA serves the fake CA on 127.0.0.1 with a certificate for istiod.istio-system.svc (the name the pin's
// pilot/pkg/grpc TLS options use for a "localhost" address) and returns the address, root file and token file.
func startFakeCA(t *testing.T, signAs string) (ca *fakeCA, addr, rootFile, tokenFile string) {
	t.Helper()
	rootPEM, rootKeyPEM, err := util.GenCertKeyFromOptions(util.CertOptions{Host: "cluster.local", Org: "meshbench test CA",
		TTL: time.Hour, IsCA: true, IsSelfSigned: true, ECSigAlg: util.EcdsaSigAlg})
	if err != nil {
		t.Fatal(err)
	}
	root, err := util.ParsePemEncodedCertificate(rootPEM)
	if err != nil {
		t.Fatal(err)
	}
	rootKey, err := util.ParsePemEncodedKey(rootKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srvPEM, srvKeyPEM, err := util.GenCertKeyFromOptions(util.CertOptions{Host: "istiod.istio-system.svc", TTL: time.Hour,
		SignerCert: root, SignerPriv: rootKey, IsServer: true, ECSigAlg: util.EcdsaSigAlg})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(srvPEM, srvKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ca = &fakeCA{root: root, rootPEM: rootPEM, key: rootKey, signAs: signAs}
	// RequestClientCert: a client certificate would be seen (and recorded), never required.
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12})))
	pb.RegisterIstioCertificateServiceServer(srv, ca)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	dir := t.TempDir()
	rootFile, tokenFile = filepath.Join(dir, "root-cert.pem"), filepath.Join(dir, "istio-token")
	if err := os.WriteFile(rootFile, rootPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("token-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return ca, "localhost:" + port, rootFile, tokenFile
}

func TestCAImpersonatedCSR(t *testing.T) {
	ca, addr, rootFile, tokenFile := startFakeCA(t, "")
	c, err := DialCA(CAConfig{Address: addr, RootCert: rootFile, TokenFile: tokenFile, ClusterID: "Kubernetes", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "spiffe://cluster.local/ns/app/sa/server"
	cert, err := c.Sign(ctx, id)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	// The token file is read on every request: kubelet's rotation is picked up.
	if err := os.WriteFile(tokenFile, []byte("token-two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sign(ctx, id); err != nil {
		t.Fatalf("second Sign: %v", err)
	}
	reqs := ca.requests()
	if len(reqs) != 2 {
		t.Fatalf("CA saw %d requests, want 2", len(reqs))
	}
	for i, want := range []string{"Bearer token-one", "Bearer token-two"} {
		r := reqs[i]
		if r.impersonated != id {
			t.Errorf("request %d: ImpersonatedIdentity %q, want %q", i, r.impersonated, id)
		}
		if len(r.auth) != 1 || r.auth[0] != want {
			t.Errorf("request %d: authorization %q, want %q", i, r.auth, want)
		}
		if r.clientCerts != 0 {
			t.Errorf("request %d: the client presented %d certificates; impersonation needs the token alone", i, r.clientCerts)
		}
		if len(r.clusterID) != 1 || r.clusterID[0] != "Kubernetes" {
			t.Errorf("request %d: ClusterID %q", i, r.clusterID)
		}
		if len(r.csrSANs) != 1 || r.csrSANs[0] != id {
			t.Errorf("request %d: CSR URI SANs %v, want [%s]", i, r.csrSANs, id)
		}
	}
	if cert.Identity != id || len(cert.Chain) != 2 || len(cert.TLS.Certificate) != 1 {
		t.Errorf("cert %s: chain %d PEMs, serves %d certificates; want the leaf only served", cert.Identity, len(cert.Chain), len(cert.TLS.Certificate))
	}
	root, ok := cert.Root()
	if !ok || !root.Equal(ca.root) {
		t.Error("Root() is not the CA's root")
	}
	// The key pair works: a TLS server with it verifies against the root with the SAN the CA set.
	if _, err := cert.TLS.Leaf.Verify(x509.VerifyOptions{Roots: poolOf(ca.root), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("leaf does not verify against the CA root: %v", err)
	}
	if got := cert.refreshAt(); !got.After(cert.NotBefore) || !got.Before(cert.NotAfter) {
		t.Errorf("refresh at %v, outside the validity %v..%v", got, cert.NotBefore, cert.NotAfter)
	}
}

func TestCARejectsLeafForAnotherIdentity(t *testing.T) {
	_, addr, rootFile, tokenFile := startFakeCA(t, "spiffe://cluster.local/ns/app/sa/someone-else")
	c, err := DialCA(CAConfig{Address: addr, RootCert: rootFile, TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Sign(ctx, "spiffe://cluster.local/ns/app/sa/server"); !errors.Is(err, ErrWrongIdentity) {
		t.Fatalf("Sign = %v, want ErrWrongIdentity", err)
	}
}

func TestCertsAcquireWaitRelease(t *testing.T) {
	_, addr, rootFile, tokenFile := startFakeCA(t, "")
	c, err := DialCA(CAConfig{Address: addr, RootCert: rootFile, TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := NewMetrics("test")
	var seen []*Cert
	var mu sync.Mutex
	s := NewCerts(c, m, slog.New(slog.NewTextHandler(t.Output(), nil)), func(c *Cert) { mu.Lock(); seen = append(seen, c); mu.Unlock() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "spiffe://cluster.local/ns/app/sa/server"
	s.Acquire(ctx, id)
	s.Acquire(ctx, id) // a second pod with the same service account shares it
	got, err := s.Wait(ctx, id)
	if err != nil || got.Identity != id {
		t.Fatalf("Wait = %v, %v", got, err)
	}
	if tc, err := s.TLS(id); err != nil || tc != got.TLS {
		t.Fatalf("TLS = %v, %v", tc, err)
	}
	if n := testutil.ToFloat64(m.csr.WithLabelValues(string(ResultOK))); n != 1 {
		t.Errorf("CSRs ok = %v, want 1 (one per identity)", n)
	}
	s.Release(id)
	if _, err := s.TLS(id); err != nil {
		t.Errorf("after one of two releases: %v", err)
	}
	s.Release(id)
	if _, err := s.TLS(id); err == nil {
		t.Error("certificate still held after the last release")
	}
	if n := testutil.ToFloat64(m.certificates); n != 0 {
		t.Errorf("certificates gauge = %v after the last release", n)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := s.Wait(short, "spiffe://cluster.local/ns/app/sa/nobody"); err == nil {
		t.Error("Wait for an identity no pod has succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Errorf("onCert saw %d certificates, want 1", len(seen))
	}
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}
