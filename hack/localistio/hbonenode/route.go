package hbonenode

import (
	"errors"
	"fmt"
	"net/netip"

	cniconfig "istio.io/istio/cni/pkg/config"
	"istio.io/istio/pkg/workloadapi"
)

// hbonePort is where HBONE is terminated: ztunnel's (and our) inbound port in every enrolled pod, and a waypoint's.
const hbonePort = cniconfig.ZtunnelInboundPort

// Route errors: a connection with no route is refused (ztunnel src/proxy/outbound.rs build_request).
var (
	ErrSelfCall          = errors.New("call to a loopback address")
	ErrNoHealthyUpstream = errors.New("service has no healthy endpoint for the port")
	ErrUnknownWaypoint   = errors.New("waypoint not found")
	ErrNoAddress         = errors.New("destination workload has no address")
)

// Source is the enrolled pod a connection comes from.
type Source struct {
	Namespace string
}

// Decision is where one outbound connection goes.
type Decision struct {
	Protocol Protocol       // ProtocolHBONE or ProtocolTCP
	Via      Via            // which kind of next hop
	NextHop  netip.AddrPort // the TCP peer: a waypoint's or a pod's 15008 for HBONE, the target itself for TCP
	// Authority is the HBONE CONNECT :authority: the address the app dialled when a waypoint is the next hop (the
	// waypoint's connect_authority filter takes it as the original destination), else the chosen pod's IP:port.
	Authority netip.AddrPort
	// SANs are the SPIFFE identities the HBONE peer may present: the next hop workload's and the service's
	// subject_alt_names.
	SANs []string
}

type resolution uint8

const (
	resolveStandard resolution = iota // an app's service port: the service must have it
	resolveWaypoint                   // a waypoint's HBONE port
)

// Route decides where a connection from src to dst goes, in ztunnel's order (src/proxy/outbound.rs build_request
// and src/state.rs find_upstream): a service VIP with a waypoint → that waypoint; a service VIP → one of its
// endpoints; a workload address with a workload waypoint → that waypoint; a workload address → the pod (HBONE when
// it is enrolled, plaintext when not); an unknown address → passthrough. pick chooses among endpoints (and weighted
// waypoints): the caller passes a random or round-robin number, tests a fixed one. Not modelled: network gateways,
// locality-ranked load balancing, endpoint capacity weights.
func Route(t *Tables, src Source, dst netip.AddrPort, pick uint32) (Decision, error) {
	if dst.Addr().IsLoopback() {
		return Decision{}, ErrSelfCall
	}
	if svc := t.serviceByVIP(dst.Addr(), src.Namespace); svc != nil {
		if gw := serviceWaypoint(svc, pick); gw != nil {
			hop, sans, err := t.waypoint(gw, pick)
			if err != nil {
				return Decision{}, fmt.Errorf("service %s: %w", svc.GetHostname(), err)
			}
			return Decision{Protocol: ProtocolHBONE, Via: ViaWaypoint, NextHop: hop, Authority: dst, SANs: sans}, nil
		}
		if svc.GetLoadBalancing().GetMode() == workloadapi.LoadBalancing_PASSTHROUGH {
			return Decision{Protocol: ProtocolTCP, Via: ViaPassthrough, NextHop: dst}, nil
		}
		wl, port, ok := t.pickEndpoint(svc, uint32(dst.Port()), resolveStandard, pick)
		if !ok {
			return Decision{}, fmt.Errorf("%w: %s:%d", ErrNoHealthyUpstream, svc.GetHostname(), dst.Port())
		}
		return t.toWorkload(wl, port, svc.GetSubjectAltNames())
	}
	wl := t.WorkloadByIP(dst.Addr())
	if wl == nil {
		return Decision{Protocol: ProtocolTCP, Via: ViaPassthrough, NextHop: dst}, nil
	}
	// Waypoint pods are never enrolled (their template sets istio.io/dataplane-mode: none), so a source here is
	// never the destination's own waypoint (ztunnel's check_from_waypoint).
	if gw := wl.GetWaypoint(); gw != nil {
		hop, sans, err := t.waypoint(gw, pick)
		if err != nil {
			return Decision{}, fmt.Errorf("workload %s/%s: %w", wl.GetNamespace(), wl.GetName(), err)
		}
		return Decision{Protocol: ProtocolHBONE, Via: ViaWaypoint, NextHop: hop, Authority: dst, SANs: sans}, nil
	}
	return t.toWorkload(wl, uint32(dst.Port()), nil)
}

// toWorkload sends to wl's port: HBONE to its 15008 when its pod is enrolled (tunnel_protocol HBONE), plaintext
// to the port otherwise (sidecar or non-mesh pods, as ztunnel does).
func (t *Tables) toWorkload(wl *workloadapi.Workload, port uint32, svcSANs []string) (Decision, error) {
	ips := workloadIPs(wl)
	if len(ips) == 0 {
		return Decision{}, fmt.Errorf("%w: %s/%s", ErrNoAddress, wl.GetNamespace(), wl.GetName())
	}
	target := netip.AddrPortFrom(ips[0], uint16(port))
	if wl.GetTunnelProtocol() != workloadapi.TunnelProtocol_HBONE {
		return Decision{Protocol: ProtocolTCP, Via: ViaDirect, NextHop: target}, nil
	}
	return Decision{
		Protocol:  ProtocolHBONE,
		Via:       ViaNode,
		NextHop:   netip.AddrPortFrom(ips[0], hbonePort),
		Authority: target,
		SANs:      append(append([]string(nil), svcSANs...), t.Identity(wl)),
	}, nil
}

