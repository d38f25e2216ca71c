package prom

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// API is the part of the Prometheus HTTP API the collector uses (promv1.API implements it).
type API interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
	Config(ctx context.Context) (promv1.ConfigResult, error)
}

// ClientConfig says how to reach Prometheus: a URL, or a Service through the Kubernetes API server's
// services/proxy subresource (no port-forward needed).
type ClientConfig struct {
	URL string
	// Service is used when URL is empty; Rest is the Kubernetes client config.
	ServiceNamespace, ServiceName, ServicePort, ServiceScheme string
	Rest                                                      *rest.Config
	// BearerTokenFile is read on every request (projected tokens rotate).
	BearerTokenFile string
	// CAFile verifies the server; InsecureSkipVerify disables verification.
	CAFile             string
	InsecureSkipVerify bool
}

// Address is the base URL requests go to.
func (c ClientConfig) Address() (string, error) {
	if c.URL != "" {
		return strings.TrimRight(c.URL, "/"), nil
	}
	if c.ServiceName == "" || c.Rest == nil {
		return "", errors.New("prometheus: set a URL, or a Service and a Kubernetes config")
	}
	scheme, port := c.ServiceScheme, c.ServicePort
	if scheme == "" {
		scheme = "http"
	}
	if port == "" {
		port = "9090"
	}
	host := strings.TrimRight(c.Rest.Host, "/")
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return fmt.Sprintf("%s%s/api/v1/namespaces/%s/services/%s:%s:%s/proxy",
		host, strings.TrimRight(c.Rest.APIPath, "/"), url.PathEscape(c.ServiceNamespace), scheme, url.PathEscape(c.ServiceName), url.PathEscape(port)), nil
}

// ConfigFor is how the scenario's spec.prometheus reaches Prometheus: its URL, else its Service through the API server
// that rc points at. Both the run's collector and preflight use it, so they reach the same Prometheus the same way.
func ConfigFor(p scenario.Prometheus, rc *rest.Config) ClientConfig {
	c := ClientConfig{URL: p.URL, BearerTokenFile: p.BearerTokenFile, CAFile: p.CAFile, InsecureSkipVerify: p.InsecureSkipVerify}
	if svc := p.Service; svc != nil && p.URL == "" {
		c.ServiceNamespace, c.ServiceName, c.ServicePort, c.ServiceScheme, c.Rest = svc.Namespace, svc.Name, svc.Port, svc.Scheme, rc
	}
	return c
}

