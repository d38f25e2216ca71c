package hbonenode

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"istio.io/istio/pkg/workloadapi"
)

// Fixtures in the shape istiod sends them (pilot/pkg/serviceregistry/ambient at the pin): resource names
// Kubernetes//Pod/<ns>/<name> and <ns>/<hostname>; waypoints referenced by hostname on port 15008
// (waypoints.go getGatewayAddress); trust domain and "default" service account elided.

func addr(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

func pod(ns, name, ip string, tunnel workloadapi.TunnelProtocol, sa string, services map[string]*workloadapi.PortList) (string, *workloadapi.Address) {
	return "Kubernetes//Pod/" + ns + "/" + name, &workloadapi.Address{Type: &workloadapi.Address_Workload{Workload: &workloadapi.Workload{
		Uid: "Kubernetes//Pod/" + ns + "/" + name, Name: name, Namespace: ns, Addresses: [][]byte{addr(ip)},
		TunnelProtocol: tunnel, ServiceAccount: sa, Services: services,
	}}}
}

func service(ns, host, vip string, ports ...*workloadapi.Port) (string, *workloadapi.Address) {
	return ns + "/" + host, &workloadapi.Address{Type: &workloadapi.Address_Service{Service: &workloadapi.Service{
		Name: host, Namespace: ns, Hostname: host, Addresses: []*workloadapi.NetworkAddress{{Address: addr(vip)}}, Ports: ports,
	}}}
}

func waypointRef(ns, host string) *workloadapi.GatewayAddress {
	return &workloadapi.GatewayAddress{Destination: &workloadapi.GatewayAddress_Hostname{Hostname: &workloadapi.NamespacedHostname{Namespace: ns, Hostname: host}}, HboneMtlsPort: 15008}
}

func portList(pairs ...uint32) *workloadapi.PortList {
	pl := &workloadapi.PortList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		pl.Ports = append(pl.Ports, &workloadapi.Port{ServicePort: pairs[i], TargetPort: pairs[i+1]})
	}
	return pl
}

const (
	svcKey = "app/server.app.svc.cluster.local"
	wpKey  = "app/waypoint.app.svc.cluster.local"
)

// meshTables: an ambient server behind service server (VIP 10.96.0.10, 8080 → 8080) with two endpoints, one
// unhealthy pod, a sidecar pod (no HBONE), a waypoint deployment, and a named-port service.
func meshTables(t *testing.T, mutate func(name string, a *workloadapi.Address)) *Tables {
	t.Helper()
	tb := NewTables("cluster.local")
	put := func(name string, a *workloadapi.Address) {
		if mutate != nil {
			mutate(name, a)
		}
		tb.PutAddress(name, a)
	}
	put(service("app", "server.app.svc.cluster.local", "10.96.0.10", &workloadapi.Port{ServicePort: 8080, TargetPort: 8080}))
	put(pod("app", "server-a", "10.244.1.5", workloadapi.TunnelProtocol_HBONE, "server", map[string]*workloadapi.PortList{svcKey: portList(8080, 8080)}))
	put(pod("app", "server-b", "10.244.0.6", workloadapi.TunnelProtocol_HBONE, "server", map[string]*workloadapi.PortList{svcKey: portList(8080, 8080)}))
	name, down := pod("app", "server-c", "10.244.0.7", workloadapi.TunnelProtocol_HBONE, "server", map[string]*workloadapi.PortList{svcKey: portList(8080, 8080)})
	down.GetWorkload().Status = workloadapi.WorkloadStatus_UNHEALTHY
	put(name, down)
	put(pod("side", "legacy", "10.244.1.9", workloadapi.TunnelProtocol_NONE, "", nil))
	put(service("app", "waypoint.app.svc.cluster.local", "10.96.0.20", &workloadapi.Port{ServicePort: 15008, TargetPort: 15008}))
	put(pod("app", "waypoint-0", "10.244.0.30", workloadapi.TunnelProtocol_NONE, "waypoint", map[string]*workloadapi.PortList{wpKey: portList(15008, 15008)}))
	put(service("app", "named.app.svc.cluster.local", "10.96.0.11", &workloadapi.Port{ServicePort: 80}))
	put(pod("app", "named-0", "10.244.1.8", workloadapi.TunnelProtocol_HBONE, "named", map[string]*workloadapi.PortList{"app/named.app.svc.cluster.local": portList(80, 9090)}))
	return tb
}

