package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Variant is a set of mesh features measured on top of a mode, like a mode: same windows, repetitions and
// interleaving, compared with the plain mode (docs/variants.md). meshbench applies its settings after the mode is
// verified, verifies them, and removes them before the next case that does not name it.
type Variant struct {
	// Name names the variant in case IDs, results and the report: lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Modes are the modes it is measured in; each must be in spec.modes, and none only for a variant of load settings
	// alone (no mesh to configure there).
	Modes []Mode `json:"modes"`
	// MTLS is the PeerAuthentication mode of the app's namespaces: STRICT or PERMISSIVE.
	MTLS MTLSMode `json:"mtls,omitempty"`
	// Authorization adds generated AuthorizationPolicy rules that all allow the app's traffic.
	Authorization *Authorization `json:"authorization,omitempty"`
	// AccessLog turns Envoy's access log on for the app's proxies (Telemetry API, provider envoy).
	AccessLog bool `json:"accessLog,omitempty"`
	// Tracing sends the app's proxies' spans (Telemetry API, a Zipkin provider) to a span sink the run deploys.
	Tracing *Tracing `json:"tracing,omitempty"`
	// Load changes how the load is sent in the variant's cases (connection churn, body size, HTTP version); every
	// other load setting is spec.load's. A variant of load settings only is measured in mode none too.
	Load *VariantLoad `json:"load,omitempty"`
}

// VariantLoad is a variant's change to the load: what the mesh costs under that traffic shape.
type VariantLoad struct {
	// KeepAlive false opens a new connection for every request (connection churn); true is spec.load's way and not a
	// variant.
	KeepAlive *bool `json:"keepAlive,omitempty"`
	// PayloadBytes replaces spec.load.payloadBytes: every http request is a POST of that many bytes.
	PayloadBytes *int `json:"payloadBytes,omitempty"`
	// HTTP is the HTTP version of the http load targets: "1.1" (spec.load's) or "2" (cleartext HTTP/2 with prior
	// knowledge, h2c: the server must speak it, as fortio's and Envoy's do).
	HTTP HTTPVersion `json:"http,omitempty"`
}

// HTTPVersion is the HTTP version a load variant speaks.
type HTTPVersion string

// HTTP versions of a load variant.
const (
	HTTP11 HTTPVersion = "1.1"
	HTTP2  HTTPVersion = "2"
)

// Tracing is a variant's tracing: what the spans cost the proxies at a sampling rate.
type Tracing struct {
	// SamplingPercent is the share of requests traced, 0 to 100 (Telemetry randomSamplingPercentage): 0 configures
	// the tracer and samples nothing, 100 traces every request.
	SamplingPercent *float64 `json:"samplingPercent"`
}

// Sampling is the sampling percentage (0 when unset: validation refuses that).
func (t *Tracing) Sampling() float64 {
	if t == nil || t.SamplingPercent == nil {
		return 0
	}
	return *t.SamplingPercent
}

// NoKeepAlive reports whether the load opens a new connection per request.
func (l *VariantLoad) NoKeepAlive() bool { return l != nil && l.KeepAlive != nil && !*l.KeepAlive }

// MeshFeatures reports whether v configures the mesh (mTLS, authorization, access log, tracing), as opposed to only
// the load.
func (v Variant) MeshFeatures() bool {
	return v.MTLS != "" || v.Authorization != nil || v.AccessLog || v.Tracing != nil
}

