package scenario

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with a scenario: where (a field path such as spec.load.qps[1]) and what to do.
type Problem struct {
	Path string `json:"path"`
	// Message says what is wrong and how to fix it.
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Problems is every problem found in a scenario; it is the error Load returns for bad input.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, 0, len(ps)+1)
	lines = append(lines, fmt.Sprintf("invalid scenario: %d problem(s)", len(ps)))
	for _, p := range ps {
		lines = append(lines, "  "+p.String())
	}
	return strings.Join(lines, "\n")
}

// collector gathers problems in the order they are found (the order of the file), never stopping at the first.
type collector struct{ ps Problems }

func (c *collector) add(p *field.Path, format string, args ...any) {
	c.ps = append(c.ps, Problem{Path: p.String(), Message: fmt.Sprintf(format, args...)})
}

func (c *collector) oneOf(p *field.Path, v string, valid []string) {
	if !slices.Contains(valid, v) {
		c.add(p, "must be one of %s (got %q)", strings.Join(quoteAll(valid), ", "), v)
	}
}

func (c *collector) intRange(p *field.Path, v, lo, hi int, hint string) {
	if v < lo || v > hi {
		c.add(p, "must be between %d and %d (got %d)%s", lo, hi, v, hintSuffix(hint))
	}
}

func (c *collector) nonNegative(p *field.Path, d Duration) {
	if d.Duration < 0 {
		c.add(p, "must not be negative (got %s)", d)
	}
}

func hintSuffix(h string) string {
	if h == "" {
		return ""
	}
	return "; " + h
}

func quoteAll[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%q", string(v))
	}
	return out
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// Validate checks a defaulted scenario and returns every problem at once (nil when valid). It is pure: files named
// by the scenario are checked by checkFiles.
func Validate(s *Scenario) Problems {
	c := &collector{}
	if s.APIVersion != APIVersion {
		c.add(field.NewPath("apiVersion"), "must be %q (got %q)", APIVersion, s.APIVersion)
	}
	if s.Kind != Kind {
		c.add(field.NewPath("kind"), "must be %q (got %q)", Kind, s.Kind)
	}
	validateName(c, field.NewPath("metadata", "name"), s.Metadata.Name)
	if n := len(s.Metadata.Description); n > maxDescriptionBytes {
		c.add(field.NewPath("metadata", "description"), "is %d bytes long; at most %d bytes: keep the description short, it is shown in reports", n, maxDescriptionBytes)
	}
	sp := field.NewPath("spec")
	c.oneOf(sp.Child("profile"), string(s.Spec.Profile), strs(profiles))
	validateWorkload(c, sp.Child("workload"), &s.Spec.Workload, s.Spec.CNI.configured())
	validateModes(c, sp.Child("modes"), s.Spec.Modes)
	validateWaypoint(c, sp.Child("waypoint"), s.Spec.Waypoint)
	validateIstio(c, sp.Child("istio"), s.Spec.Istio)
	validateLoad(c, sp.Child("load"), &s.Spec.Load, s.Spec.Windows.Load.Duration)
	if s.Spec.Workload.App != "" {
		validateTargets(c, sp.Child("load"), &s.Spec.Load, s.Spec.Workload.App)
	}
	validateWindows(c, sp.Child("windows"), s.Spec.Windows, s.Spec.Prometheus.ScrapeInterval.Duration)
	validatePrometheus(c, sp.Child("prometheus"), s.Spec.Prometheus)
	if s.Spec.CNI.configured() {
		validateCNI(c, sp.Child("cni"), s.Spec.CNI)
	}
	if s.Spec.Transitions.configured() {
		validateTransitions(c, sp.Child("transitions"), s.Spec.Transitions, s.Spec.Modes)
	}
	if s.Spec.Enforcement.configured() {
		validateEnforcement(c, sp.Child("enforcement"), s.Spec.Enforcement, s.Spec.Modes, s.Spec.Waypoint)
	}
	validateVariants(c, sp.Child("variants"), s.Spec.Variants, s.Spec.Modes, s.Spec.Waypoint, s.Spec.Load)
	validateImages(c, sp.Child("images"), s.Spec.Images)
	if strings.TrimSpace(s.Spec.Output.Dir) == "" {
		c.add(sp.Child("output", "dir"), "must not be empty; e.g. \"runs\"")
	}
	validateDurationBounds(c, sp, reflect.ValueOf(s.Spec), s.Spec.Load.MinDuration(s.Spec.Windows.Load.Duration))
	if len(c.ps) == 0 {
		return nil
	}
	return c.ps
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func validateName(c *collector, p *field.Path, name string) {
	switch {
	case name == "":
		c.add(p, "is required; a short name such as \"study-a-single\" (used in run IDs)")
	case len(name) > 40 || !nameRE.MatchString(name):
		c.add(p, "must be at most 40 lower-case letters, digits and '-', starting and ending alphanumeric (got %q)", name)
	}
}

// dups returns the indices of repeated values, in order (never map order: problems are reported deterministically).
func dups[T comparable](vs []T) []int {
	seen := map[T]bool{}
	var out []int
	for i, v := range vs {
		if seen[v] {
			out = append(out, i)
		}
		seen[v] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateDurationBounds reports every duration setting above maxDuration, wherever it is in the spec (a new
// Duration field is covered without a line here). load.duration may exceed it when it is the default derived from
// warm-up, trims and a window that are each within bounds.
func validateDurationBounds(c *collector, p *field.Path, v reflect.Value, derivedLoad time.Duration) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			validateDurationBounds(c, p, v.Elem(), derivedLoad)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			validateDurationBounds(c, p.Index(i), v.Index(i), derivedLoad)
		}
	case reflect.Struct:
		if v.Type() == durationType {
			d := v.Interface().(Duration).Duration
			if d > maxDuration && !(p.String() == "spec.load.duration" && d == derivedLoad) {
				c.add(p, "is %s; at most %s: split a longer study into several runs", D(d), D(maxDuration))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ { // field order, never map order: problems are reported deterministically
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				validateDurationBounds(c, p.Child(name), v.Field(i), derivedLoad)
			}
		}
	}
}
