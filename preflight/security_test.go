package preflight

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// TestPrometheusCheckTLS: preflight reaches Prometheus with the run's client, so a self-signed certificate fails
// the check by default; insecureSkipVerify reaches it, and the check then warns that verification is off.
func TestPrometheusCheckTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"namespace":"a","pod":"p","container":"c"},"value":[1,"1"]}]}}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	if ch := prometheusCheck(ctx, &kube.Clients{}, scenario.Prometheus{URL: srv.URL, Timeout: scenario.D(5 * time.Second)}); ch.Status != StatusFail || !strings.Contains(ch.Detail, "certificate") {
		t.Errorf("self-signed, verified: %+v, want FAIL naming the certificate", ch)
	}
	ch := prometheusCheck(ctx, &kube.Clients{}, scenario.Prometheus{URL: srv.URL, InsecureSkipVerify: true, Timeout: scenario.D(5 * time.Second)})
	if ch.Status != StatusWarn || !strings.Contains(ch.Detail, "TLS verification is off") || !strings.Contains(ch.Fix, "caFile") {
		t.Errorf("insecureSkipVerify: %+v, want WARN saying verification is off", ch)
	}
}

// TestNamespacesCheckRefusesRootNamespace: an app namespace that is the install's custom root namespace fails the
// check (the run would refuse it), while the same name without that install passes.
func TestNamespacesCheckRefusesRootNamespace(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: pf}
spec:
  workload:
    app: fortio-chain
    namespacePrefix: mesh-
    topologies: [{name: root, kind: single}]
  modes: [none]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := &kube.Clients{Kube: fake.NewClientset()}
	if ch := namespacesCheck(context.Background(), c, s, false, "mesh-root"); ch.Status != StatusFail || !strings.Contains(ch.Detail, "mesh-root") {
		t.Errorf("root namespace: %+v, want FAIL naming mesh-root", ch)
	}
	if ch := namespacesCheck(context.Background(), c, s, false, "istio-system"); ch.Status != StatusOK {
		t.Errorf("another install: %+v, want OK", ch)
	}
}