// EnvoyPolicies reports whether v sets what attaches to Envoy proxies only (authorization rules, the Telemetry API's
// access log and tracing): in mode waypoint it attaches to the waypoints.
func (v Variant) EnvoyPolicies() bool {
	return v.Authorization != nil || v.AccessLog || v.Tracing != nil
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
	// Rules is how many rules the policy holds (1 to 5000); one allows the app's traffic, the
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
func validateVariants(c *collector, p *field.Path, vs []Variant, modes []Mode, wp Waypoint, l LoadSpec) {
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
		if !v.MeshFeatures() && v.Load == nil {
			c.add(vp, "sets no feature: set mtls, authorization, accessLog, tracing or load")
		}
		if v.Load != nil {
			validateVariantLoad(c, vp.Child("load"), *v.Load, l)
		}
		if v.MTLS != "" {
			c.oneOf(vp.Child("mtls"), string(v.MTLS), []string{string(MTLSStrict), string(MTLSPermissive)})
		}
		if a := v.Authorization; a != nil {
			c.intRange(vp.Child("authorization", "rules"), a.Rules, 1, MaxAuthorizationRules, "the number of generated rules")
			c.oneOf(vp.Child("authorization", "layer"), string(a.Layer), []string{string(AuthzL4), string(AuthzL7)})
		}
		if v.Tracing != nil {
			validateTracing(c, vp.Child("tracing"), *v.Tracing, l)
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
	case m == ModeNone && v.MeshFeatures():
		c.add(p, "mode none has no mesh to configure: measure the variant in sidecar, ambient or waypoint (only a variant of load settings alone runs in none)")
		return
	}
	if v.Authorization != nil && v.Authorization.Layer == AuthzL7 && m == ModeAmbient {
		c.add(p, "L7 rules need a waypoint: ztunnel enforces L4 rules only, and a plain ambient mode refuses L7 ones; use mode waypoint or authorization.layer L4")
	}
	if v.AccessLog && m == ModeAmbient {
		c.add(p, "the Telemetry API's access log is Envoy's (sidecars, waypoints); ztunnel's log is not configured by it: use mode sidecar or waypoint")
	}
	if v.Tracing != nil && m == ModeAmbient {
		c.add(p, "tracing is Envoy's (sidecars, waypoints): ztunnel sends no spans; use mode sidecar or waypoint")
	}
	if m == ModeWaypoint && v.EnvoyPolicies() && wp.Scope != WaypointPerNamespace {
		c.add(p, "the variant's policies attach to each namespace's waypoint: set waypoint.scope %s (got %s)", WaypointPerNamespace, wp.Scope)
	}
}

// validateTracing checks a tracing variant against spec.load l: its proof counts traces per request, so every load
// target must be HTTP (gRPC included); a tcp target carries no trace.
func validateTracing(c *collector, p *field.Path, t Tracing, l LoadSpec) {
	if t.SamplingPercent == nil {
		c.add(p.Child("samplingPercent"), "is required: the share of requests traced, 0 to 100 (e.g. 1)")
	} else if s := *t.SamplingPercent; s < 0 || s > 100 {
		c.add(p.Child("samplingPercent"), "must be 0 to 100 (got %v)", s)
	}
	for i, lt := range l.Targets {
		if lt.Protocol == ProtocolTCP {
			c.add(p, "spec.load.targets[%d] is tcp, which carries no trace, and the variant is proven by the traces its requests start: measure tracing in a scenario without tcp targets", i)
		}
	}
}

// maxVariantPayload bounds a load variant's body as spec.load.payloadBytes is bounded.
const maxVariantPayload = 10 << 20

// validateVariantLoad checks a variant's load settings against spec.load l.
func validateVariantLoad(c *collector, p *field.Path, vl VariantLoad, l LoadSpec) {
	if vl.KeepAlive == nil && vl.PayloadBytes == nil && vl.HTTP == "" {
		c.add(p, "sets nothing: set keepAlive false, payloadBytes or http \"2\"")
	}
	if vl.KeepAlive != nil && *vl.KeepAlive {
		c.add(p.Child("keepAlive"), "true is how spec.load already sends (connections kept alive): set false for a new connection per request, or remove it")
	}
	if vl.PayloadBytes != nil {
		c.intRange(p.Child("payloadBytes"), *vl.PayloadBytes, 0, maxVariantPayload, "the request body in bytes (0 = GET)")
		if *vl.PayloadBytes == l.PayloadBytes {
			c.add(p.Child("payloadBytes"), "%d is spec.load.payloadBytes already: set another size, or remove it", l.PayloadBytes)
		}
	}
	if vl.HTTP != "" {
		c.oneOf(p.Child("http"), string(vl.HTTP), []string{string(HTTP11), string(HTTP2)})
		if vl.HTTP == HTTP11 {
			c.add(p.Child("http"), "\"1.1\" is how spec.load already sends: set \"2\" for HTTP/2, or remove it")
		}
	}
	if vl.HTTP == HTTP2 && vl.NoKeepAlive() {
		// fortio's HTTP/2 client (golang.org/x/net/http2.Transport) multiplexes every request on its connection:
		// keepAlive false would be ignored (the load's proof saw 2 sockets for 750 requests).
		c.add(p.Child("keepAlive"), "false cannot go with http \"2\": fortio's HTTP/2 client sends every request on one connection; measure churn in a variant of its own (HTTP/1.1)")
	}
	if (vl.HTTP == HTTP2 || vl.NoKeepAlive() || vl.PayloadBytes != nil) && !hasHTTPTarget(l) {
		c.add(p, "changes HTTP requests, and spec.load.targets has no http target: its grpc and tcp targets are sent as they are")
	}
}

// hasHTTPTarget reports whether the load sends HTTP requests (the catalog apps' entry, or an http target).
func hasHTTPTarget(l LoadSpec) bool {
	if len(l.Targets) == 0 {
		return true
	}
	return slices.ContainsFunc(l.Targets, func(t LoadTarget) bool { return t.Protocol == "" || t.Protocol == ProtocolHTTP })
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
	if v.Tracing != nil {
		parts = append(parts, fmt.Sprintf("tracing at %s %% to the run's span sink", strconv.FormatFloat(v.Tracing.Sampling(), 'f', -1, 64)))
	}
	if l := v.Load; l != nil {
		if l.NoKeepAlive() {
			parts = append(parts, "a new connection per request")
		}
		if l.PayloadBytes != nil {
			parts = append(parts, fmt.Sprintf("request body %d bytes", *l.PayloadBytes))
		}
		if l.HTTP == HTTP2 {
			parts = append(parts, "HTTP/2 (h2c)")
		}
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
