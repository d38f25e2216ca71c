package orchestrate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/schedule"
)

// Issue 29 section 1 item 1: what a request needs is decided by the HTTP method the client library sends, which the
// static scan of TestPermissionsCoverCode cannot see (client_golang's query API, client-go's WebSocket exec). These
// tests send the run's real requests, through the real client libraries, to an API server stand-in that authorizes
// each one as kube-apiserver does against schedule.RequiredPermissions and refuses (403) what the table does not
// grant. A request refused there is one the scheduled ServiceAccount's ClusterRole refuses on a real cluster
// (test/e2e TestScheduleServiceAccountQueriesPrometheus runs it there).

// requestVerbs are the RBAC verbs kube-apiserver checks for a request with a name (kubernetes/kubernetes
// staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, NewRequestInfo, at v1.37.2 = k8s.io/apiserver
// v0.37.2: POST is create, GET and HEAD get, PUT update, PATCH patch, DELETE delete). A WebSocket upgrade of
// pods/exec, attach or portforward is a GET, and from Kubernetes 1.35 the pod REST storage also requires create
// (pkg/registry/core/pod/rest/subresources.go ExecREST.Connect, feature AuthorizePodWebsocketUpgradeCreatePermission,
// beta and on by default since 1.35: pkg/features/kube_features.go at v1.37.2).
func requestVerbs(r *http.Request, subresource string) []string {
	verb := map[string]string{http.MethodPost: "create", http.MethodGet: "get", http.MethodHead: "get",
		http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[r.Method]
	if verb == "get" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		slices.Contains([]string{"exec", "attach", "portforward"}, subresource) {
		return []string{"get", "create"}
	}
	return []string{verb}
}

// tableAPIServer answers as an API server whose RBAC grants exactly schedule.RequiredPermissions: a request the
// table does not grant is refused with 403 and recorded in refused; a granted request to a services proxy gets a
// Prometheus answer (an empty vector, an empty config), anything else 400 (the stand-in serves no streams).
type tableAPIServer struct {
	mu      sync.Mutex
	seen    []string // "METHOD resource/subresource"
	refused []string
}

func (s *tableAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /api/v1/namespaces/{ns}/{resource}/{name}/{subresource}[/...]
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 7 || parts[0] != "api" || parts[2] != "namespaces" {
		http.Error(w, "the stand-in serves namespaced subresources only: "+r.URL.Path, http.StatusNotFound)
		return
	}
	resource, sub := parts[4], parts[6]
	granted := map[string]bool{}
	for _, p := range schedule.RequiredPermissions {
		if p.Group == "" && p.Resource == resource && p.Subresource == sub {
			for _, v := range p.Verbs {
				granted[v] = true
			}
		}
	}
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+resource+"/"+sub)
	var denied []string
	for _, v := range requestVerbs(r, sub) {
		if !granted[v] {
			denied = append(denied, v)
		}
	}
	if len(denied) > 0 {
		s.refused = append(s.refused, fmt.Sprintf("%s %s/%s needs %s", r.Method, resource, sub, strings.Join(denied, ", ")))
	}
	s.mu.Unlock()
	switch {
	case len(denied) > 0:
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
	case resource == "services" && strings.HasSuffix(r.URL.Path, "/api/v1/query"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	case resource == "services" && strings.HasSuffix(r.URL.Path, "/api/v1/status/config"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"yaml":"global:\n  scrape_interval: 15s\n"}}`)
	default:
		http.Error(w, "the stand-in serves no streams", http.StatusBadRequest)
	}
}

func (s *tableAPIServer) result() (seen, refused []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen), slices.Clone(s.refused)
}

// The collector's Prometheus requests through the API server (a spec.prometheus.service): client_golang v1.25.0
// POSTs every query (api/prometheus/v1/api.go, apiClientImpl.DoGetFallback: POST, then GET only after a 403, 405 or
// 501) and GETs the config. Under a table that grants only get on services/proxy every query was refused once and
// sent again as a GET (two requests per query, each refusal in the audit log, the query in the URL).
func TestPrometheusThroughTheAPIServerIsPermitted(t *testing.T) {
	t.Parallel()
	s := &tableAPIServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	cc := prom.ConfigFor(scenario.Prometheus{Service: &scenario.ServiceRef{Namespace: "monitoring", Name: "prometheus-operated", Port: "9090"}},
		&rest.Config{Host: srv.URL})
	api, err := prom.NewAPI(cc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, _, err := api.Query(ctx, prom.CAdvisorQuery, time.Now()); err != nil {
		t.Fatalf("query: %v", err)
	}
	if _, err := api.Config(ctx); err != nil {
		t.Fatalf("config: %v", err)
	}
	seen, refused := s.result()
	for _, r := range refused {
		t.Errorf("refused under schedule.RequiredPermissions: %s", r)
	}
	if !slices.Contains(seen, "POST services/proxy") || !slices.Contains(seen, "GET services/proxy") {
		t.Errorf("requests %v: want the query's POST and the config's GET through services/proxy", seen)
	}
	if len(seen) != 2 {
		t.Errorf("requests %v: want one per call, none repeated after a refusal", seen)
	}
}

// A pod exec (load clients, iperf3/netperf, the agent's tools): client-go's WebSocket executor first (a GET
// upgrade: get, and create from Kubernetes 1.35), SPDY (a POST: create) only when the upgrade fails. Under a table
// that granted only create every exec was first refused, then sent again over SPDY.
func TestPodExecIsPermitted(t *testing.T) {
	t.Parallel()
	s := &tableAPIServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = kube.PodExecer{Config: cfg, Kube: kc}.Exec(ctx, "ns", "pod", "c", []string{"true"}, nil)
	if err == nil {
		t.Fatal("exec against a stand-in that serves no streams succeeded")
	}
	seen, refused := s.result()
	for _, r := range refused {
		t.Errorf("refused under schedule.RequiredPermissions: %s", r)
	}
	if len(seen) == 0 || seen[0] != "GET pods/exec" {
		t.Errorf("requests %v: want the WebSocket GET first", seen)
	}
}
