package mesh

import (
	"errors"
	"strings"
	"testing"
)

// istioWaypointStats is the shape of istio-proxy's request metric on a waypoint: istio_requests_total with
// reporter="waypoint" and the labels Istio's own ambient test queries (istio/istio
// tests/integration/ambient/baseline_test.go buildQuery, at the hack/localistio pin), beside series of other
// reporters and Envoy's own counters, which must not count.
const istioWaypointStats = `# TYPE istio_requests_total counter
istio_requests_total{reporter="waypoint",request_protocol="http",response_code="200",response_flags="-",connection_security_policy="mutual_tls",destination_service_name="chain-1",source_workload="chain-0"} 1200
istio_requests_total{reporter="waypoint",request_protocol="http",response_code="503",response_flags="UF",connection_security_policy="mutual_tls",destination_service_name="chain-1",source_workload="chain-0"} 3
istio_requests_total{reporter="destination",request_protocol="http",response_code="200",destination_service_name="chain-1"} 999
# TYPE envoy_http_downstream_rq_total counter
envoy_http_downstream_rq_total{http_conn_manager_prefix="inbound_10.96.0.20_8080"} 50
`

// upstreamEnvoyWaypointStats is upstream Envoy as the test bed's waypoint (no Istio stats filter; http.* kept by
// the waypoint's proxyStatsMatcher): the inner HCMs' prefix is inbound_<ip>_<port> (istio/istio
// pilot/pkg/networking/core/listener_waypoint.go, inboundChainConfig.StatPrefix), the CONNECT terminator's is
// connect_terminate and does not count requests.
const upstreamEnvoyWaypointStats = `# TYPE envoy_http_downstream_rq_total counter
envoy_http_downstream_rq_total{http_conn_manager_prefix="connect_terminate"} 40
envoy_http_downstream_rq_total{http_conn_manager_prefix="inbound_10.96.0.20_8080"} 700
envoy_http_downstream_rq_total{http_conn_manager_prefix="inbound_10.96.0.21_8080"} 500
`

func TestParseWaypointRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		n          float64
		c          requestCounter
		ok         bool
	}{
		{"istio-proxy", istioWaypointStats, 1203, istioRequests, true},
		{"upstream envoy", upstreamEnvoyWaypointStats, 1200, envoyInboundRequests, true},
		{"neither", "# TYPE envoy_server_state gauge\nenvoy_server_state 0\n", 0, "", false},
	} {
		n, c, ok, err := ParseWaypointRequests([]byte(tc.text))
		if err != nil || n != tc.n || c != tc.c || ok != tc.ok {
			t.Errorf("%s: %v %q %v %v, want %v %q %v", tc.name, n, c, ok, err, tc.n, tc.c, tc.ok)
		}
	}
	if _, _, _, err := ParseWaypointRequests([]byte("<html>")); err == nil {
		t.Error("no error on a text that is not Prometheus'")
	}
}

func TestWaypointServed(t *testing.T) {
	t.Parallel()
	count := func(by map[string]float64) WaypointCount {
		return WaypointCount{Counter: envoyInboundRequests, ByGateway: by}
	}
	before := count(map[string]float64{"a/waypoint": 100})
	// A chain of 3 services: every request the load sent crosses the waypoint 3 times.
	if served, err := WaypointServed(before, count(map[string]float64{"a/waypoint": 100 + 3000}), 1000); err != nil || served != 3000 {
		t.Errorf("served through the waypoint: %v %v", served, err)
	}
	served, err := WaypointServed(before, count(map[string]float64{"a/waypoint": 112}), 1000)
	var bypass *waypointBypassedError
	if !errors.As(err, &bypass) || served != 12 {
		t.Fatalf("a bypassed waypoint: %v %v", served, err)
	}
	for _, want := range []string{"waypoint a/waypoint served 12 requests during the load (lead-in and cool-down included) while its measured window alone completed 1000", "measured ambient, not waypoint",
		LabelUseWaypoint, LabelWaypointFor} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %s", want, err)
		}
	}
	if _, err := WaypointServed(WaypointCount{Unread: map[string]string{"a/waypoint": "no counter"}}, WaypointCount{}, 1000); !errors.Is(err, ErrWaypointUncounted) {
		t.Errorf("unreadable counters: %v, want ErrWaypointUncounted", err)
	}
}
