package hbonenode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"

	"istio.io/istio/pkg/spiffe"
	"istio.io/istio/security/pkg/pki/util"
)

// Trust verifies HBONE peers the SPIFFE way (pkg/spiffe PeerCertVerifier: the chain must lead to a root of the
// peer's trust domain, and the leaf must carry exactly one URI SAN). Roots come from the mounted istio-ca-root-cert
// and from the CA's responses; only the mesh's own trust domain is trusted.
type Trust struct {
	td    string
	mu    sync.RWMutex
	roots []*x509.Certificate
	v     *spiffe.PeerCertVerifier
}

// NewTrust trusts the PEM roots for trust domain td.
func NewTrust(td string, rootsPEM []byte) (*Trust, error) {
	t := &Trust{td: td}
	certs, _, err := util.ParsePemEncodedCertificateChain(rootsPEM)
	if err != nil {
		return nil, fmt.Errorf("trust roots: %w", err)
	}
	t.Add(certs...)
	return t, nil
}

// Add trusts more roots (duplicates are ignored).
func (t *Trust) Add(roots ...*x509.Certificate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for _, r := range roots {
		if !slices.ContainsFunc(t.roots, r.Equal) {
			t.roots, changed = append(t.roots, r), true
		}
	}
	if changed || t.v == nil {
		v := spiffe.NewPeerCertVerifier()
		v.AddMapping(t.td, t.roots)
		t.v = v
	}
}

// ErrNoPeerCert: the peer presented no certificate (PeerCertVerifier alone would let that pass).
var ErrNoPeerCert = errors.New("peer presented no certificate")

func (t *Trust) verify(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return ErrNoPeerCert
	}
	t.mu.RLock()
	v := t.v
	t.mu.RUnlock()
	return v.VerifyPeerCert(raw, nil)
}

// peerIdentity is the SPIFFE URI of the verified peer's leaf.
func peerIdentity(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", ErrNoPeerCert
	}
	uris := cs.PeerCertificates[0].URIs
	if len(uris) != 1 {
		return "", fmt.Errorf("peer certificate has %d URI SANs, want 1", len(uris))
	}
	return uris[0].String(), nil
}

// clientTLS is the HBONE client side: the source workload's certificate, TLS 1.3 only (as ztunnel and Envoy's
// connect_terminate listener), and the server must present one of sans. ALPN h2 and the ServerName are added by
// x/net's http2.Transport; with an IP address as the proxy no SNI is sent, as ztunnel does. Certificates are
// checked here instead of by hostname: Istio workload certificates carry URI SANs only.
func clientTLS(t *Trust, cert func() (*tls.Certificate, error), sans []string) *tls.Config {
	return &tls.Config{
		MinVersion:            tls.VersionTLS13,
		GetClientCertificate:  func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert() },
		InsecureSkipVerify:    true, //nolint:gosec // verified by VerifyPeerCertificate (SPIFFE chain) and VerifyConnection (SAN)
		VerifyPeerCertificate: t.verify,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := peerIdentity(cs)
			if err != nil {
				return err
			}
			if !slices.Contains(sans, id) {
				return fmt.Errorf("HBONE peer is %s, want one of %v", id, sans)
			}
			return nil
		},
	}
}

// serverTLS is the HBONE server side of an enrolled pod's 15008: the pod's certificate, a client certificate
// required and verified against the mesh's roots, ALPN h2, TLS 1.3 only.
func serverTLS(t *Trust, cert func(context.Context) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:            tls.VersionTLS13,
		NextProtos:            []string{"h2"},
		ClientAuth:            tls.RequireAnyClientCert,
		VerifyPeerCertificate: t.verify,
		GetCertificate:        func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return cert(h.Context()) },
	}
}
