package prom

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/scenario"
)

// tlsPrometheus is an HTTPS stand-in for the Prometheus query API (httptest's self-signed certificate for 127.0.0.1)
// answering the cAdvisor probe with two series, one without a pod label. It records the Authorization headers.
func tlsPrometheus(t *testing.T) (srv *httptest.Server, caFile string, auth func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"namespace":"a","pod":"p","container":"c"},"value":[1,"1"]},` +
			`{"metric":{"namespace":"a","container":"c"},"value":[1,"1"]}]}}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, caFile, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// The TLS options and the bearer token file of spec.prometheus reach the client the run and preflight share
// (preflight had its own client before, which differed from the run's in these options).
func TestTLSOptionsApply(t *testing.T) {
	t.Parallel()
	srv, caFile, auth := tlsPrometheus(t)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		p        scenario.Prometheus
		wantErr  string // "" = the probe answers
		wantAuth string
	}{
		{name: "unverified certificate is refused", p: scenario.Prometheus{URL: srv.URL}, wantErr: "certificate"},
		{name: "caFile verifies the server", p: scenario.Prometheus{URL: srv.URL, CAFile: caFile}},
		{name: "insecureSkipVerify", p: scenario.Prometheus{URL: srv.URL, InsecureSkipVerify: true}},
		{name: "bearer token file", p: scenario.Prometheus{URL: srv.URL, CAFile: caFile, BearerTokenFile: tok}, wantAuth: "Bearer s3cret"},
		{name: "empty token file", p: scenario.Prometheus{URL: srv.URL, CAFile: caFile, BearerTokenFile: empty}, wantErr: "is empty"},
		{name: "missing token file", p: scenario.Prometheus{URL: srv.URL, CAFile: caFile, BearerTokenFile: filepath.Join(dir, "nope")}, wantErr: "read bearer token file"},
		{name: "caFile without certificates", p: scenario.Prometheus{URL: srv.URL, CAFile: notPEM}, wantErr: "no PEM certificates"},
		{name: "missing caFile", p: scenario.Prometheus{URL: srv.URL, CAFile: filepath.Join(dir, "nope.pem")}, wantErr: "prometheus CA file"},
	} {
		before := len(auth())
		got, err := ProbeCAdvisor(ctx, ConfigFor(tc.p, nil), 5*time.Second)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.Address != srv.URL || got.Series != 2 || got.Labelled != 1 {
			t.Errorf("%s: probe %+v, want 2 series at %s, 1 with pod and container", tc.name, got, srv.URL)
		}
		if h := auth(); len(h) != before+1 || h[len(h)-1] != tc.wantAuth {
			t.Errorf("%s: Authorization headers %q, want one request with %q", tc.name, h[before:], tc.wantAuth)
		}
	}
}

// Through the API server the Kubernetes credentials authenticate: a Prometheus token would replace them, so the
// URL-only options are refused there with the fields named, instead of being applied (the run) or dropped (preflight).
func TestServiceRefusesURLOnlyOptions(t *testing.T) {
	t.Parallel()
	svc := &scenario.ServiceRef{Namespace: "monitoring", Name: "prometheus", Port: "web"}
	rc := &rest.Config{Host: "https://10.0.0.1:6443"}
	cc := ConfigFor(scenario.Prometheus{Service: svc}, rc)
	if addr, err := cc.Address(); err != nil || addr != "https://10.0.0.1:6443/api/v1/namespaces/monitoring/services/http:prometheus:web/proxy" {
		t.Errorf("service address %q, %v", addr, err)
	}
	if _, err := NewAPI(cc); err != nil {
		t.Errorf("plain service: %v", err)
	}
	for _, p := range []scenario.Prometheus{
		{Service: svc, BearerTokenFile: "/var/run/secrets/token"},
		{Service: svc, CAFile: "/ca.pem"},
		{Service: svc, InsecureSkipVerify: true},
	} {
		_, err := NewAPI(ConfigFor(p, rc))
		if err == nil || !strings.Contains(err.Error(), "spec.prometheus.url only") {
			t.Errorf("%+v: error %v, want the URL-only options refused", p, err)
		}
	}
	// No Prometheus reachable at all: the probe says so (one attempt, no retries).
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	if _, err := ProbeCAdvisor(context.Background(), ClientConfig{URL: down.URL}, time.Second); err == nil || !strings.Contains(err.Error(), "query Prometheus at "+down.URL) {
		t.Errorf("closed server: %v", err)
	}
}
