package hbonenode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
	pb "istio.io/api/security/v1alpha1"

	istiogrpc "istio.io/istio/pilot/pkg/grpc"
	"istio.io/istio/pkg/backoff"
	"istio.io/istio/pkg/security"
	"istio.io/istio/pkg/sleep"
	"istio.io/istio/security/pkg/credentialfetcher/plugin"
	"istio.io/istio/security/pkg/nodeagent/caclient"
	"istio.io/istio/security/pkg/pki/util"
)

// CAConfig says how to reach istiod's CA. The node proxy authenticates with its pod-bound projected token only: a
// client certificate would be authenticated first (pilot/pkg/bootstrap/server.go: ClientCertAuthenticator before
// KubeJWTAuthenticator) and carries no pod, and istiod's node authorizer then refuses every impersonation
// (security/pkg/server/ca/node_auth.go authenticateImpersonation).
type CAConfig struct {
	Address   string        // istiod's gRPC address, e.g. istiod.istio-system.svc:15012 ($CA_ADDRESS)
	RootCert  string        // PEM file that verifies istiod's serving certificate (ConfigMap istio-ca-root-cert)
	TokenFile string        // projected service account token, audience istio-ca
	ClusterID string        // sent as gRPC metadata ClusterID ($ISTIO_META_CLUSTER_ID)
	TTL       time.Duration // requested validity (ztunnel's default 24 h)
}

// CAClient requests workload certificates for other identities from istiod's CA, as ztunnel does
// (src/identity/caclient.rs fetch_certificate): the request's metadata carries ImpersonatedIdentity, which
// istiod honours for the accounts in CA_TRUSTED_NODE_ACCOUNTS (the chart sets istio-system/ztunnel) when a pod
// with that identity runs on the caller's node. The pin's CitadelClient cannot send that field.
type CAClient struct {
	conn      *grpc.ClientConn
	client    pb.IstioCertificateServiceClient
	clusterID string
	ttl       time.Duration
}

// DialCA connects to istiod's CA (lazily: the first request dials).
func DialCA(cfg CAConfig) (*CAClient, error) {
	opts, err := istiogrpc.ClientOptions(nil, &istiogrpc.TLSOptions{RootCert: cfg.RootCert, ServerAddress: cfg.Address})
	if err != nil {
		return nil, fmt.Errorf("CA TLS options (root %s): %w", cfg.RootCert, err)
	}
	opts = append(opts,
		grpc.WithPerRPCCredentials(caclient.NewDefaultTokenProvider(&security.Options{CredFetcher: plugin.CreateTokenPlugin(cfg.TokenFile)})),
		security.CARetryInterceptor())
	conn, err := grpc.NewClient(cfg.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", cfg.Address, err)
	}
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	return &CAClient{conn: conn, client: pb.NewIstioCertificateServiceClient(conn), clusterID: cfg.ClusterID, ttl: ttl}, nil
}

// Close ends the connection.
func (c *CAClient) Close() error { return c.conn.Close() }

// ErrWrongIdentity: the CA signed a certificate for another identity than the one requested.
var ErrWrongIdentity = errors.New("CA returned a certificate for another identity")

// Cert is one workload certificate held by the node proxy.
type Cert struct {
	Identity  string
	TLS       *tls.Certificate // leaf and intermediates, with the private key
	Chain     []string         // PEM as istiod returned it: leaf first, root last
	NotBefore time.Time
	NotAfter  time.Time
}

// Sign generates a key and CSR (ECDSA P-256, the identity as the only URI SAN, like ztunnel's) and has istiod's
// CA sign it for identity id.
func (c *CAClient) Sign(ctx context.Context, id string) (*Cert, error) {
	csr, key, err := util.GenCSR(util.CertOptions{Host: id, ECSigAlg: util.EcdsaSigAlg})
	if err != nil {
		return nil, fmt.Errorf("CSR for %s: %w", id, err)
	}
	md, err := structpb.NewStruct(map[string]any{security.ImpersonatedIdentity: id})
	if err != nil {
		return nil, err
	}
	if c.clusterID != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "ClusterID", c.clusterID)
	}
	resp, err := c.client.CreateCertificate(ctx, &pb.IstioCertificateRequest{
		Csr: string(csr), ValidityDuration: int64(c.ttl / time.Second), Metadata: md,
	})
	if err != nil {
		return nil, fmt.Errorf("CreateCertificate for %s: %w", id, err)
	}
	return parseChain(id, resp.GetCertChain(), key)
}

// parseChain builds a Cert from istiod's response (security/pkg/server/ca/server.go CreateCertificate: one PEM
// per element, leaf first, "the root cert is the last element"). The served chain leaves the root out; the leaf
// must name exactly id.
func parseChain(id string, chain []string, keyPEM []byte) (*Cert, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("CA returned no certificate for %s", id)
	}
	leaf, err := util.ParsePemEncodedCertificate([]byte(chain[0]))
	if err != nil {
		return nil, fmt.Errorf("leaf certificate for %s: %w", id, err)
	}
	ids, err := util.ExtractIDs(leaf.Extensions)
	if err != nil || !slices.Equal(ids, []string{id}) {
		return nil, fmt.Errorf("%w: asked for %s, got %v (%v)", ErrWrongIdentity, id, ids, err)
	}
	served := chain
	if len(chain) > 1 {
		served = chain[:len(chain)-1]
	}
	pair, err := tls.X509KeyPair([]byte(strings.Join(served, "\n")), keyPEM)
	if err != nil {
		return nil, fmt.Errorf("key pair for %s: %w", id, err)
	}
	pair.Leaf = leaf
	return &Cert{Identity: id, TLS: &pair, Chain: chain, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter}, nil
}

