package scenario

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateModes checks spec.modes: known modes, each once.
func validateModes(c *collector, p *field.Path, modes []Mode) {
	if len(modes) == 0 {
		c.add(p, "must list at least one of %s", strings.Join(quoteAll(AllModes), ", "))
	}
	seen := map[Mode]bool{}
	for i, m := range modes {
		c.oneOf(p.Index(i), string(m), strs(AllModes))
		if seen[m] {
			c.add(p.Index(i), "lists %q twice; each mode is measured once per repetition", m)
		}
		seen[m] = true
	}
}

// validateWaypoint checks spec.waypoint, the Gateway mode waypoint creates.
func validateWaypoint(c *collector, p *field.Path, w Waypoint) {
	c.oneOf(p.Child("scope"), string(w.Scope), []string{string(WaypointPerNamespace), string(WaypointShared)})
	if msgs := validation.IsDNS1123Label(w.Name); len(msgs) > 0 {
		c.add(p.Child("name"), "must be a DNS label (got %q)", w.Name)
	}
	c.oneOf(p.Child("for"), w.For, []string{"service", "workload", "all"})
}

// validateIstio checks spec.istio. istiod revisions are Helm values used in object names (istiod-<rev>) and label
// values, so a revision is a DNS label.
func validateIstio(c *collector, p *field.Path, is Istio) {
	if r := is.Revision; r != "" {
		if msgs := validation.IsDNS1123Label(r); len(msgs) > 0 {
			c.add(p.Child("revision"), "must be a DNS label such as \"canary\" or \"1-30-1\" (got %q); the revision is the istio.io/rev label of the istiod pods", r)
		}
	}
}
