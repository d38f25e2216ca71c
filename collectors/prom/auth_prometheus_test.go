package prom

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// authProxy stands in front of a real Prometheus like an authenticating proxy (kube-rbac-proxy, an ingress): it
// answers 401 unless the request carries "Bearer <the token it currently accepts>", and records each request's
// method, the length of its query and the token it carried.
type authProxy struct {
	mu       sync.Mutex
	accept   string
	methods  map[string]int
	longest  int
	tokens   map[string]int
	refused  int
	upstream *httputil.ReverseProxy
}

func (p *authProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	ok := tok == p.accept
	p.tokens[tok]++
	p.methods[r.Method]++
	if n := len(body) + len(r.URL.RawQuery); n > p.longest {
		p.longest = n
	}
	if !ok {
		p.refused++
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	r.ContentLength = int64(len(body))
	p.upstream.ServeHTTP(w, r)
}

func (p *authProxy) rotate(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.accept = tok
}

// Issue 15: the bearer token file rotated mid-run (a projected service account token) is used from the next query
// on, and a pod selector of 5,000 names (a 150 KiB query, far over the 8 KiB request line Prometheus' and most
// proxies' limits allow) reaches a real Prometheus. client_golang v1.25.0's Query POSTs the form
// (api/prometheus/v1/api.go, apiClientImpl.DoGetFallback: POST with Content-Type application/x-www-form-urlencoded,
// GET only after 403, 405 or 501), so no GET carries it in the URL.
func TestTokenRotationAndLongQueriesAgainstRealPrometheus(t *testing.T) {
	t.Parallel()
	promURL := startPrometheusWith(t, cadvisorJob(serveExporter(t)))
	target, err := url.Parse(promURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &authProxy{accept: "first", methods: map[string]int{}, tokens: map[string]int{}, upstream: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api, err := NewAPI(ClientConfig{URL: srv.URL, BearerTokenFile: tokFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitScraped(ctx, t, api)
	time.Sleep(20 * time.Second) // the window (10 s, ending 4 s ago) and its rate range after the first scrape
	iv := Interval{Scrape: time.Second, Effective: time.Second, Job: "kubernetes-cadvisor"}
	col := &Collector{API: api, Interval: iv, Retry: Retry{Attempts: 2, Backoff: 200 * time.Millisecond, Timeout: 20 * time.Second}}
	end := time.Now().Add(-4 * time.Second).Truncate(time.Millisecond)
	w := results.Window{Kind: results.WindowLoad, Start: end.Add(-10 * time.Second), End: end}
	two := []podset.PodSet{{Component: results.ComponentApp, Pods: map[string][]string{"bench-mesh": {"app-0", "app-1"}}, Container: matchNotProxy}}
	short, err := col.Collect(ctx, w, two)
	if err != nil {
		t.Fatalf("with the first token: %v", err)
	}

	// Rotated: the proxy now refuses the first token, and the file holds the second.
	proxy.rotate("second")
	if err := os.WriteFile(tokFile, []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// 5,000 pods in one namespace: the two that exist and 4,998 more (names as long as a Deployment's pods').
	pods := []string{"app-0", "app-1"}
	for i := range 4998 {
		pods = append(pods, fmt.Sprintf("bank-frontend-7d9c8b6f5d-%05d", i))
	}
	many := []podset.PodSet{{Component: results.ComponentApp, Pods: map[string][]string{"bench-mesh": pods}, Container: matchNotProxy}}
	long, err := col.Collect(ctx, w, many)
	if err != nil {
		t.Fatalf("after the rotation, 5,000 pods: %v", err)
	}
	proxy.mu.Lock()
	t.Logf("methods %v, longest query %d bytes, tokens %v, refused %d", proxy.methods, proxy.longest, proxy.tokens, proxy.refused)
	if proxy.refused != 0 || proxy.tokens["first"] == 0 || proxy.tokens["second"] == 0 {
		t.Errorf("tokens %v, %d refused: want the first token before the rotation, the second after, none refused", proxy.tokens, proxy.refused)
	}
	if proxy.methods[http.MethodGet] != 0 || proxy.methods[http.MethodPost] == 0 {
		t.Errorf("methods %v: want every query POSTed", proxy.methods)
	}
	if proxy.longest < 100<<10 {
		t.Errorf("longest query %d bytes: want the 5,000-pod selector (over 100 KiB)", proxy.longest)
	}
	proxy.mu.Unlock()
	// The same figures as the two pods alone (the other 4,998 have no series), and the pods without samples named.
	fig := func(ss []results.Sample) map[string]float64 {
		m := map[string]float64{}
		for _, s := range ss {
			m[string(s.Metric)+"/"+string(s.Stat)] = s.Value
		}
		return m
	}
	a, b := fig(short.Samples), fig(long.Samples)
	if len(a) != 6 || len(b) != 6 {
		t.Fatalf("figures %v and %v: want the 6 of the app", a, b)
	}
	for k, v := range a {
		if math.Abs(b[k]-v) > 1e-9*math.Max(1, math.Abs(v)) {
			t.Errorf("%s: %g with 5,000 pods, %g with the two", k, b[k], v)
		}
	}
	if !strings.Contains(strings.Join(long.Warnings, "\n"), "bench-mesh/bank-frontend-7d9c8b6f5d-04997") {
		t.Errorf("warnings lack the pods without samples")
	}

	// A token the proxy refuses fails the collection, naming the figures (401 is a client error: not retried).
	proxy.rotate("third")
	if _, err := col.Collect(ctx, w, two); err == nil || !strings.Contains(err.Error(), "app cpu") {
		t.Errorf("refused token: %v", err)
	}
}
