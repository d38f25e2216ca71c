package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// configzServer answers like an API server: GET /api/v1/nodes and the nodes/proxy /configz of each node (the
// kubelet's KubeletConfiguration as JSON, k8s.io/kubernetes pkg/kubelet/server/server.go InstallDebuggingHandlers).
func configzServer(t *testing.T, domains map[string]string) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/nodes" {
			var items []string
			for _, n := range []string{"node1", "node2"} {
				if _, ok := domains[n]; ok {
					items = append(items, `{"metadata":{"name":"`+n+`"}}`)
				}
			}
			_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","items":[` + strings.Join(items, ",") + `]}`))
			return
		}
		for n, d := range domains {
			if r.URL.Path == "/api/v1/nodes/"+n+"/proxy/configz" {
				if d == "" {
					http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
					return
				}
				_, _ = w.Write([]byte(`{"kubeletconfig":{"enableServer":true,"clusterDomain":"` + d + `","clusterDNS":["10.96.0.10"]}}`))
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func TestDetectClusterDomain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		domains map[string]string
		want    string
		err     string
	}{
		{"custom domain", map[string]string{"node1": "corp.internal", "node2": "corp.internal"}, "corp.internal", ""},
		{"trailing dot trimmed", map[string]string{"node1": "cluster.local."}, "cluster.local", ""},
		{"one node unreadable", map[string]string{"node1": "", "node2": "k8s.example"}, "k8s.example", ""},
		{"nodes disagree", map[string]string{"node1": "a.local", "node2": "b.local"}, "", "set spec.workload.clusterDomain"},
		{"none readable", map[string]string{"node1": ""}, "", "node node1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DetectClusterDomain(context.Background(), configzServer(t, tc.domains))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := parseKubeletConfigz([]byte(`{"kubeletconfig":{}}`)); err == nil {
		t.Error("a configz without clusterDomain must be an error")
	}
}