// Root returns the chain's last certificate (the CA root) when the chain has more than the leaf.
func (c *Cert) Root() (*x509.Certificate, bool) {
	if len(c.Chain) < 2 {
		return nil, false
	}
	root, err := util.ParsePemEncodedCertificate([]byte(c.Chain[len(c.Chain)-1]))
	return root, err == nil
}

// refreshAt is half-way through the certificate's life (ztunnel src/tls/certificate.rs refresh_at).
func (c *Cert) refreshAt() time.Time { return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) / 2) }

// signer is what Certs needs of a CA.
type signer interface {
	Sign(ctx context.Context, id string) (*Cert, error)
}

// Certs holds one certificate per SPIFFE identity of the enrolled pods (several pods may share one): requested on
// the first Acquire, re-requested with backoff on failure (istiod's node authorizer may not see a new pod yet) and
// at half life, dropped on the last Release.
type Certs struct {
	signer  signer
	metrics *Metrics
	log     *slog.Logger
	onCert  func(*Cert) // called for every new certificate (trust roots)

	mu   sync.Mutex
	byID map[string]*certEntry
}

type certEntry struct {
	refs   int
	cancel context.CancelFunc
	ready  chan struct{} // closed when the first certificate arrived
	mu     sync.Mutex
	cur    *Cert
}

// NewCerts returns an empty store that signs with s; onCert (optional) sees every certificate obtained.
func NewCerts(s signer, m *Metrics, log *slog.Logger, onCert func(*Cert)) *Certs {
	return &Certs{signer: s, metrics: m, log: log, onCert: onCert, byID: map[string]*certEntry{}}
}

// Acquire registers one more pod with identity id; the first one starts fetching its certificate under ctx.
func (s *Certs) Acquire(ctx context.Context, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		e.refs++
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &certEntry{refs: 1, cancel: cancel, ready: make(chan struct{})}
	s.byID[id] = e
	go s.keep(ctx, id, e)
}

// Release unregisters one pod with identity id; the last one drops the certificate.
func (s *Certs) Release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return
	}
	if e.refs--; e.refs == 0 {
		e.cancel()
		delete(s.byID, id)
		s.metrics.certificates.Set(float64(s.heldLocked()))
	}
}

// Wait returns id's certificate, waiting for the first one until ctx ends (connections fail closed).
func (s *Certs) Wait(ctx context.Context, id string) (*Cert, error) {
	s.mu.Lock()
	e := s.byID[id]
	s.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("no enrolled pod has identity %s", id)
	}
	select {
	case <-e.ready:
		return e.current(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no certificate for %s yet: %w", id, context.Cause(ctx))
	}
}

// TLS returns id's current certificate for a handshake, or an error when none is held (yet).
func (s *Certs) TLS(id string) (*tls.Certificate, error) {
	s.mu.Lock()
	e := s.byID[id]
	s.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("no enrolled pod has identity %s", id)
	}
	if c := e.current(); c != nil {
		return c.TLS, nil
	}
	return nil, fmt.Errorf("no certificate for %s yet", id)
}

// All returns the certificates held, sorted by identity.
func (s *Certs) All() []*Cert {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Cert
	for _, e := range s.byID {
		if c := e.current(); c != nil {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *Cert) int { return strings.Compare(a.Identity, b.Identity) })
	return out
}

func (s *Certs) heldLocked() int {
	n := 0
	for _, e := range s.byID {
		if e.current() != nil {
			n++
		}
	}
	return n
}

func (e *certEntry) current() *Cert {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

func (s *Certs) keep(ctx context.Context, id string, e *certEntry) {
	bo := backoff.NewExponentialBackOff(backoff.Option{InitialInterval: 200 * time.Millisecond, MaxInterval: 30 * time.Second})
	for ctx.Err() == nil {
		c, err := s.signer.Sign(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.metrics.csr.WithLabelValues(string(ResultError)).Inc()
			wait := bo.NextBackOff()
			s.log.Warn("certificate request failed", "identity", id, "retry_in", wait, "err", err)
			if !sleep.UntilContext(ctx, wait) {
				return
			}
			continue
		}
		bo.Reset()
		s.metrics.csr.WithLabelValues(string(ResultOK)).Inc()
		if s.onCert != nil {
			s.onCert(c)
		}
		e.mu.Lock()
		first := e.cur == nil
		e.cur = c
		e.mu.Unlock()
		if first {
			close(e.ready)
		}
		s.mu.Lock()
		s.metrics.certificates.Set(float64(s.heldLocked()))
		s.mu.Unlock()
		s.log.Info("certificate", "identity", id, "not_after", c.NotAfter.UTC().Format(time.RFC3339), "first", first)
		if !sleep.UntilContext(ctx, time.Until(c.refreshAt())) {
			return
		}
	}
}
