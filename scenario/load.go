package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads a scenario file strictly, applies defaults and validates it. Bad input returns Problems listing every
// problem (unknown fields with their path, then validation problems); syntax errors stop earlier with the line.
func Load(path string) (*Scenario, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with the options applied between decoding and defaults.
func LoadWith(path string, o LoadOptions) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	s, err := ParseWith(data, o)
	if err != nil {
		var ps Problems
		if errors.As(err, &ps) {
			return s, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ps := CheckFiles(s); len(ps) > 0 {
		return s, ps
	}
	return s, nil
}

// Parse decodes YAML or JSON strictly (unknown and duplicate fields are problems), applies defaults and validates.
// It is pure.
func Parse(data []byte) (*Scenario, error) { return ParseWith(data, LoadOptions{}) }

// ParseWith is Parse with the options applied between decoding and defaults.
func ParseWith(data []byte, o LoadOptions) (*Scenario, error) {
	js, err := yaml.YAMLToJSONStrict(data) // rejects duplicate keys
	if err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	var s Scenario
	strict, err := kjson.UnmarshalStrict(js, &s, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("decode scenario: %w", err)
	}
	var ps Problems
	for _, e := range strict {
		ps = append(ps, strictProblem(e))
	}
	o.apply(&s)
	SetDefaults(&s)
	ps = append(ps, Validate(&s)...)
	if len(ps) > 0 {
		return &s, ps
	}
	return &s, nil
}

// strictProblem turns sigs.k8s.io/json's `unknown field "spec.load.qpss"` into a Problem with that path.
func strictProblem(err error) Problem {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, `unknown field "`); ok {
		if path, _, ok := strings.Cut(rest, `"`); ok {
			return Problem{Path: path, Message: "unknown field; check its spelling and indentation against the config reference (README)"}
		}
	}
	if _, rest, ok := strings.Cut(msg, `duplicate field "`); ok {
		if path, _, ok := strings.Cut(rest, `"`); ok {
			return Problem{Path: path, Message: "is set twice; keep one"}
		}
	}
	return Problem{Path: "(document)", Message: msg}
}

// CheckFiles reports files named by the scenario that cannot be read (token and CA files), so a run fails before
// it touches a cluster.
func CheckFiles(s *Scenario) Problems {
	var ps Problems
	for _, f := range []struct{ path, val string }{
		{"spec.prometheus.bearerTokenFile", s.Spec.Prometheus.BearerTokenFile},
		{"spec.prometheus.caFile", s.Spec.Prometheus.CAFile},
	} {
		if f.val == "" {
			continue
		}
		if _, err := os.Stat(f.val); err != nil {
			ps = append(ps, Problem{Path: f.path, Message: fmt.Sprintf("cannot read %q: %v; fix the path or remove the field", f.val, err)})
		}
	}
	return ps
}
