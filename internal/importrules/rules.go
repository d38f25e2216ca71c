package importrules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Class is the role of a package in the one-way data flow.
type Class string

// The classes of Rules.
const (
	Foundation Class = "foundation" // internal/inputfile: rules every package follows, core included; no project imports
	Core       Class = "core"       // scenario, results: the data model, no project imports but foundations
	Leaf       Class = "leaf"       // internal/...: pure shared helpers and descriptions, no cluster access
	// SharedClient packages (internal/kube, internal/target) talk to the API server on behalf of the adapters and
	// the runner: clients, waits, readiness, node checks.
	SharedClient Class = "shared client"
	Adapter      Class = "adapter"     // talks to one outside thing (cluster, Istio, fortio, Prometheus, registry)
	Runner       Class = "runner"      // runs a plan through interfaces it defines itself
	Offline      Class = "offline"     // results to report, from files alone
	Publisher    Class = "publisher"   // sends finished reports elsewhere (HTTP)
	Composition  Class = "composition" // wires adapters together (the only place besides cmd that may)
	Command      Class = "command"     // cmd/...: flags and wiring
	Tool         Class = "tool"        // hack/...: development tools
	Docs         Class = "docs"        // docs: documentation and its drift tests, no code
)

// Rule classifies the packages at Path (a module-relative path; a trailing "/..." also matches everything below).
type Rule struct {
	Path  string
	Class Class
}

// Rules is the table; more specific paths do not override earlier ones, so each path appears once.
var Rules = []Rule{
	{"internal/inputfile", Foundation}, // before internal/...: Classify takes the first match
	{"scenario", Core},
	{"results", Core},
	{"internal/kube", SharedClient},
	{"internal/target", SharedClient},
	{"internal/...", Leaf},
	{"mesh", Adapter},
	{"workloads", Adapter},
	{"loadgen", Adapter},
	{"collectors/...", Adapter},
	{"cni", Adapter},
	{"images", Adapter},
	{"schedule", Adapter},
	{"runner", Runner},
	{"charts", Offline},
	{"report", Offline},
	{"compare", Offline},
	{"export", Offline},
	{"capacity", Offline},
	{"push", Publisher},
	{"orchestrate", Composition},
	{"preflight", Composition},
	{"cmd/...", Command},
	{"hack/...", Tool},
	{"docs", Docs},
}

// Allowed says which classes a class may import (project packages only; the standard library and modules are free).
var Allowed = map[Class][]Class{
	Foundation:   nil,
	Core:         {Foundation},
	Leaf:         {Foundation, Core, Leaf},
	SharedClient: {Foundation, Core, Leaf, SharedClient},
	Adapter:      {Foundation, Core, Leaf, SharedClient},
	Runner:       {Foundation, Core, Leaf, SharedClient},
	Offline:      {Foundation, Core, Leaf, Offline},
	Publisher:    {Foundation, Core, Leaf, Offline},
	Composition:  {Foundation, Core, Leaf, SharedClient, Adapter, Runner, Offline, Publisher, Composition},
	Command:      {Foundation, Core, Leaf, SharedClient, Adapter, Runner, Offline, Publisher, Composition, Command},
	Tool:         {Foundation, Core, Leaf, SharedClient, Adapter, Runner, Offline, Publisher, Composition, Tool},
	Docs:         nil,
}

// Classify returns the class of the module-relative package path, or "" when no rule names it.
func Classify(rel string) Class {
	for _, r := range Rules {
		if p, ok := strings.CutSuffix(r.Path, "/..."); ok {
			if rel == p || strings.HasPrefix(rel, p+"/") {
				return r.Class
			}
		} else if rel == r.Path {
			return r.Class
		}
	}
	return ""
}

// Check returns every violation in graph, sorted: graph maps each project package (import path) to its direct
// imports; module is the module path. Imports outside the module are ignored.
func Check(module string, graph map[string][]string) []string {
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	var out []string
	for pkg, imports := range graph {
		from, ok := rel(pkg)
		if !ok {
			continue
		}
		fc := Classify(from)
		if fc == "" {
			out = append(out, fmt.Sprintf("%s: not in the import rule table (internal/importrules Rules): classify it", from))
			continue
		}
		for _, imp := range imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			tc := Classify(to)
			switch {
			case tc == "":
				out = append(out, fmt.Sprintf("%s imports %s, which is not in the import rule table: classify it", from, to))
			case slices.Contains(Allowed[fc], tc):
			default:
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): %s", from, fc, to, tc, why(fc, tc)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func why(from, to Class) string {
	switch {
	case from == Adapter && to == Adapter:
		return "adapters never import each other: move the shared piece to a leaf package (internal/...) and let the runner or a composition package order the steps"
	case from == Foundation:
		return "foundation packages import no project package"
	case from == Core:
		return "scenario and results import no project package but the foundations (internal/inputfile)"
	case from == Leaf:
		return "leaf packages import only scenario, results and other leaves: no cluster access (internal/kube and internal/target are the shared clients)"
	case from == SharedClient:
		return "shared clients import only scenario, results, leaves and each other"
	case to == SharedClient:
		return "only the adapters, the runner, composition, commands and tools talk to the API server (the shared clients)"
	case from == Runner:
		return "the runner talks to adapters through interfaces it defines itself"
	case to == Command:
		return "nothing imports the commands"
	default:
		return fmt.Sprintf("%s packages may import only %v", from, Allowed[from])
	}
}
