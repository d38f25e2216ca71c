package mesh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kube"
)

// requestCounter names where a waypoint's request count came from.
type requestCounter string

// The counters a waypoint's requests are read from, the first present wins.
const (
	// istioRequests is Istio's own request metric, which istio-proxy's stats filter writes with reporter="waypoint"
	// (istio/proxy source/extensions/filters/http/istio_stats; Istio's bootstrap keeps the "reporter=" prefix).
	istioRequests requestCounter = `istio_requests_total{reporter="waypoint"}`
	// envoyInboundRequests is Envoy's count of requests its inbound HTTP connection managers received
	// (listener_waypoint.go StatPrefix "inbound_..."); only where the waypoint's stats matcher keeps http.* (docs/modes.md).
	envoyInboundRequests requestCounter = `envoy_http_downstream_rq_total{http_conn_manager_prefix=~"inbound_.*"}`
)

// ParseWaypointRequests reads a waypoint's request count from its Prometheus stats text: istioRequests summed when
// present, else envoyInboundRequests summed. ok is false when the text has neither. It is pure.
func ParseWaypointRequests(text []byte) (n float64, c requestCounter, ok bool, err error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return 0, "", false, fmt.Errorf("parse waypoint stats: %w", err)
	}
	if f, has := fams["istio_requests_total"]; has {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reporter" && l.GetValue() == "waypoint" {
					n, ok = n+metricValue(m), true
				}
			}
		}
		if ok {
			return n, istioRequests, true, nil
		}
	}
	if f, has := fams["envoy_http_downstream_rq_total"]; has {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "http_conn_manager_prefix" && strings.HasPrefix(l.GetValue(), "inbound_") {
					n, ok = n+metricValue(m), true
				}
			}
		}
		if ok {
			return n, envoyInboundRequests, true, nil
		}
	}
	return 0, "", false, nil
}

// WaypointCount is the requests the waypoints of a target had served at one moment, per Gateway.
type WaypointCount struct {
	Counter requestCounter
	// ByGateway is the sum over each Gateway's pods ("ns/name").
	ByGateway map[string]float64
	// Unread says why a Gateway's count is missing (no counter in its stats, or the stats could not be read).
	Unread map[string]string
}

// WaypointRequests reads the request counters of every pod of the waypoints refs (Envoy's port, then the agent's).
func (s *Switcher) WaypointRequests(ctx context.Context, refs []WaypointRef) WaypointCount {
	out := WaypointCount{ByGateway: map[string]float64{}, Unread: map[string]string{}}
	for _, r := range refs {
		key := r.Namespace + "/" + r.Name
		pods, err := s.Clients.Kube.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GatewayNameLabel + "=" + r.Name})
		if err != nil {
			out.Unread[key] = err.Error()
			continue
		}
		if len(pods.Items) == 0 {
			out.Unread[key] = "no pod"
			continue
		}
		for _, p := range pods.Items {
			n, c, why := s.readWaypointRequests(ctx, &p)
			if why != "" {
				out.Unread[key] = fmt.Sprintf("pod %s: %s", p.Name, why)
				continue
			}
			out.ByGateway[key] += n
			out.Counter = c
		}
	}
	return out
}

func (s *Switcher) readWaypointRequests(ctx context.Context, p *corev1.Pod) (float64, requestCounter, string) {
	var whys []string
	for _, port := range []int{EnvoyStatsPort, agentStatsPort} {
		body, err := kube.ProxyGet(ctx, s.Clients.Kube, "pods", p.Namespace, fmt.Sprintf("%s:%d", p.Name, port), statsPath, nil)
		if err != nil {
			whys = append(whys, fmt.Sprintf(":%d: %v", port, err))
			continue
		}
		n, c, ok, err := ParseWaypointRequests(body)
		switch {
		case err != nil:
			whys = append(whys, fmt.Sprintf(":%d: %v", port, err))
		case !ok:
			whys = append(whys, fmt.Sprintf(":%d: neither %s nor %s", port, istioRequests, envoyInboundRequests))
		default:
			return n, c, ""
		}
	}
	return 0, "", strings.Join(whys, "; ")
}

// waypointBypassedError fails a waypoint case whose waypoints did not serve the load's requests: it measured
// ambient (ztunnel alone), not waypoint.
type waypointBypassedError struct {
	Counter  requestCounter
	Served   float64 // requests the waypoints served during the load (every Gateway together)
	Requests int64   // requests the load's measured phase completed
	Gateways []string
}

func (e *waypointBypassedError) Error() string {
	return fmt.Sprintf("waypoint %s served %.0f requests during the load (lead-in and cool-down included) while its measured window alone completed %d (counter %s): traffic bypasses the waypoint, "+
		"so the case measured ambient, not waypoint. Likely causes: the app's namespace or Services lack %s=<gateway> "+
		"(or carry %s=none), the Gateway's %s does not cover the traffic (service traffic needs service or all), or the "+
		"clients call pod IPs where the waypoint serves Services",
		strings.Join(e.Gateways, ", "), e.Served, e.Requests, e.Counter, LabelUseWaypoint, LabelUseWaypoint, LabelWaypointFor)
}

// ErrWaypointUncounted is returned when no waypoint's request count could be read: the path cannot be proved.
var ErrWaypointUncounted = errors.New("no waypoint request counter could be read")

// WaypointServed judges the counts around a load: every request the load completed must have crossed a waypoint
// at least once (a chain's hops add more), so fewer than 90 % of them is a bypass. It returns the requests served.
// It is pure.
func WaypointServed(before, after WaypointCount, requests int64) (float64, error) {
	var served float64
	var gws []string
	for gw, n := range after.ByGateway {
		if b, ok := before.ByGateway[gw]; ok {
			served += n - b
			gws = append(gws, gw)
		}
	}
	if len(gws) == 0 {
		return 0, ErrWaypointUncounted
	}
	if requests > 0 && served < 0.9*float64(requests) {
		slices.Sort(gws)
		return served, &waypointBypassedError{Counter: after.Counter, Served: served, Requests: requests, Gateways: gws}
	}
	return served, nil
}
