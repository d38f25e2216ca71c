package hbonenode

import (
	"cmp"
	"net/netip"
	"slices"

	"istio.io/istio/pkg/spiffe"
	"istio.io/istio/pkg/workloadapi"
	"istio.io/istio/pkg/workloadapi/security"
)

// Tables is the node proxy's copy of what istiod's workload discovery (WDS) sends to ztunnel: workloads, services
// and authorization policies, indexed the way Route and the RBAC lookup read them. It is a plain value: not safe for
// concurrent use (wds.go guards it), and the tests build it directly.
//
// Names: a Workload's resource name is its uid, a Service's is "<ns>/<hostname>", a policy's "<ns>/<name>"
// (istio pilot/pkg/model/service.go at the pin); deletes carry only the name, so every map is keyed by it.
type Tables struct {
	// TrustDomain is the mesh's trust domain: istiod elides a workload's trust_domain when it is this one.
	TrustDomain string

	workloads map[string]*workloadapi.Workload // by uid
	wlByIP    map[netip.Addr]string
	wlByName  map[string]string // "<ns>/<pod name>" -> uid
	services  map[string]*workloadapi.Service
	svcByVIP  map[netip.Addr][]string        // VIP -> service keys, sorted
	endpoints map[string]map[string]struct{} // service key -> uids of the workloads that list it
	policies  map[string]*security.Authorization
	kinds     map[string]addressKind // Address resource name -> which table holds it
}

type addressKind uint8

const (
	kindWorkload addressKind = iota + 1
	kindService
)

// NewTables returns empty tables for a mesh whose trust domain is td.
func NewTables(td string) *Tables {
	return &Tables{
		TrustDomain: td,
		workloads:   map[string]*workloadapi.Workload{},
		wlByIP:      map[netip.Addr]string{},
		wlByName:    map[string]string{},
		services:    map[string]*workloadapi.Service{},
		svcByVIP:    map[netip.Addr][]string{},
		endpoints:   map[string]map[string]struct{}{},
		policies:    map[string]*security.Authorization{},
		kinds:       map[string]addressKind{},
	}
}

// PutAddress adds or replaces the Address resource called name.
func (t *Tables) PutAddress(name string, a *workloadapi.Address) {
	t.DeleteAddress(name)
	switch {
	case a.GetWorkload() != nil:
		t.putWorkload(name, a.GetWorkload())
	case a.GetService() != nil:
		t.putService(name, a.GetService())
	}
}

// DeleteAddress removes the Address resource called name (a no-op for an unknown name).
func (t *Tables) DeleteAddress(name string) {
	switch t.kinds[name] {
	case kindWorkload:
		w := t.workloads[name]
		for _, ip := range workloadIPs(w) {
			if t.wlByIP[ip] == name {
				delete(t.wlByIP, ip)
			}
		}
		if k := w.GetNamespace() + "/" + w.GetName(); t.wlByName[k] == name {
			delete(t.wlByName, k)
		}
		for svc := range w.GetServices() {
			delete(t.endpoints[svc], name)
			if len(t.endpoints[svc]) == 0 {
				delete(t.endpoints, svc)
			}
		}
		delete(t.workloads, name)
	case kindService:
		s := t.services[name]
		for _, ip := range serviceVIPs(s) {
			t.svcByVIP[ip] = slices.DeleteFunc(t.svcByVIP[ip], func(k string) bool { return k == name })
			if len(t.svcByVIP[ip]) == 0 {
				delete(t.svcByVIP, ip)
			}
		}
		delete(t.services, name)
	}
	delete(t.kinds, name)
}

func (t *Tables) putWorkload(uid string, w *workloadapi.Workload) {
	t.kinds[uid] = kindWorkload
	t.workloads[uid] = w
	for _, ip := range workloadIPs(w) {
		t.wlByIP[ip] = uid
	}
	t.wlByName[w.GetNamespace()+"/"+w.GetName()] = uid
	for svc := range w.GetServices() {
		if t.endpoints[svc] == nil {
			t.endpoints[svc] = map[string]struct{}{}
		}
		t.endpoints[svc][uid] = struct{}{}
	}
}

func (t *Tables) putService(name string, s *workloadapi.Service) {
	t.kinds[name] = kindService
	t.services[name] = s
	for _, ip := range serviceVIPs(s) {
		keys := append(t.svcByVIP[ip], name)
		slices.Sort(keys)
		t.svcByVIP[ip] = slices.Compact(keys)
	}
}

