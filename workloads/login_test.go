package workloads

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/scenario"
)

// Login goes through the API server's services/proxy subresource and retries while userservice is not ready.
func TestLoginThroughServiceProxy(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := "/api/v1/namespaces/mb-multi-1/services/userservice:http/proxy/login"
		if r.URL.Path != want || r.URL.Query().Get("username") != "testuser" || r.URL.Query().Get("password") != "bankofanthos" {
			t.Errorf("request %s, want %s?username=testuser&password=bankofanthos", r.URL, want)
		}
		if calls.Add(1) == 1 {
			http.Error(w, "database not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"token": "eyJhbGciOiJSUzI1NiJ9.e30.sig"}`))
	}))
	defer srv.Close()
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := mustScenario(t, boaScenario)
	_, target, err := Objects(s, s.Spec.Workload.Topologies[1], "r1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Login(context.Background(), kc, target, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if out.Headers["Cookie"] != "token=eyJhbGciOiJSUzI1NiJ9.e30.sig" || calls.Load() != 2 {
		t.Errorf("headers %v after %d calls", out.Headers, calls.Load())
	}
	if target.Headers != nil {
		t.Error("Login must not modify its argument")
	}
	// fortio-chain needs no login.
	chain := mustScenario(t, chainScenario)
	_, ct, _ := Objects(chain, chain.Spec.Workload.Topologies[0], "r1")
	if got, err := Login(context.Background(), kc, ct, time.Second); err != nil || got.Headers != nil || ct.App != scenario.AppFortioChain {
		t.Errorf("chain login: %v %v", got.Headers, err)
	}
}