func TestRoute(t *testing.T) {
	ap := netip.MustParseAddrPort
	serverSA := "spiffe://cluster.local/ns/app/sa/server"
	waypointSA := "spiffe://cluster.local/ns/app/sa/waypoint"
	withServiceWaypoint := func(name string, a *workloadapi.Address) {
		if name == svcKey {
			a.GetService().Waypoint = waypointRef("app", "waypoint.app.svc.cluster.local")
			a.GetService().SubjectAltNames = []string{"spiffe://cluster.local/ns/app/sa/extra"}
		}
	}
	withWorkloadWaypoint := func(name string, a *workloadapi.Address) {
		if name == "Kubernetes//Pod/app/server-a" {
			a.GetWorkload().Waypoint = waypointRef("app", "waypoint.app.svc.cluster.local")
		}
	}
	cases := []struct {
		name    string
		mutate  func(string, *workloadapi.Address)
		src     string
		dst     string
		pick    uint32
		want    Decision
		wantErr error
	}{
		{name: "service VIP, no waypoint: HBONE to an endpoint's node proxy", src: "app", dst: "10.96.0.10:8080", pick: 0,
			want: Decision{ProtocolHBONE, ViaNode, ap("10.244.1.5:15008"), ap("10.244.1.5:8080"), []string{serverSA}}},
		{name: "pick chooses the other healthy endpoint; the unhealthy one never", src: "app", dst: "10.96.0.10:8080", pick: 1,
			want: Decision{ProtocolHBONE, ViaNode, ap("10.244.0.6:15008"), ap("10.244.0.6:8080"), []string{serverSA}}},
		{name: "pick wraps around the two healthy endpoints", src: "app", dst: "10.96.0.10:8080", pick: 2,
			want: Decision{ProtocolHBONE, ViaNode, ap("10.244.1.5:15008"), ap("10.244.1.5:8080"), []string{serverSA}}},
		{name: "named target port: the endpoint's mapping", src: "app", dst: "10.96.0.11:80",
			want: Decision{ProtocolHBONE, ViaNode, ap("10.244.1.8:15008"), ap("10.244.1.8:9090"), []string{"spiffe://cluster.local/ns/app/sa/named"}}},
		{name: "service waypoint: HBONE to the waypoint pod, :authority the VIP", mutate: withServiceWaypoint, src: "other", dst: "10.96.0.10:8080",
			want: Decision{ProtocolHBONE, ViaWaypoint, ap("10.244.0.30:15008"), ap("10.96.0.10:8080"), []string{waypointSA}}},
		{name: "pod address, no waypoint: HBONE to its node proxy", src: "app", dst: "10.244.1.5:8080",
			want: Decision{ProtocolHBONE, ViaNode, ap("10.244.1.5:15008"), ap("10.244.1.5:8080"), []string{serverSA}}},
		{name: "pod address with a workload waypoint", mutate: withWorkloadWaypoint, src: "app", dst: "10.244.1.5:8080",
			want: Decision{ProtocolHBONE, ViaWaypoint, ap("10.244.0.30:15008"), ap("10.244.1.5:8080"), []string{waypointSA}}},
		{name: "service address ignores a workload waypoint", mutate: withWorkloadWaypoint, src: "app", dst: "10.96.0.10:8080", pick: 0,
			want: Decision{ProtocolHBONE, ViaNode, ap("10.244.1.5:15008"), ap("10.244.1.5:8080"), []string{serverSA}}},
		{name: "pod without HBONE (sidecar): plaintext", src: "app", dst: "10.244.1.9:80",
			want: Decision{Protocol: ProtocolTCP, Via: ViaDirect, NextHop: ap("10.244.1.9:80")}},
		{name: "unknown address: passthrough", src: "app", dst: "93.184.216.34:443",
			want: Decision{Protocol: ProtocolTCP, Via: ViaPassthrough, NextHop: ap("93.184.216.34:443")}},
		{name: "passthrough load balancing", src: "app", dst: "10.96.0.10:8080", mutate: func(name string, a *workloadapi.Address) {
			if name == svcKey {
				a.GetService().LoadBalancing = &workloadapi.LoadBalancing{Mode: workloadapi.LoadBalancing_PASSTHROUGH}
			}
		}, want: Decision{Protocol: ProtocolTCP, Via: ViaPassthrough, NextHop: ap("10.96.0.10:8080")}},
		{name: "loopback refused", src: "app", dst: "127.0.0.1:15001", wantErr: ErrSelfCall},
		{name: "port not on the service", src: "app", dst: "10.96.0.10:9999", wantErr: ErrNoHealthyUpstream},
		{name: "service without healthy endpoints", src: "app", dst: "10.96.0.10:8080", mutate: func(name string, a *workloadapi.Address) {
			if w := a.GetWorkload(); w != nil && w.GetServices()[svcKey] != nil {
				w.Status = workloadapi.WorkloadStatus_UNHEALTHY
			}
		}, wantErr: ErrNoHealthyUpstream},
		{name: "waypoint service unknown: refused, never bypassed", src: "app", dst: "10.96.0.10:8080", mutate: func(name string, a *workloadapi.Address) {
			if name == svcKey {
				a.GetService().Waypoint = waypointRef("app", "missing.app.svc.cluster.local")
			}
		}, wantErr: ErrUnknownWaypoint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := meshTables(t, c.mutate)
			got, err := Route(tb, Source{Namespace: c.src}, ap(c.dst), c.pick)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Route = %+v, %v; want error %v", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			if got.Protocol != c.want.Protocol || got.Via != c.want.Via || got.NextHop != c.want.NextHop ||
				got.Authority != c.want.Authority || !slices.Equal(got.SANs, c.want.SANs) {
				t.Errorf("Route =\n  %+v\nwant\n  %+v", got, c.want)
			}
		})
	}
}

