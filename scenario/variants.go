package scenario

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Variant is a set of mesh features measured on top of a mode, like a mode: same windows, repetitions and
// interleaving, compared with the plain mode (docs/variants.md). meshbench applies its settings after the mode is
// verified, verifies them, and removes them before the next case that does not name it.
type Variant struct {
	// Name names the variant in case IDs, results and the report: lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Modes are the modes it is measured in; each must be in spec.modes, and none is not one (no mesh to configure).
	Modes []Mode `json:"modes"`
	// MTLS is the PeerAuthentication mode of the app's namespaces: STRICT or PERMISSIVE.
	MTLS MTLSMode `json:"mtls,omitempty"`
	// Authorization adds generated AuthorizationPolicy rules that all allow the app's traffic.
	Authorization *Authorization `json:"authorization,omitempty"`
	// AccessLog turns Envoy's access log on for the app's proxies (Telemetry API, provider envoy).
	AccessLog bool `json:"accessLog,omitempty"`
}

// MTLSMode is a PeerAuthentication mode a variant sets.
type MTLSMode string

// The mTLS modes a variant can set.
const (
	MTLSStrict     MTLSMode = "STRICT"
	MTLSPermissive MTLSMode = "PERMISSIVE"
)

// Authorization is a variant's generated rules.
type Authorization struct {
	// Rules is how many rules the policy holds (1 to MaxAuthorizationRules); one allows the app's traffic, the
	// others match none of it, so every rule is evaluated and the load is unchanged.
	Rules int `json:"rules"`
	// Layer is what the rules match: L4 (source identities and namespaces: ztunnel or the sidecar enforces them) or
	// L7 (HTTP paths: the sidecar or the waypoint).
	Layer AuthzLayer `json:"layer,omitempty" mb:"defaulted"`
}

// AuthzLayer is the layer an authorization variant's rules match at.
type AuthzLayer string

// Authorization layers.
const (
	AuthzL4 AuthzLayer = "L4"
	AuthzL7 AuthzLayer = "L7"
)

// MaxAuthorizationRules bounds a variant's rule count: a policy of 5000 rules is about half a megabyte, well under
// the API server's object limit.
const MaxAuthorizationRules = 5000

// VariantNone is the plain mode's variant in cases and results: no variant.
const VariantNone = ""

func setVariantDefaults(vs []Variant) {
	for i := range vs {
		if a := vs[i].Authorization; a != nil && a.Layer == "" {
			a.Layer = AuthzL4
		}
	}
}

// validateVariants checks spec.variants against spec.modes and spec.waypoint.
func validateVariants(c *collector, p *field.Path, vs []Variant, modes []Mode, wp Waypoint) {
	for i, v := range vs {
		vp := p.Index(i)
		switch {
		case v.Name == "":
			c.add(vp.Child("name"), "is required; a short name such as \"strict\" or \"l7-100\" (used in case IDs)")
		case len(v.Name) > 30 || !nameRE.MatchString(v.Name):
			c.add(vp.Child("name"), "must be at most 30 lower-case letters, digits and '-', starting and ending alphanumeric (got %q)", v.Name)
		case slices.Contains(AllModes, Mode(v.Name)):
			c.add(vp.Child("name"), "%q is a mode's name; name the variant by its feature (e.g. \"strict\")", v.Name)
		}
		if slices.IndexFunc(vs, func(o Variant) bool { return o.Name == v.Name }) < i {
			c.add(vp.Child("name"), "%q names two variants; each name must be unique", v.Name)
		}
		if v.MTLS == "" && v.Authorization == nil && !v.AccessLog {
			c.add(vp, "sets no feature: set mtls, authorization or accessLog")
		}
		if v.MTLS != "" {
			c.oneOf(vp.Child("mtls"), string(v.MTLS), []string{string(MTLSStrict), string(MTLSPermissive)})
		}
		if a := v.Authorization; a != nil {
			c.intRange(vp.Child("authorization", "rules"), a.Rules, 1, MaxAuthorizationRules, "the number of generated rules")
			c.oneOf(vp.Child("authorization", "layer"), string(a.Layer), []string{string(AuthzL4), string(AuthzL7)})
		}
		if len(v.Modes) == 0 {
			c.add(vp.Child("modes"), "is required: the modes to measure the variant in (from spec.modes %v)", modes)
		}
		for j, m := range v.Modes {
			validateVariantMode(c, vp.Child("modes").Index(j), v, m, modes, wp)
			if slices.Index(v.Modes, m) < j {
				c.add(vp.Child("modes").Index(j), "lists %q twice", m)
			}
		}
	}
}

// validateVariantMode checks that mode m can carry variant v.
func validateVariantMode(c *collector, p *field.Path, v Variant, m Mode, modes []Mode, wp Waypoint) {
	switch {
	case !slices.Contains(modes, m):
		c.add(p, "mode %q is not in spec.modes %v: add it there (its installation is checked before the run)", m, modes)
		return
	case m == ModeNone:
		c.add(p, "mode none has no mesh to configure: measure the variant in sidecar, ambient or waypoint")
		return
	}
	if v.Authorization != nil && v.Authorization.Layer == AuthzL7 && m == ModeAmbient {
		c.add(p, "L7 rules need a waypoint: ztunnel enforces L4 rules only, and a plain ambient mode refuses L7 ones; use mode waypoint or authorization.layer L4")
	}
	if v.AccessLog && m == ModeAmbient {
		c.add(p, "the Telemetry API's access log is Envoy's (sidecars, waypoints); ztunnel's log is not configured by it: use mode sidecar or waypoint")
	}
	if m == ModeWaypoint && (v.Authorization != nil || v.AccessLog) && wp.Scope != WaypointPerNamespace {
		c.add(p, "the variant's policies attach to each namespace's waypoint: set waypoint.scope %s (got %s)", WaypointPerNamespace, wp.Scope)
	}
}

// variantsFor are the names of the variants measured in mode m, in spec order.
func variantsFor(vs []Variant, m Mode) []string {
	var out []string
	for _, v := range vs {
		if slices.Contains(v.Modes, m) {
			out = append(out, v.Name)
		}
	}
	return out
}

// Describe says what the variant sets, e.g. "mTLS STRICT, 100 L7 authorization rules, access log".
func (v Variant) Describe() string {
	var parts []string
	if v.MTLS != "" {
		parts = append(parts, "mTLS "+string(v.MTLS))
	}
	if a := v.Authorization; a != nil {
		parts = append(parts, fmt.Sprintf("%d %s authorization rules", a.Rules, a.Layer))
	}
	if v.AccessLog {
		parts = append(parts, "access log")
	}
	return strings.Join(parts, ", ")
}

// VariantNamed is the variant of that name (nil when there is none).
func (s *Spec) VariantNamed(name string) *Variant {
	for i := range s.Variants {
		if s.Variants[i].Name == name {
			return &s.Variants[i]
		}
	}
	return nil
}
