package mesh

import (
	"context"
	"fmt"
	"sort"
	"strings"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mTLS modes of a PeerAuthentication as meshbench records them.
const (
	mtlsStrict     = "STRICT"
	mtlsPermissive = "PERMISSIVE"
	mtlsDisable    = "DISABLE"
)

// MTLS is the effective PeerAuthentication mode of one namespace and where it comes from.
type MTLS struct {
	Namespace string `json:"namespace"`
	// Mode is what the data plane applies: STRICT, PERMISSIVE or DISABLE for sidecars; STRICT or PERMISSIVE in the
	// ambient modes, where ztunnel knows only STRICT or not (a DISABLE policy is PERMISSIVE there, see Declared).
	Mode string `json:"mode"`
	// Declared is the policy's own mode when the data plane applies another (DISABLE under ztunnel), else "".
	Declared string `json:"declared,omitempty"`
	// Ambient is true when the mode is ztunnel's (the ambient modes): traffic between meshed pods is HBONE, mutual
	// TLS between the node proxies, whatever the mode; the mode decides only whether plaintext is refused.
	Ambient bool `json:"ambient,omitempty"`
	// Source is the policy that decided it ("PeerAuthentication istio-system/default (mesh-wide)"), or "no
	// PeerAuthentication (Istio's default)".
	Source string `json:"source"`
	// WorkloadPolicies counts PeerAuthentications with a workload selector in the namespace: they override the mode
	// for the pods they select and are not evaluated here.
	WorkloadPolicies int `json:"workloadPolicies,omitempty"`
	// OtherRevisions counts PeerAuthentications of the root namespace and of the namespace labelled istio.io/rev
	// with another revision: the chosen istiod ignores them.
	OtherRevisions int `json:"otherRevisions,omitempty"`
}

func (m MTLS) String() string {
	s := m.Mode + " (" + m.Source
	if m.Declared != "" {
		s += fmt.Sprintf(" says %s; ztunnel applies only STRICT or not: HBONE between the node proxies is mutual TLS, plaintext is accepted", m.Declared)
	}
	if m.WorkloadPolicies > 0 {
		s += fmt.Sprintf("; %d workload-level PeerAuthentication(s) not evaluated", m.WorkloadPolicies)
	}
	if m.OtherRevisions > 0 {
		s += fmt.Sprintf("; %d PeerAuthentication(s) of another istio.io/rev ignored", m.OtherRevisions)
	}
	return s + ")"
}

// MTLSView is whose view of the PeerAuthentications effectiveMTLS takes: the chosen control plane and the data plane
// that enforces them.
type MTLSView struct {
	// Revision is the chosen istiod's revision (IstioInfo.Revision, "default" for a non-revisioned install, which
	// runs with REVISION=default: istio-discovery templates/deployment.yaml); "" counts every policy.
	Revision string
	// Version is istiod's version; it decides whether the ambient index filters by revision.
	Version string
	// Ambient is true for the ambient modes (ambient, waypoint): ztunnel enforces the destination's policy.
	Ambient bool
}

// ambientFiltersByRevisionSince is, per minor, the first patch whose ambient index reads only its own revision's
// PeerAuthentications (istio/istio PR #56477, ambientindex.go; pinned in testdata/upstream/istio-patches.yaml): 1.24
// never does, minors after 1.26 always do.
var ambientFiltersByRevisionSince = map[int]int{24: -1, 25: 4, 26: 3}

// countsPeerAuthentication reports whether the chosen istiod reads pa for the view's data plane: its config store
// keeps pa without istio.io/rev or with its own revision (a tag's name is not resolved), the ambient index only from
// ambientFiltersByRevisionSince (docs/modes.md).
func (v MTLSView) countsPeerAuthentication(pa *securityv1.PeerAuthentication) bool {
	rev, labelled := pa.Labels[LabelRevision]
	if !labelled || v.Revision == "" || rev == v.Revision {
		return true
	}
	if v.Ambient {
		if maj, minor, ok := parseMajorMinor(v.Version); ok && maj == 1 {
			if since, listed := ambientFiltersByRevisionSince[minor]; listed && (since < 0 || versionParts(v.Version)[2] < since) {
				return true // this ambient index reads every revision's policies
			}
		}
	}
	return false
}

// effectiveMTLS computes a namespace's mode from the PeerAuthentications of the root namespace and of ns, composed
// as istiod does (namespace-wide over mesh-wide, oldest first, UNSET inherits, PERMISSIVE by default; in the ambient
// modes only STRICT or not: docs/modes.md). Selector policies are counted, not evaluated. Pure.
func effectiveMTLS(pas []*securityv1.PeerAuthentication, rootNS, ns string, v MTLSView) MTLS {
	out := MTLS{Namespace: ns, Mode: mtlsPermissive, Source: "no PeerAuthentication (Istio's default)", Ambient: v.Ambient}
	var mesh, nsWide []*securityv1.PeerAuthentication
	for _, pa := range pas {
		if pa == nil || pa.DeletionTimestamp != nil || (pa.Namespace != rootNS && pa.Namespace != ns) {
			continue
		}
		if !v.countsPeerAuthentication(pa) {
			out.OtherRevisions++
			continue
		}
		hasSelector := pa.Spec.GetSelector() != nil && len(pa.Spec.GetSelector().GetMatchLabels()) > 0
		switch {
		case pa.Namespace == rootNS && !hasSelector:
			mesh = append(mesh, pa)
		case pa.Namespace == ns && ns != rootNS && !hasSelector:
			nsWide = append(nsWide, pa)
		case pa.Namespace == ns && ns != rootNS && hasSelector:
			out.WorkloadPolicies++
		}
	}
	if m, ok := oldestMode(mesh); ok {
		out.Mode, out.Source = m.mode, "PeerAuthentication "+m.name+" (mesh-wide)"
	}
	if m, ok := oldestMode(nsWide); ok {
		out.Mode, out.Source = m.mode, "PeerAuthentication "+m.name+" (namespace-wide)"
	}
	if v.Ambient && out.Mode == mtlsDisable {
		out.Mode, out.Declared = mtlsPermissive, mtlsDisable
	}
	return out
}

type paMode struct{ mode, name string }

// oldestMode is the mode of the oldest policy (ties: by name) when it sets one; an UNSET mode inherits (ok false).
func oldestMode(pas []*securityv1.PeerAuthentication) (paMode, bool) {
	if len(pas) == 0 {
		return paMode{}, false
	}
	sort.SliceStable(pas, func(i, j int) bool {
		a, b := pas[i].CreationTimestamp, pas[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return pas[i].Name < pas[j].Name
	})
	pa := pas[0]
	switch pa.Spec.GetMtls().GetMode() {
	case securityv1beta1.PeerAuthentication_MutualTLS_STRICT:
		return paMode{mtlsStrict, pa.Namespace + "/" + pa.Name}, true
	case securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE:
		return paMode{mtlsPermissive, pa.Namespace + "/" + pa.Name}, true
	case securityv1beta1.PeerAuthentication_MutualTLS_DISABLE:
		return paMode{mtlsDisable, pa.Namespace + "/" + pa.Name}, true
	}
	return paMode{}, false
}

// DetectMTLS returns the effective modes of the namespaces, in the order given, as the view's istiod and data plane
// apply them. One cluster-wide list (so the cost does not grow with the app's namespaces), per namespace only where
// that is forbidden; without the PeerAuthentication CRD every mode is the default.
func DetectMTLS(ctx context.Context, ic istioclient.Interface, rootNS string, namespaces []string, v MTLSView) ([]MTLS, error) {
	if ic == nil {
		return nil, fmt.Errorf("detect mTLS: no Istio client")
	}
	var pas []*securityv1.PeerAuthentication
	list, err := ic.SecurityV1().PeerAuthentications(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		pas = list.Items
	case apierrors.IsNotFound(err):
		// CRD not installed
	case apierrors.IsForbidden(err):
		for _, ns := range append([]string{rootNS}, namespaces...) {
			list, err := ic.SecurityV1().PeerAuthentications(ns).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				break // CRD not installed
			}
			if err != nil {
				return nil, fmt.Errorf("list PeerAuthentications in %s: %w", ns, err)
			}
			pas = append(pas, list.Items...)
		}
	default:
		return nil, fmt.Errorf("list PeerAuthentications: %w", err)
	}
	out := make([]MTLS, len(namespaces))
	for i, ns := range namespaces {
		out[i] = effectiveMTLS(pas, rootNS, ns, v)
	}
	return out, nil
}

// SummarizeMTLS renders the namespaces' modes in one line: "STRICT (PeerAuthentication istio-system/default
// (mesh-wide))" when they agree, else one entry per namespace.
func SummarizeMTLS(ms []MTLS) string {
	if len(ms) == 0 {
		return ""
	}
	same := true
	for _, m := range ms[1:] {
		if m.String() != ms[0].String() {
			same = false
		}
	}
	if same {
		return ms[0].String()
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Namespace + ": " + m.String()
	}
	return strings.Join(parts, "; ")
}
