package workloads

import (
	"strconv"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// loadTargetOf is spec load target lt as the target's: its URL as given, or the address of its Service in namespace ns
// in the protocol's form (http://fqdn:port/path, fqdn:port for gRPC, tcp://fqdn:port). defaultPath is load.path,
// for an http target without a path. It is pure.
func loadTargetOf(lt scenario.LoadTarget, ns, domain, defaultPath string) target.LoadTarget {
	e := target.LoadTarget{Name: lt.Name, URL: lt.URL, Protocol: lt.Protocol, Weight: lt.Weight, Headers: lt.Headers}
	if e.Protocol == "" {
		e.Protocol = scenario.ProtocolHTTP
	}
	if e.Weight < 1 {
		e.Weight = 1
	}
	if e.Name == "" {
		e.Name = lt.Service
	}
	if lt.Service == "" {
		return e
	}
	port := lt.Port
	if port == 0 {
		switch e.Protocol {
		case scenario.ProtocolGRPC:
			port = 8079
		case scenario.ProtocolTCP:
			port = 8078
		default:
			port = 80
		}
	}
	host := fqdn(lt.Service, ns, domain) + ":" + strconv.Itoa(port)
	switch e.Protocol {
	case scenario.ProtocolGRPC:
		e.URL = host
	case scenario.ProtocolTCP:
		e.URL = "tcp://" + host
	default:
		path := lt.Path
		if path == "" {
			path = defaultPath
		}
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		e.URL = "http://" + host + path
	}
	return e
}

// setLoadTargets sets t's load targets, and its entry (URL, and service and namespace when the first is a Service) from
// the first of them.
func setLoadTargets(t *target.Target, es []target.LoadTarget, first scenario.LoadTarget, firstNS string) {
	t.LoadTargets = es
	if len(es) == 0 {
		return
	}
	t.EntryURL = es[0].URL
	if first.Service != "" {
		t.EntryService, t.EntryNamespace = first.Service, firstNS
	}
}
