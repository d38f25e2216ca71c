package hbonenode

import (
	"net/netip"
	"slices"
	"strings"

	"istio.io/istio/pkg/spiffe"
	"istio.io/istio/pkg/workloadapi/security"
)

// Conn is what an authorization decision sees of one inbound connection (ztunnel src/rbac.rs Connection).
type Conn struct {
	Src netip.AddrPort
	Dst netip.AddrPort // the pod's own address and the app port (for HBONE: the CONNECT :authority)
	// SrcIdentity is the peer certificate's SPIFFE URI ("spiffe://td/ns/x/sa/y"); empty for plaintext.
	SrcIdentity string
}

// Verdict is the outcome of Allowed.
type Verdict struct {
	Allowed bool
	// Policy is "<ns>/<name>" of the DENY policy that matched, or of the ALLOW policy that admitted the
	// connection; empty when no policy applied or no ALLOW policy matched.
	Policy string
}

// Allowed evaluates the policies that apply to the destination workload (Tables.ApplicablePolicies) with
// ztunnel's semantics (src/state.rs assert_rbac): a matching DENY denies; with no ALLOW policy the connection is
// allowed; otherwise a matching ALLOW allows and anything else is denied. Dry-run policies never decide. STRICT
// arrives as istiod's DENY istio_converted_static_strict (not_principals [presence]): plaintext has no principal.
func Allowed(policies []*security.Authorization, c Conn) Verdict {
	id := parseIdentity(c.SrcIdentity)
	haveAllow := false
	for _, p := range policies {
		if p.GetDryRun() {
			continue
		}
		if p.GetAction() == security.Action_DENY && policyMatches(p, c, id) {
			return Verdict{Allowed: false, Policy: policyKey(p)}
		}
		haveAllow = haveAllow || p.GetAction() == security.Action_ALLOW
	}
	if !haveAllow {
		return Verdict{Allowed: true}
	}
	for _, p := range policies {
		if !p.GetDryRun() && p.GetAction() == security.Action_ALLOW && policyMatches(p, c, id) {
			return Verdict{Allowed: true, Policy: policyKey(p)}
		}
	}
	return Verdict{Allowed: false}
}

// parseIdentity is the SPIFFE identity s names, or nil (plaintext, or not a SPIFFE identity).
func parseIdentity(s string) *spiffe.Identity {
	if s == "" {
		return nil
	}
	id, err := spiffe.ParseIdentity(s)
	if err != nil {
		return nil
	}
	return &id
}

func policyKey(p *security.Authorization) string { return p.GetNamespace() + "/" + p.GetName() }

// policyMatches: groups are OR-ed, a group's rules AND-ed, a rule's matches OR-ed, a match's fields AND-ed (ztunnel
// src/rbac.rs Authorization::matches). A policy without groups matches nothing; a rule without matches matches
// everything; a match without fields matches nothing.
func policyMatches(p *security.Authorization, c Conn, id *spiffe.Identity) bool {
	for _, g := range p.GetGroups() {
		all := true
		for _, r := range g.GetRules() {
			matched := len(r.GetMatches()) == 0
			for _, m := range r.GetMatches() {
				if !matchEmpty(m) && matchOne(m, c, id) {
					matched = true
					break
				}
			}
			if !matched {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func matchOne(m *security.Match, c Conn, id *spiffe.Identity) bool {
	principal, ns := "", ""
	if id != nil {
		principal, ns = c.SrcIdentity, id.Namespace
	}
	return field(m.GetDestinationIps(), m.GetNotDestinationIps(), func(a *security.Address) bool { return prefixContains(a, c.Dst.Addr()) }) &&
		field(m.GetSourceIps(), m.GetNotSourceIps(), func(a *security.Address) bool { return prefixContains(a, c.Src.Addr()) }) &&
		field(m.GetDestinationPorts(), m.GetNotDestinationPorts(), func(p uint32) bool { return p == uint32(c.Dst.Port()) }) &&
		field(m.GetServiceAccounts(), m.GetNotServiceAccounts(), func(s *security.ServiceAccountMatch) bool {
			return id != nil && s.GetNamespace() == id.Namespace && s.GetServiceAccount() == id.ServiceAccount
		}) &&
		field(known(m.GetPrincipals()), known(m.GetNotPrincipals()), func(s *security.StringMatch) bool { return matchPrincipal(s, principal) }) &&
		field(known(m.GetNamespaces()), known(m.GetNotNamespaces()), func(s *security.StringMatch) bool { return matchString(s, ns) })
}

// field is one field of a match: any positive entry must match (when there are some) and no negative one may.
func field[T any](positive, negative []T, pred func(T) bool) bool {
	if len(positive) > 0 && !slices.ContainsFunc(positive, pred) {
		return false
	}
	return !slices.ContainsFunc(negative, pred)
}

func matchEmpty(m *security.Match) bool {
	return len(known(m.GetNamespaces())) == 0 && len(known(m.GetNotNamespaces())) == 0 &&
		len(m.GetServiceAccounts()) == 0 && len(m.GetNotServiceAccounts()) == 0 &&
		len(known(m.GetPrincipals())) == 0 && len(known(m.GetNotPrincipals())) == 0 &&
		len(m.GetSourceIps()) == 0 && len(m.GetNotSourceIps()) == 0 &&
		len(m.GetDestinationIps()) == 0 && len(m.GetNotDestinationIps()) == 0 &&
		len(m.GetDestinationPorts()) == 0 && len(m.GetNotDestinationPorts()) == 0
}

// known drops string matches without a match type (ztunnel ignores them when converting).
func known(ms []*security.StringMatch) []*security.StringMatch {
	if !slices.ContainsFunc(ms, func(m *security.StringMatch) bool { return m.GetMatchType() == nil }) {
		return ms
	}
	return slices.DeleteFunc(slices.Clone(ms), func(m *security.StringMatch) bool { return m.GetMatchType() == nil })
}

// matchPrincipal: Istio's principals omit "spiffe://"; an identity without it (or none) matches no principal.
func matchPrincipal(m *security.StringMatch, identity string) bool {
	rest, ok := strings.CutPrefix(identity, spiffe.URIPrefix)
	return ok && matchString(m, rest)
}

func matchString(m *security.StringMatch, s string) bool {
	switch t := m.GetMatchType().(type) {
	case *security.StringMatch_Exact:
		return s == t.Exact
	case *security.StringMatch_Prefix:
		return strings.HasPrefix(s, t.Prefix)
	case *security.StringMatch_Suffix:
		return strings.HasSuffix(s, t.Suffix)
	case *security.StringMatch_Presence:
		return s != ""
	}
	return false
}

func prefixContains(a *security.Address, ip netip.Addr) bool {
	base, ok := netip.AddrFromSlice(a.GetAddress())
	if !ok {
		return false
	}
	p, err := base.Unmap().Prefix(int(a.GetLength()))
	return err == nil && p.Contains(ip.Unmap())
}
