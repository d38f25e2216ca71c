package mesh

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/scenario"
)

// CAdvisorQuery is the preflight query: one series per app container, with the pod and container labels meshbench
// attributes resource usage by.
const CAdvisorQuery = `count by (namespace,pod,container)(container_memory_working_set_bytes{container!="",container!="POD"})`

// PromProbe is the result of the Prometheus check.
type PromProbe struct {
	Address string `json:"address"`
	// Series is the number of (namespace, pod, container) cAdvisor series.
	Series int `json:"series"`
	// Labelled is how many of them carry non-empty pod and container labels.
	Labelled int      `json:"labelled"`
	Warnings []string `json:"warnings,omitempty"`
}

// ProbePrometheus runs CAdvisorQuery against the scenario's Prometheus: its URL (with the bearer token file, re-read
// per request, and CA settings), or an in-cluster Service through the API server's services/proxy subresource
// (cfg). It returns an error when Prometheus cannot be queried.
func ProbePrometheus(ctx context.Context, p scenario.Prometheus, cfg *rest.Config) (PromProbe, error) {
	client, addr, err := promClient(p, cfg)
	if err != nil {
		return PromProbe{}, err
	}
	out := PromProbe{Address: addr}
	timeout := p.Timeout.Duration
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	val, warns, _, err := promv1.NewAPI(client).Query(qctx, CAdvisorQuery, time.Now())
	out.Warnings = append(out.Warnings, warns...)
	if err != nil {
		return out, fmt.Errorf("query Prometheus at %s: %w", addr, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return out, fmt.Errorf("query Prometheus at %s: unexpected result type %s", addr, val.Type())
	}
	out.Series = len(vec)
	for _, s := range vec {
		if s.Metric["pod"] != "" && s.Metric["container"] != "" {
			out.Labelled++
		}
	}
	return out, nil
}

func promClient(p scenario.Prometheus, cfg *rest.Config) (promapi.Client, string, error) {
	switch {
	case p.URL != "":
		rt, err := promTransport(p)
		if err != nil {
			return nil, "", err
		}
		c, err := promapi.NewClient(promapi.Config{Address: p.URL, RoundTripper: rt})
		if err != nil {
			return nil, "", fmt.Errorf("prometheus client for %s: %w", p.URL, err)
		}
		return c, p.URL, nil
	case p.Service != nil:
		if cfg == nil {
			return nil, "", errors.New("prometheus service: no Kubernetes config")
		}
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			return nil, "", fmt.Errorf("prometheus service proxy transport: %w", err)
		}
		svc := p.Service
		addr := fmt.Sprintf("%s/api/v1/namespaces/%s/services/%s:%s:%s/proxy", strings.TrimSuffix(cfg.Host, "/"), svc.Namespace, svc.Scheme, svc.Name, svc.Port)
		c, err := promapi.NewClient(promapi.Config{Address: addr, RoundTripper: rt})
		if err != nil {
			return nil, "", fmt.Errorf("prometheus client for %s: %w", addr, err)
		}
		return c, addr, nil
	default:
		return nil, "", errors.New("no Prometheus configured (spec.prometheus.url or .service)")
	}
}

// promTransport adds TLS settings and a bearer token read from its file on every request (projected tokens expire).
func promTransport(p scenario.Prometheus) (http.RoundTripper, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if p.CAFile != "" || p.InsecureSkipVerify {
		tc := &tls.Config{InsecureSkipVerify: p.InsecureSkipVerify} //nolint:gosec // the user asked for it
		if p.CAFile != "" {
			pem, err := os.ReadFile(p.CAFile)
			if err != nil {
				return nil, fmt.Errorf("prometheus CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("prometheus CA file %s: no PEM certificates", p.CAFile)
			}
			tc.RootCAs = pool
		}
		base.TLSClientConfig = tc
	}
	if p.BearerTokenFile == "" {
		return base, nil
	}
	return tokenFileTransport{base: base, file: p.BearerTokenFile}, nil
}

type tokenFileTransport struct {
	base http.RoundTripper
	file string
}

func (t tokenFileTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := os.ReadFile(t.file)
	if err != nil {
		return nil, fmt.Errorf("read prometheus bearer token: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	return t.base.RoundTrip(r)
}