// PutPolicy adds or replaces the Authorization resource called name.
func (t *Tables) PutPolicy(name string, p *security.Authorization) { t.policies[name] = p }

// DeletePolicy removes the Authorization resource called name.
func (t *Tables) DeletePolicy(name string) { delete(t.policies, name) }

// RetainAddresses drops every Address resource not in keep: istiod's first response on a new stream holds the
// whole world, but it only reports removals of what the client says it has (pkg/adsc says nothing on reconnect).
func (t *Tables) RetainAddresses(keep map[string]bool) (dropped int) {
	for name := range t.kinds {
		if !keep[name] {
			t.DeleteAddress(name)
			dropped++
		}
	}
	return dropped
}

// RetainPolicies is RetainAddresses for Authorization resources.
func (t *Tables) RetainPolicies(keep map[string]bool) (dropped int) {
	for name := range t.policies {
		if !keep[name] {
			delete(t.policies, name)
			dropped++
		}
	}
	return dropped
}

// Counts returns how many workloads, services and policies the tables hold.
func (t *Tables) Counts() (workloads, services, policies int) {
	return len(t.workloads), len(t.services), len(t.policies)
}

// WorkloadByName returns the workload of pod ns/name, or nil.
func (t *Tables) WorkloadByName(ns, name string) *workloadapi.Workload {
	return t.workloads[t.wlByName[ns+"/"+name]]
}

// WorkloadByIP returns the workload with that address, or nil.
func (t *Tables) WorkloadByIP(ip netip.Addr) *workloadapi.Workload {
	return t.workloads[t.wlByIP[ip.Unmap()]]
}

// serviceByVIP returns the service with that VIP, preferring one in namespace ns when several share it (ztunnel
// src/state/service.rs get_best_by_vip), or nil.
func (t *Tables) serviceByVIP(ip netip.Addr, ns string) *workloadapi.Service {
	keys := t.svcByVIP[ip.Unmap()]
	for _, k := range keys {
		if t.services[k].GetNamespace() == ns {
			return t.services[k]
		}
	}
	if len(keys) > 0 {
		return t.services[keys[0]]
	}
	return nil
}

// endpointsOf returns the workloads that list service key svc, sorted by uid (so a pick is reproducible).
func (t *Tables) endpointsOf(svc string) []*workloadapi.Workload {
	uids := make([]string, 0, len(t.endpoints[svc]))
	for uid := range t.endpoints[svc] {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	out := make([]*workloadapi.Workload, 0, len(uids))
	for _, uid := range uids {
		out = append(out, t.workloads[uid])
	}
	return out
}

// Identity is the SPIFFE identity of w: istiod elides the mesh's trust domain and the "default" service account.
func (t *Tables) Identity(w *workloadapi.Workload) string {
	td, sa := w.GetTrustDomain(), w.GetServiceAccount()
	if td == "" {
		td = t.TrustDomain
	}
	if sa == "" {
		sa = "default"
	}
	return spiffe.Identity{TrustDomain: td, Namespace: w.GetNamespace(), ServiceAccount: sa}.String()
}

// ApplicablePolicies returns the policies ztunnel evaluates for a connection to w (src/state.rs assert_rbac):
// those scoped to w's namespace, the global ones, then those istiod lists on w. Names not (yet) received are
// skipped, as ztunnel does.
func (t *Tables) ApplicablePolicies(w *workloadapi.Workload) []*security.Authorization {
	var ns, global []*security.Authorization
	for _, p := range t.policies {
		switch p.GetScope() {
		case security.Scope_NAMESPACE:
			if p.GetNamespace() == w.GetNamespace() {
				ns = append(ns, p)
			}
		case security.Scope_GLOBAL:
			global = append(global, p)
		}
	}
	byName := func(a, b *security.Authorization) int {
		return cmp.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	}
	slices.SortFunc(ns, byName)
	slices.SortFunc(global, byName)
	out := append(ns, global...)
	for _, name := range w.GetAuthorizationPolicies() {
		if p := t.policies[name]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

func workloadIPs(w *workloadapi.Workload) []netip.Addr {
	var out []netip.Addr
	for _, b := range w.GetAddresses() {
		if ip, ok := netip.AddrFromSlice(b); ok {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

func serviceVIPs(s *workloadapi.Service) []netip.Addr {
	var out []netip.Addr
	for _, a := range s.GetAddresses() {
		if ip, ok := netip.AddrFromSlice(a.GetAddress()); ok {
			out = append(out, ip.Unmap())
		}
	}
	return out
}