// serviceWaypoint is the service's waypoint: one of weighted_waypoints by weight when set, else waypoint
// (ztunnel src/state.rs fetch_service_waypoint).
func serviceWaypoint(svc *workloadapi.Service, pick uint32) *workloadapi.GatewayAddress {
	var total uint64
	for _, w := range svc.GetWeightedWaypoints() {
		total += uint64(w.GetWeight())
	}
	if total > 0 {
		r := uint64(pick) % total
		for _, w := range svc.GetWeightedWaypoints() {
			if r < uint64(w.GetWeight()) {
				return w.GetDestination()
			}
			r -= uint64(w.GetWeight())
		}
	}
	return svc.GetWaypoint()
}

// waypoint resolves a GatewayAddress to one waypoint pod's HBONE address and the identities it may present
// (ztunnel src/state.rs fetch_waypoint: hostname → the waypoint Service's endpoints on its HBONE port; address →
// a VIP's endpoints or a workload).
func (t *Tables) waypoint(gw *workloadapi.GatewayAddress, pick uint32) (netip.AddrPort, []string, error) {
	port := gw.GetHboneMtlsPort()
	if port == 0 {
		port = hbonePort
	}
	var svc *workloadapi.Service
	switch d := gw.GetDestination().(type) {
	case *workloadapi.GatewayAddress_Hostname:
		svc = t.services[d.Hostname.GetNamespace()+"/"+d.Hostname.GetHostname()]
		if svc == nil {
			return netip.AddrPort{}, nil, fmt.Errorf("%w: service %s/%s", ErrUnknownWaypoint, d.Hostname.GetNamespace(), d.Hostname.GetHostname())
		}
	case *workloadapi.GatewayAddress_Address:
		ip, ok := netip.AddrFromSlice(d.Address.GetAddress())
		if !ok {
			return netip.AddrPort{}, nil, fmt.Errorf("%w: bad address %x", ErrUnknownWaypoint, d.Address.GetAddress())
		}
		if svc = t.serviceByVIP(ip, ""); svc == nil {
			wl := t.WorkloadByIP(ip)
			if wl == nil {
				return netip.AddrPort{}, nil, fmt.Errorf("%w: %s", ErrUnknownWaypoint, ip)
			}
			return netip.AddrPortFrom(ip.Unmap(), uint16(port)), []string{t.Identity(wl)}, nil
		}
	default:
		return netip.AddrPort{}, nil, fmt.Errorf("%w: empty gateway address", ErrUnknownWaypoint)
	}
	wl, target, ok := t.pickEndpoint(svc, port, resolveWaypoint, pick)
	if !ok {
		return netip.AddrPort{}, nil, fmt.Errorf("%w: %s has no healthy endpoint on port %d", ErrUnknownWaypoint, svc.GetHostname(), port)
	}
	ips := workloadIPs(wl)
	return netip.AddrPortFrom(ips[0], uint16(target)), append(append([]string(nil), svc.GetSubjectAltNames()...), t.Identity(wl)), nil
}

// pickEndpoint chooses one endpoint of svc for service port svcPort and its target port (ztunnel src/state.rs
// load_balance and find_upstream_from_service: the endpoint's own port mapping first, then the service's target
// port; a named target port needs the endpoint's mapping).
func (t *Tables) pickEndpoint(svc *workloadapi.Service, svcPort uint32, mode resolution, pick uint32) (*workloadapi.Workload, uint32, bool) {
	key := svc.GetNamespace() + "/" + svc.GetHostname()
	var svcTarget uint32
	svcHasPort := false
	for _, p := range svc.GetPorts() {
		if p.GetServicePort() == svcPort {
			svcHasPort, svcTarget = true, p.GetTargetPort()
		}
	}
	if mode == resolveStandard && !svcHasPort {
		return nil, 0, false
	}
	allowUnhealthy := svc.GetLoadBalancing().GetHealthPolicy() == workloadapi.LoadBalancing_ALLOW_ALL
	type candidate struct {
		wl   *workloadapi.Workload
		port uint32
	}
	var cands []candidate
	for _, wl := range t.endpointsOf(key) {
		if wl == nil || len(workloadIPs(wl)) == 0 {
			continue
		}
		if wl.GetStatus() != workloadapi.WorkloadStatus_HEALTHY && !allowUnhealthy {
			continue
		}
		epPort, epHas := uint32(0), false
		for _, p := range wl.GetServices()[key].GetPorts() {
			if p.GetServicePort() == svcPort && p.GetTargetPort() != 0 {
				epPort, epHas = p.GetTargetPort(), true
			}
		}
		appTunnel := wl.GetApplicationTunnel() != nil
		switch {
		case epHas:
		case svcTarget > 0:
			epPort = svcTarget
		case mode == resolveWaypoint && appTunnel:
			epPort = svcPort
		default:
			continue // a named target port this endpoint does not map
		}
		if mode == resolveWaypoint && !svcHasPort && !appTunnel {
			continue
		}
		cands = append(cands, candidate{wl, epPort})
	}
	if len(cands) == 0 {
		return nil, 0, false
	}
	c := cands[int(pick%uint32(len(cands)))]
	return c.wl, c.port, true
}
