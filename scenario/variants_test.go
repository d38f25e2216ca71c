package scenario

import (
	"slices"
	"strings"
	"testing"
)

const variantsBase = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: variants}
spec:
  workload: {app: fortio-chain}
  modes: [sidecar, ambient, waypoint]
  load: {qps: [100]}
  windows: {repetitions: 2}
`

// A variant is interleaved like a mode, next to its own mode: a serpentine order keeps the switch between a mode and
// its variants a policy change.
func TestVariantCases(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(variantsBase + `  variants:
  - {name: strict, modes: [sidecar, ambient], mtls: STRICT}
  - {name: l7-100, modes: [waypoint], authorization: {rules: 100, layer: L7}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(s)
	var ids []string
	switches := 0
	for _, c := range p.Cases {
		ids = append(ids, c.ID)
		if c.Switch {
			switches++
		}
		if (c.Variant != VariantNone) != strings.Contains(c.ID, "+") {
			t.Errorf("%s: variant %q", c.ID, c.Variant)
		}
	}
	want := []string{
		"single.sidecar.q100.r1", "single.sidecar+strict.q100.r1", "single.ambient.q100.r1", "single.ambient+strict.q100.r1",
		"single.waypoint.q100.r1", "single.waypoint+l7-100.q100.r1",
		"single.waypoint+l7-100.q100.r2", "single.waypoint.q100.r2", "single.ambient+strict.q100.r2", "single.ambient.q100.r2",
		"single.sidecar+strict.q100.r2", "single.sidecar.q100.r2",
	}
	if !slices.Equal(ids, want) {
		t.Errorf("cases\n%q\nwant\n%q", ids, want)
	}
	if switches != len(want)-1 { // every case but the r1/r2 boundary switches
		t.Errorf("%d switches, want %d", switches, len(want)-1)
	}
	if s.Spec.Variants[0].Authorization != nil || s.Spec.Variants[1].Authorization.Layer != AuthzL7 {
		t.Errorf("variants %+v", s.Spec.Variants)
	}
	if !strings.Contains(p.Summary(), "(+ 2 variant(s))") || !strings.Contains(p.Table(), "sidecar+strict") {
		t.Errorf("summary %q\n%s", p.Summary(), p.Table())
	}
}

func TestVariantLayerDefaultsToL4(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(variantsBase + "  variants: [{name: l4-10, modes: [ambient], authorization: {rules: 10}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Spec.Variants[0].Authorization.Layer; got != AuthzL4 {
		t.Errorf("layer %q, want %q", got, AuthzL4)
	}
}

func TestVariantsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, path, want string }{
		{"  variants: [{name: l7, modes: [ambient], authorization: {rules: 1, layer: L7}}]\n", "spec.variants[0].modes[0]", "L7 rules need a waypoint"},
		{"  variants: [{name: log, modes: [ambient], accessLog: true}]\n", "spec.variants[0].modes[0]", "use mode sidecar or waypoint"},
		{"  variants: [{name: x, modes: [none], mtls: STRICT}]\n", "spec.variants[0].modes[0]", "not in spec.modes"},
		{"  variants: [{name: x, modes: [sidecar]}]\n", "spec.variants[0]", "sets no feature"},
		{"  variants: [{name: x, modes: [sidecar], mtls: strict}]\n", "spec.variants[0].mtls", `must be one of "STRICT", "PERMISSIVE"`},
		{"  variants: [{name: x, modes: [sidecar], authorization: {rules: 0}}]\n", "spec.variants[0].authorization.rules", "between 1 and 5000"},
		{"  variants: [{name: x, modes: [sidecar], authorization: {rules: 1, layer: L3}}]\n", "spec.variants[0].authorization.layer", "must be one of"},
		{"  variants: [{name: Strict, modes: [sidecar], mtls: STRICT}]\n", "spec.variants[0].name", "lower-case"},
		{"  variants: [{name: sidecar, modes: [sidecar], mtls: STRICT}]\n", "spec.variants[0].name", "a mode's name"},
		{"  variants: [{modes: [sidecar], mtls: STRICT}]\n", "spec.variants[0].name", "is required"},
		{"  variants: [{name: a, mtls: STRICT}]\n", "spec.variants[0].modes", "is required"},
		{"  variants: [{name: a, modes: [sidecar], mtls: STRICT}, {name: a, modes: [ambient], mtls: STRICT}]\n", "spec.variants[1].name", "unique"},
		{"  variants: [{name: a, modes: [sidecar, sidecar], mtls: STRICT}]\n", "spec.variants[0].modes[1]", "twice"},
		{"  waypoint: {scope: shared}\n  variants: [{name: a, modes: [waypoint], accessLog: true}]\n", "spec.variants[0].modes[0]", "set waypoint.scope per-namespace"},
		{"  variants: [{name: a, modes: [sidecar], load: {}}]\n", "spec.variants[0].load", "sets nothing"},
		{"  variants: [{name: a, modes: [sidecar], load: {keepAlive: true}}]\n", "spec.variants[0].load.keepAlive", "set false for a new connection per request"},
		{"  variants: [{name: a, modes: [sidecar], load: {http: \"1.1\"}}]\n", "spec.variants[0].load.http", "set \"2\" for HTTP/2"},
		{"  variants: [{name: a, modes: [sidecar], load: {http: \"3\"}}]\n", "spec.variants[0].load.http", "must be one of"},
		{"  variants: [{name: a, modes: [sidecar], load: {payloadBytes: -1}}]\n", "spec.variants[0].load.payloadBytes", "between 0 and"},
		{"  variants: [{name: a, modes: [sidecar], load: {payloadBytes: 0}}]\n", "spec.variants[0].load.payloadBytes", "spec.load.payloadBytes already"},
		{"  variants: [{name: a, modes: [sidecar], load: {keepAlive: false, http: \"2\"}}]\n", "spec.variants[0].load.keepAlive", "cannot go with http \"2\""},
		{"  variants: [{name: t, modes: [sidecar], tracing: {}}]\n", "spec.variants[0].tracing.samplingPercent", "is required"},
		{"  variants: [{name: t, modes: [sidecar], tracing: {samplingPercent: 101}}]\n", "spec.variants[0].tracing.samplingPercent", "must be 0 to 100"},
		{"  variants: [{name: t, modes: [sidecar], tracing: {samplingPercent: -1}}]\n", "spec.variants[0].tracing.samplingPercent", "must be 0 to 100"},
		{"  variants: [{name: t, modes: [ambient], tracing: {samplingPercent: 1}}]\n", "spec.variants[0].modes[0]", "ztunnel sends no spans"},
		{"  waypoint: {scope: shared}\n  variants: [{name: t, modes: [waypoint], tracing: {samplingPercent: 1}}]\n", "spec.variants[0].modes[0]", "set waypoint.scope per-namespace"},
	} {
		_, err := Parse([]byte(variantsBase + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %s: ...%s", strings.TrimSpace(tc.yaml), err, tc.path, tc.want)
		}
	}
	// mode none is refused by name when it is in spec.modes.
	_, err := Parse([]byte(strings.Replace(variantsBase, "[sidecar, ambient, waypoint]", "[none, sidecar]", 1) + "  variants: [{name: x, modes: [none], mtls: STRICT}]\n"))
	if err == nil || !strings.Contains(err.Error(), "mode none has no mesh to configure") {
		t.Errorf("mode none: %v", err)
	}
}

