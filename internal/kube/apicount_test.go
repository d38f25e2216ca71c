package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

func TestVerbResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, path, watch, want string }{
		{"GET", "/api/v1/pods", "", "list pods"},
		{"GET", "/api/v1/namespaces/ns1/pods", "true", "watch pods"},
		{"GET", "/api/v1/watch/namespaces/ns1/pods", "", "watch pods"},
		{"GET", "/api/v1/namespaces/ns1/pods/p", "", "get pods"},
		{"POST", "/api/v1/namespaces/ns1/pods/p/exec", "", "create pods/exec"},
		{"GET", "/api/v1/namespaces/ns1/pods/p/proxy/metrics", "", "get pods/proxy"},
		{"GET", "/api/v1/namespaces", "", "list namespaces"},
		{"GET", "/api/v1/namespaces/ns1", "", "get namespaces"},
		{"PUT", "/api/v1/namespaces/ns1/finalize", "", "update namespaces/finalize"},
		{"PATCH", "/api/v1/namespaces/ns1/status", "", "patch namespaces/status"},
		{"DELETE", "/api/v1/namespaces/ns1", "", "delete namespaces"},
		{"PATCH", "/apis/apps/v1/namespaces/ns1/deployments/d", "", "patch deployments.apps"},
		{"PUT", "/apis/apps/v1/namespaces/ns1/deployments/d/scale", "", "update deployments.apps/scale"},
		{"DELETE", "/apis/apps/v1/namespaces/ns1/deployments", "", "deletecollection deployments.apps"},
		{"POST", "/apis/networking.istio.io/v1/namespaces/ns1/destinationrules", "", "create destinationrules.networking.istio.io"},
		{"GET", "/apis/discovery.k8s.io/v1/endpointslices", "", "list endpointslices.discovery.k8s.io"},
		{"GET", "/apis/apps/v1", "", "get /apis"},
		{"GET", "/apis", "", "get /apis"},
		{"GET", "/api", "", "get /api"},
		{"GET", "/version", "", "get /version"},
		{"GET", "/api/v1/nodes/n1", "", "get nodes"},
	} {
		if got := VerbResource(tc.method, tc.path, tc.watch); got != tc.want {
			t.Errorf("VerbResource(%s %s watch=%q) = %q, want %q", tc.method, tc.path, tc.watch, got, tc.want)
		}
	}
}

// The counter sits on the transport of the clients ClientsForConfig builds: a real HTTP API (httptest) answers, and
// every request the typed client sends is counted once by verb and resource.
func TestClientsCountRequests(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/ns1/pods":
			_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}})
		case strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/ns1/pods/"):
			_ = json.NewEncoder(w).Encode(corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns1"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := NewClientsForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := c.Kube.CoreV1().Pods("ns1").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	total0, by0 := c.Requests.Counts()
	if _, err := c.Kube.CoreV1().Pods("ns1").Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Pods("ns1").Patch(ctx, "p", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Kube.CoreV1().Services("ns1").Get(ctx, "missing", metav1.GetOptions{}) // a 404 is a request too
	total, by := c.Requests.Counts()
	if total != 6 || by["list pods"] != 3 || by["get pods"] != 1 || by["patch pods"] != 1 || by["get services"] != 1 || len(by) != 4 {
		t.Errorf("counts = %d %v, want 6: 3 list pods, 1 get pods, 1 patch pods, 1 get services", total, by)
	}
	dt, dby := CountsSince(total, by, total0, by0)
	if dt != 3 || len(dby) != 3 || dby["list pods"] != 0 || dby["get pods"] != 1 {
		t.Errorf("since the lists: %d %v, want 3 without list pods", dt, dby)
	}
	// The map Counts returned is a copy.
	by["list pods"] = 99
	if _, again := c.Requests.Counts(); again["list pods"] != 3 {
		t.Errorf("Counts shares its map: %v", again)
	}
}
