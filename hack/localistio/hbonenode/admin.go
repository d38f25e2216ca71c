package hbonenode

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyHandler is :15021/healthz/ready, what the DaemonSet's readiness probe asks: 200 once ready() is nil.
func ReadyHandler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz/ready", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// AdminHandler is :15020: /metrics (Prometheus), /debug/certs (the certificates held, PEM chains as istiod
// returned them) and /debug/wds (what workload discovery says, summarised), for the e2e checks.
func AdminHandler(m *Metrics, certs *Certs, wds workloadView) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/certs", func(w http.ResponseWriter, _ *http.Request) {
		out := []CertSummary{}
		for _, c := range certs.All() {
			out = append(out, CertSummary{Identity: c.Identity, NotBefore: c.NotBefore, NotAfter: c.NotAfter, Chain: c.Chain})
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("/debug/wds", func(w http.ResponseWriter, _ *http.Request) {
		var s WDSSummary
		wds.Read(func(t *Tables) { s = t.Summary() })
		writeJSON(w, s)
	})
	return mux
}

// CertSummary is one entry of /debug/certs.
type CertSummary struct {
	Identity  string    `json:"identity"`
	NotBefore time.Time `json:"notBefore"`
	NotAfter  time.Time `json:"notAfter"`
	Chain     []string  `json:"chain"`
}

// WDSSummary is /debug/wds.
type WDSSummary struct {
	Workloads []WorkloadSummary `json:"workloads"`
	Services  []ServiceSummary  `json:"services"`
	Policies  []string          `json:"policies"`
}

// WorkloadSummary is one workload of /debug/wds.
type WorkloadSummary struct {
	UID       string   `json:"uid"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
	Identity  string   `json:"identity"`
	Tunnel    string   `json:"tunnel"`
	Node      string   `json:"node,omitempty"`
	Waypoint  bool     `json:"waypoint,omitempty"`
	Services  []string `json:"services,omitempty"`
	Policies  []string `json:"policies,omitempty"`
}

// ServiceSummary is one service of /debug/wds.
type ServiceSummary struct {
	Key      string   `json:"key"`
	VIPs     []string `json:"vips"`
	Waypoint bool     `json:"waypoint,omitempty"`
}

// Summary lists the tables sorted by key.
func (t *Tables) Summary() WDSSummary {
	s := WDSSummary{Workloads: []WorkloadSummary{}, Services: []ServiceSummary{}, Policies: []string{}}
	for uid, w := range t.workloads {
		ws := WorkloadSummary{UID: uid, Namespace: w.GetNamespace(), Name: w.GetName(), Identity: t.Identity(w),
			Tunnel: w.GetTunnelProtocol().String(), Node: w.GetNode(), Waypoint: w.GetWaypoint() != nil,
			Policies: w.GetAuthorizationPolicies()}
		for _, ip := range workloadIPs(w) {
			ws.Addresses = append(ws.Addresses, ip.String())
		}
		for svc := range w.GetServices() {
			ws.Services = append(ws.Services, svc)
		}
		slices.Sort(ws.Services)
		s.Workloads = append(s.Workloads, ws)
	}
	for key, svc := range t.services {
		ss := ServiceSummary{Key: key, Waypoint: svc.GetWaypoint() != nil || len(svc.GetWeightedWaypoints()) > 0}
		for _, ip := range serviceVIPs(svc) {
			ss.VIPs = append(ss.VIPs, ip.String())
		}
		s.Services = append(s.Services, ss)
	}
	for name := range t.policies {
		s.Policies = append(s.Policies, name)
	}
	slices.SortFunc(s.Workloads, func(a, b WorkloadSummary) int { return strings.Compare(a.UID, b.UID) })
	slices.SortFunc(s.Services, func(a, b ServiceSummary) int { return strings.Compare(a.Key, b.Key) })
	slices.Sort(s.Policies)
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