// A variant of load settings alone runs in mode none too (the traffic shape's cost without a mesh is the baseline);
// one that also configures the mesh does not, and a load variant needs an http target to change.
func TestLoadVariants(t *testing.T) {
	t.Parallel()
	base := strings.Replace(variantsBase, "[sidecar, ambient, waypoint]", "[none, sidecar]", 1)
	s, err := Parse([]byte(base + `  variants:
  - {name: churn, modes: [none, sidecar], load: {keepAlive: false}}
  - {name: h2-16k, modes: [none, sidecar], load: {http: "2", payloadBytes: 16384}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Spec.Variants[0].Describe(); got != "a new connection per request" {
		t.Errorf("churn: %q", got)
	}
	if got := s.Spec.Variants[1].Describe(); got != "request body 16384 bytes, HTTP/2 (h2c)" {
		t.Errorf("h2-16k: %q", got)
	}
	if s.Spec.Variants[0].MeshFeatures() || !s.Spec.Variants[0].Load.NoKeepAlive() || s.Spec.Variants[1].Load.NoKeepAlive() {
		t.Errorf("variants %+v", s.Spec.Variants)
	}
	var ids []string
	for _, c := range NewPlan(s).Cases {
		ids = append(ids, c.ID)
		// the idle cluster is the plain mode's: a load variant's case has no idle window
		if c.Idle != (c.Variant == VariantNone) || (c.Policy.Idle > 0) != c.Idle {
			t.Errorf("%s: idle %v (policy %s)", c.ID, c.Idle, c.Policy.Idle)
		}
	}
	if !slices.Contains(ids, "single.none+churn.q100.r1") || !slices.Contains(ids, "single.sidecar+h2-16k.q100.r2") {
		t.Errorf("cases %q", ids)
	}
	for _, tc := range []struct{ yaml, path, want string }{
		{"  variants: [{name: a, modes: [none], mtls: STRICT, load: {keepAlive: false}}]\n", "spec.variants[0].modes[0]", "only a variant of load settings alone runs in none"},
		{"  variants: [{name: a, modes: [sidecar], load: {http: \"2\"}}]\n", "spec.variants[0].load", "has no http target"},
	} {
		y := base + tc.yaml
		if strings.Contains(tc.want, "http target") {
			y = strings.Replace(y, "workload: {app: fortio-chain}", "workload: {app: existing, existing: {namespaces: [shop]}}", 1)
			y = strings.Replace(y, "load: {qps: [100]}", "load: {qps: [100], targets: [{service: grpc, protocol: grpc}]}", 1)
		}
		_, err := Parse([]byte(y))
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %s: ...%s", strings.TrimSpace(tc.yaml), err, tc.path, tc.want)
		}
	}
}

// A tracing variant parses with its sampling rate, 0 included, and says what it sets.
func TestTracingVariant(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(variantsBase + `  variants:
  - {name: trace-0, modes: [sidecar], tracing: {samplingPercent: 0}}
  - {name: trace-1, modes: [sidecar, waypoint], tracing: {samplingPercent: 1.5}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"tracing at 0 % to the run's span sink", "tracing at 1.5 % to the run's span sink"} {
		v := s.Spec.Variants[i]
		if got := v.Describe(); got != want {
			t.Errorf("%s: %q, want %q", v.Name, got, want)
		}
		if !v.MeshFeatures() || !v.EnvoyPolicies() {
			t.Errorf("%s: MeshFeatures %v, EnvoyPolicies %v; want both", v.Name, v.MeshFeatures(), v.EnvoyPolicies())
		}
	}
}