// NewAPI builds a Prometheus API client. The TLS settings and the bearer token apply to a URL only: through the API
// server the Kubernetes credentials authenticate, and a Prometheus token would replace them (client-go sends no
// credentials of its own when a request already carries an Authorization header), so they are refused there.
func NewAPI(c ClientConfig) (promv1.API, error) {
	addr, err := c.Address()
	if err != nil {
		return nil, err
	}
	if c.URL == "" && (c.BearerTokenFile != "" || c.CAFile != "" || c.InsecureSkipVerify) {
		return nil, errors.New("prometheus: spec.prometheus.bearerTokenFile, caFile and insecureSkipVerify apply to spec.prometheus.url only; " +
			"through spec.prometheus.service the Kubernetes credentials of --kubeconfig are used: remove them, or set url instead of service")
	}
	var rt http.RoundTripper
	if c.URL == "" {
		// Through the API server: its transport carries the Kubernetes credentials.
		if rt, err = rest.TransportFor(c.Rest); err != nil {
			return nil, fmt.Errorf("prometheus via the API server: %w", err)
		}
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if c.CAFile != "" || c.InsecureSkipVerify {
			tc := &tls.Config{InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // the user asked for it
			if c.CAFile != "" {
				pem, err := inputfile.ReadFile(c.CAFile, inputfile.PrometheusCA)
				if err != nil {
					return nil, fmt.Errorf("prometheus CA file: %w", err)
				}
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(pem) {
					return nil, fmt.Errorf("prometheus CA file %s: no PEM certificates", c.CAFile)
				}
				tc.RootCAs = pool
			}
			tr.TLSClientConfig = tc
		}
		rt = tr
	}
	if c.BearerTokenFile != "" {
		rt = bearerTokenFile(c.BearerTokenFile, rt)
	}
	cl, err := api.NewClient(api.Config{Address: addr, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", addr, err)
	}
	return promv1.NewAPI(cl), nil
}

// tokenFile is the bearer token file as prometheus/common's config.FileSecret, read on every request so a rotated
// token is used at once; an empty file is an error naming the file (it would send "Bearer " and read as refused).
type tokenFile struct{ path string }

func (f tokenFile) Fetch(ctx context.Context) (string, error) {
	tok, err := config.NewFileSecret(f.path).Fetch(ctx)
	if err != nil {
		return "", fmt.Errorf("read bearer token file: %w", err)
	}
	if tok == "" {
		return "", fmt.Errorf("bearer token file %s is empty", f.path)
	}
	return tok, nil
}

func (f tokenFile) Description() string { return "bearer token file " + f.path }

// Immutable is false: the file is read per request (config.FileSecret's contract).
func (tokenFile) Immutable() bool { return false }

// bearerTokenFile wraps base so every request carries "Authorization: Bearer <token>" read from path at that
// request (prometheus/common config.NewAuthorizationCredentialsRoundTripper, the round tripper Prometheus itself uses
// for authorization.credentials_file; v0.74.0 config/http_config.go).
func bearerTokenFile(path string, base http.RoundTripper) http.RoundTripper {
	return config.NewAuthorizationCredentialsRoundTripper("Bearer", tokenFile{path: path}, base)
}

// Retry says how queries are retried (kube.Retry runs the attempts).
type Retry struct {
	Attempts int           // total attempts (>= 1)
	Backoff  time.Duration // first pause; doubled each time
	Timeout  time.Duration // per attempt
	// MaxBackoff caps the doubled pause (0 = no cap).
	MaxBackoff time.Duration
	// Budget bounds the time over all attempts: no attempt starts later than Budget after the first (0 = Attempts
	// alone bound it). A query therefore gives up at most Budget + Timeout after it began.
	Budget time.Duration
	// Clock times the pauses and the budget (nil = the wall clock).
	Clock clock.Clock
}

// DefaultRetry rides over a Prometheus restart at collection time (a 30 s outage, or one pod replaced by its
// Deployment) and then gives up, so a case never hangs on a Prometheus that stays down: up to 10 attempts, pauses
// from 500 ms doubling up to 8 s, no new attempt after 90 s, 30 s per attempt.
func DefaultRetry() Retry {
	return Retry{Attempts: 10, Backoff: 500 * time.Millisecond, MaxBackoff: 8 * time.Second, Timeout: 30 * time.Second, Budget: 90 * time.Second}
}

// query runs one instant query with per-attempt timeouts and retries with backoff on server-side and network
// errors, within r's attempts and budget. A bad query (client error, bad data, execution error) is not retried.
func query(ctx context.Context, a API, r Retry, q string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, error) {
	var (
		v       model.Value
		w       promv1.Warnings
		inPause bool // ctx was alive after the last attempt: it ended in a pause
	)
	retry := kube.Retry{Backoff: kube.Backoff{Initial: r.Backoff, Factor: 2, Max: r.MaxBackoff}, Attempts: max(r.Attempts, 1),
		Budget: r.Budget, Retryable: retryable, Clock: r.Clock}
	var clk clock.Clock = clock.RealClock{}
	if r.Clock != nil {
		clk = r.Clock
	}
	began := clk.Now()
	n, err := retry.Do(ctx, func() error {
		qctx, cancel := context.WithTimeout(ctx, r.Timeout)
		defer cancel()
		var err error
		v, w, _, err = a.Query(qctx, q, ts, append([]promv1.Option{promv1.WithTimeout(r.Timeout)}, opts...)...)
		inPause = ctx.Err() == nil
		return err
	})
	switch {
	case err == nil:
		return v, w, nil
	case inPause && ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case n == 1 || !retryable(err):
		return nil, nil, fmt.Errorf("query %s: %w", shortQuery(q), err)
	}
	return nil, nil, fmt.Errorf("query %s: %d attempts over %s: %w", shortQuery(q), n, clk.Since(began).Round(100*time.Millisecond), err)
}

// shortQuery is q for an error message: a selector of thousands of pod names would make the case's reason as long
// as the query, so the middle gives way to its length.
func shortQuery(q string) string {
	const keep = 120
	if len(q) <= 2*keep {
		return q
	}
	return fmt.Sprintf("%s...(%d bytes)...%s", q[:keep], len(q), q[len(q)-keep:])
}

func retryable(err error) bool {
	var pe *promv1.Error
	if errors.As(err, &pe) {
		switch pe.Type {
		case promv1.ErrBadData, promv1.ErrClient, promv1.ErrExec:
			return false
		}
	}
	return true
}
