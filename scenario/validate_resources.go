package scenario

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resourceField is one of spec.workload.resources' quantities.
type resourceField struct {
	name, value string
	memory      bool
}

// validateResources checks spec.workload.resources as the API server checks a container's (k8s.io/kubernetes
// pkg/apis/core/validation ValidateResourceRequirements), so a bad value is refused before the namespaces exist;
// a fraction of a memory byte ("128m") is refused too, a typo of "128Mi" (docs/scenario.md).
func validateResources(c *collector, p *field.Path, r *Resources, app App) {
	if app == AppManifests {
		c.add(p, "is not used with app \"manifests\": meshbench applies your manifests' own requests and limits; set them there and remove workload.resources")
		return
	}
	fields := []resourceField{{"cpuRequest", r.CPURequest, false}, {"memoryRequest", r.MemoryRequest, true}, {"cpuLimit", r.CPULimit, false}, {"memoryLimit", r.MemoryLimit, true}}
	parsed := map[string]resource.Quantity{}
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		fp := p.Child(f.name)
		q, err := resource.ParseQuantity(f.value)
		switch {
		case err != nil:
			c.add(fp, "is not a Kubernetes quantity such as \"100m\" or \"128Mi\" (got %q)", f.value)
		case q.Sign() < 0:
			c.add(fp, "must not be negative (got %q); leave it out to keep the catalog's value", f.value)
		case f.memory && fractionalBytes(q):
			hint := "memory is whole bytes, e.g. \"128Mi\""
			if v, ok := strings.CutSuffix(f.value, "m"); ok {
				hint = fmt.Sprintf("the suffix m is milli (1/1000): did you mean %q?", v+"Mi")
			}
			c.add(fp, "is %q, a fraction of a byte; %s", f.value, hint)
		default:
			parsed[f.name] = q
		}
	}
	for _, pair := range [][2]string{{"cpuRequest", "cpuLimit"}, {"memoryRequest", "memoryLimit"}} {
		req, okReq := parsed[pair[0]]
		lim, okLim := parsed[pair[1]]
		if okReq && okLim && req.Cmp(lim) > 0 {
			c.add(p.Child(pair[0]), "is %s, above %s %s: the API server refuses a request above its limit; lower %s or raise %s",
				req.String(), pair[1], lim.String(), pair[0], pair[1])
		}
	}
}

// fractionalBytes reports a quantity that is not a whole number (of bytes, for memory).
func fractionalBytes(q resource.Quantity) bool {
	whole := q.DeepCopy()
	return !whole.RoundUp(0)
}
