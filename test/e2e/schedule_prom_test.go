//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// statusRecorder records, per request the client sends, "METHOD path -> status".
type statusRecorder struct {
	mu   sync.Mutex
	next http.RoundTripper
	log  []string
	code []int
}

func (r *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	r.log = append(r.log, fmt.Sprintf("%s %s -> %d", req.Method, req.URL.Path, code))
	r.code = append(r.code, code)
	return resp, err
}

func (r *statusRecorder) snapshot() ([]string, []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log), slices.Clone(r.code)
}

// TestScheduleServiceAccountQueriesPrometheus (issue 29 section 1 item 1) runs the collector's real window query
// through the API server's services proxy AS the ServiceAccount `meshbench schedule` creates, bound to the generated
// ClusterRole, with a token the API server issued to it: what the scheduled CronJob does, which tests as
// cluster-admin never see. client_golang POSTs every query (create on services/proxy): with a role that granted
// only get, every query was refused (403) and sent again as a GET.
//
// The harness's Prometheus listens on the host's loopback, which no Service can name (the API server proxies only to
// endpoints that are pods, at the pod's IP: kubernetes pkg/registry/core/service/storage/storage.go
// ResourceLocation, isValidAddress). So a hostNetwork pod on node1 (the host's network namespace: its pod IP is
// node1's address) stands behind a Service named like the one prometheus-operator creates for every Prometheus,
// and this test listens on node1's address at the Service's target port, passing requests to the real Prometheus
// and recording their methods.
func TestScheduleServiceAccountQueriesPrometheus(t *testing.T) {
	c := RequireCluster(t)
	node, nodeIP, pause := c.Env["MESHBENCH_NODE1"], c.Env["MESHBENCH_NODE1_IP"], c.Env["MESHBENCH_IMAGE_PAUSE"]
	if node == "" || nodeIP == "" || pause == "" {
		t.Skip("cluster.env has no MESHBENCH_NODE1, MESHBENCH_NODE1_IP or MESHBENCH_IMAGE_PAUSE: not the local harness")
	}
	ns := c.CreateNamespace(t, "schedule-prom")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The Prometheus behind the Service: a reverse proxy on node1's address to the harness's Prometheus.
	upstream, err := url.Parse(c.PrometheusURL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var upstreamMethods []string
	rp := httputil.NewSingleHostReverseProxy(upstream)
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	if err != nil {
		t.Fatalf("listen on node1's address: %v", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamMethods = append(upstreamMethods, r.Method+" "+r.URL.Path)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	labels := c.Labels(map[string]string{"app.kubernetes.io/name": "prometheus"})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-standin", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: true, Containers: []corev1.Container{{Name: "pause", Image: pause}}}}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// prometheus-operator's governing Service: prometheus-operated, headless, port 9090 named web
	// (prometheus-operator/prometheus-operator pkg/prometheus/common.go BuildStatefulSetService, v0.93.0).
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-operated", Namespace: ns, Labels: c.Labels(nil)},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app.kubernetes.io/name": "prometheus"},
			Ports: []corev1.ServicePort{{Name: "web", Port: 9090, TargetPort: intstr.FromInt32(int32(port))}}}}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=prometheus-operated"})
		if err != nil {
			return false, nil
		}
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the Service prometheus-operated never had a ready endpoint: %v", err)
	}

	// The scheduled ServiceAccount, bound to the generated ClusterRole, with a token of its own.
	sa, allowed := scheduleServiceAccount(ctx, t, c, ns)
	exp := int64(600)
	tok, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := rest.AnonymousClientConfig(c.Config)
	saCfg.BearerToken = tok.Status.Token
	rec := &statusRecorder{}
	saCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	if ok, reason := allowed("", "services", "proxy", "create", ns); !ok {
		t.Errorf("SubjectAccessReview: the scheduled ServiceAccount may not create services/proxy: %s", reason)
	}

	// The run's path: spec.prometheus.service -> prom.ConfigFor -> NewAPI, DetectInterval, one window's Collect.
	cc := prom.ConfigFor(scenario.Prometheus{Service: &scenario.ServiceRef{Namespace: ns, Name: "prometheus-operated", Port: "9090"}}, saCfg)
	api, err := prom.NewAPI(cc)
	if err != nil {
		t.Fatal(err)
	}
	retry := prom.Retry{Attempts: 1, Timeout: 30 * time.Second}
	iv, err := prom.DetectInterval(ctx, api, retry, 0, time.Now())
	if err != nil {
		t.Fatalf("detect the scrape interval as the scheduled ServiceAccount: %v", err)
	}
	for _, n := range iv.Notes {
		if strings.Contains(n, "failed") || strings.Contains(n, "not readable") {
			t.Errorf("interval detection as the scheduled ServiceAccount: %s", n)
		}
	}
	dns, err := c.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil || len(dns.Items) == 0 {
		t.Fatalf("CoreDNS pods to measure: %v (%d)", err, len(dns.Items))
	}
	var names []string
	for _, p := range dns.Items {
		names = append(names, p.Name)
	}
	set := podset.PodSet{Component: results.ComponentApp, Pods: map[string][]string{"kube-system": names}, Required: true}
	end := time.Now().Add(-5 * time.Second)
	w := results.Window{Kind: results.WindowIdle, Start: end.Add(-40 * time.Second), End: end}
	col := &prom.Collector{API: api, Interval: iv, Retry: retry}
	got, err := col.Collect(ctx, w, []podset.PodSet{set})
	if err != nil {
		t.Fatalf("window query as the scheduled ServiceAccount: %v", err)
	}
	if err := prom.CheckRequired([]podset.PodSet{set}, got.Samples); err != nil {
		t.Errorf("window query as the scheduled ServiceAccount: %v (warnings %v)", err, got.Warnings)
	}

	log, codes := rec.snapshot()
	t.Logf("requests as the scheduled ServiceAccount:\n  %s", strings.Join(log, "\n  "))
	posts := 0
	for i, l := range log {
		if codes[i] == http.StatusForbidden {
			t.Errorf("refused: %s: the generated ClusterRole lacks what the request needs", l)
		}
		if strings.HasPrefix(l, "POST ") && strings.Contains(l, "/services/http:prometheus-operated:9090/proxy/api/v1/query") && codes[i] == http.StatusOK {
			posts++
		}
	}
	if posts == 0 {
		t.Errorf("no query was POSTed through the services proxy and answered: %v", log)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(upstreamMethods, "POST /api/v1/query") {
		t.Errorf("Prometheus received %v, want the queries' POST /api/v1/query", upstreamMethods)
	}
}