func TestRouteServiceSANsAndWeightedWaypoints(t *testing.T) {
	tb := meshTables(t, func(name string, a *workloadapi.Address) {
		if name == svcKey {
			a.GetService().SubjectAltNames = []string{"spiffe://cluster.local/ns/app/sa/alias"}
			a.GetService().WeightedWaypoints = []*workloadapi.WeightedWaypoint{
				{Destination: waypointRef("app", "missing.app.svc.cluster.local"), Weight: 0},
				{Destination: waypointRef("app", "waypoint.app.svc.cluster.local"), Weight: 3},
			}
		}
	})
	d, err := Route(tb, Source{Namespace: "app"}, netip.MustParseAddrPort("10.96.0.10:8080"), 7)
	if err != nil || d.Via != ViaWaypoint || d.NextHop != netip.MustParseAddrPort("10.244.0.30:15008") {
		t.Fatalf("weighted waypoint: %+v, %v", d, err)
	}
	tb = meshTables(t, func(name string, a *workloadapi.Address) {
		if name == svcKey {
			a.GetService().SubjectAltNames = []string{"spiffe://cluster.local/ns/app/sa/alias"}
		}
	})
	d, err = Route(tb, Source{Namespace: "app"}, netip.MustParseAddrPort("10.96.0.10:8080"), 0)
	want := []string{"spiffe://cluster.local/ns/app/sa/alias", "spiffe://cluster.local/ns/app/sa/server"}
	if err != nil || !slices.Equal(d.SANs, want) {
		t.Fatalf("service SANs: %+v, %v; want SANs %v", d, err, want)
	}
}

func TestServiceByVIPPrefersSourceNamespace(t *testing.T) {
	tb := NewTables("cluster.local")
	tb.PutAddress(service("a", "s.a.svc.cluster.local", "10.96.0.50", &workloadapi.Port{ServicePort: 80, TargetPort: 80}))
	tb.PutAddress(service("b", "s.b.svc.cluster.local", "10.96.0.50", &workloadapi.Port{ServicePort: 80, TargetPort: 80}))
	for _, ns := range []string{"a", "b"} {
		if got := tb.serviceByVIP(netip.MustParseAddr("10.96.0.50"), ns).GetNamespace(); got != ns {
			t.Errorf("from %s: service in %s", ns, got)
		}
	}
	if got := tb.serviceByVIP(netip.MustParseAddr("10.96.0.50"), "c").GetNamespace(); got != "a" {
		t.Errorf("from c: service in %s, want the first key (a)", got)
	}
}

func TestTablesUpdatesAndRetain(t *testing.T) {
	tb := meshTables(t, nil)
	// An update that moves a pod's IP must drop the old index.
	name, moved := pod("app", "server-a", "10.244.1.50", workloadapi.TunnelProtocol_HBONE, "server", nil)
	tb.PutAddress(name, moved)
	if tb.WorkloadByIP(netip.MustParseAddr("10.244.1.5")) != nil {
		t.Error("old IP still indexed after an update")
	}
	if tb.WorkloadByIP(netip.MustParseAddr("10.244.1.50")) == nil {
		t.Error("new IP not indexed")
	}
	if got := len(tb.endpointsOf(svcKey)); got != 2 {
		t.Errorf("server endpoints after server-a left the service = %d, want 2 (b, c)", got)
	}
	// The first response of a new stream is the whole world: what it lacks goes.
	keep := map[string]bool{svcKey: true, "Kubernetes//Pod/app/server-b": true}
	if dropped := tb.RetainAddresses(keep); dropped != 7 {
		t.Errorf("RetainAddresses dropped %d, want 7", dropped)
	}
	w, s, _ := tb.Counts()
	if w != 1 || s != 1 || tb.WorkloadByName("app", "server-a") != nil || tb.serviceByVIP(netip.MustParseAddr("10.96.0.20"), "") != nil {
		t.Errorf("after retain: %d workloads, %d services", w, s)
	}
	tb.DeleteAddress(svcKey)
	tb.DeleteAddress("Kubernetes//Pod/app/server-b")
	tb.DeleteAddress("never-existed")
	if w, s, _ := tb.Counts(); w != 0 || s != 0 || len(tb.svcByVIP) != 0 || len(tb.wlByIP) != 0 || len(tb.endpoints) != 0 || len(tb.wlByName) != 0 {
		t.Errorf("indexes left after deleting everything: %+v", tb)
	}
}

func TestIdentityDefaults(t *testing.T) {
	tb := NewTables("cluster.local")
	if got := tb.Identity(&workloadapi.Workload{Namespace: "ns"}); got != "spiffe://cluster.local/ns/ns/sa/default" {
		t.Errorf("elided identity = %s", got)
	}
	if got := tb.Identity(&workloadapi.Workload{Namespace: "ns", TrustDomain: "td", ServiceAccount: "sa"}); got != "spiffe://td/ns/ns/sa/sa" {
		t.Errorf("identity = %s", got)
	}
}
