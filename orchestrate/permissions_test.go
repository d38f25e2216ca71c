package orchestrate

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/schedule"
	"github.com/meshbench/meshbench/workloads"
)

// Issue 15 section 3: preflight's SelfSubjectAccessReview table and the scheduled ClusterRole are one list,
// schedule.RequiredPermissions. These tests derive what the run does from the code and the objects it applies, so
// a new verb in code (a typed-client call, a proxy GET, an exec, an applied kind) without the table fails here.

// runPackages are the packages a `meshbench run`, `cni` and `preflight` execute against the API server (the CLI
// layer, schedule --apply, images and hack/ are not part of a run).
var runPackages = []string{"orchestrate", "runner", "mesh", "workloads", "loadgen", "cni", "collectors/prom", "preflight",
	"internal/kube", "internal/target", "internal/podset"}

// clientGroups maps the typed clientsets' group accessors to API groups.
var clientGroups = map[string]string{
	"CoreV1": "", "AppsV1": "apps", "BatchV1": "batch", "AuthorizationV1": "authorization.k8s.io", "RbacV1": "rbac.authorization.k8s.io",
	"AdmissionregistrationV1": "admissionregistration.k8s.io", "DiscoveryV1": "discovery.k8s.io", "ApiextensionsV1": "apiextensions.k8s.io",
	"NetworkingV1": "networking.k8s.io", "PolicyV1": "policy", "SecurityV1": "security.istio.io", "SecurityV1beta1": "security.istio.io",
	"NetworkingV1alpha3": "networking.istio.io", "GatewayV1": "gateway.networking.k8s.io", "GatewayV1beta1": "gateway.networking.k8s.io",
}

// clientVerbs maps typed-client methods to RBAC verbs (server-side Apply is a patch).
var clientVerbs = map[string]string{
	"Get": "get", "List": "list", "Watch": "watch", "Create": "create", "Update": "update", "UpdateStatus": "update",
	"Patch": "patch", "Apply": "patch", "ApplyStatus": "patch", "Delete": "delete", "DeleteCollection": "deletecollection",
}

// use is one API permission the code exercises, and where.
type use struct {
	group, resource, verb string
	at                    string
}

func (u use) key() string { return u.group + "/" + u.resource + " " + u.verb }

// chain flattens x.A(a).B(b).C(c) into its method names and first literal string arguments, innermost first.
func chain(e ast.Expr) (names, args []string) {
	for {
		call, ok := e.(*ast.CallExpr)
		if !ok {
			return names, args
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return names, args
		}
		arg := ""
		if len(call.Args) > 0 {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				arg, _ = strconv.Unquote(lit.Value)
			}
		}
		names, args = append([]string{sel.Sel.Name}, names...), append([]string{arg}, args...)
		e = sel.X
	}
}

// codeUses reads every API call of the run's packages (non-test files) that says its resource in the code: typed
// clients (clientset.GroupV1().Resources(ns).Verb), kube.ProxyGet with a literal kind, and RESTClient requests with
// literal Resource and SubResource. Calls through the dynamic client are returned as sites: what they touch is the
// objects' kinds, checked by TestAppliedKindsArePermitted and the known sites of TestPermissionsCoverCode.
func codeUses(t *testing.T) (uses []use, dynamicSites []string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, pkg := range runPackages {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: %v %v", pkg, files, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pos := fset.Position(call.Pos())
				at := fmt.Sprintf("%s:%d", filepath.ToSlash(strings.TrimPrefix(pos.Filename, "../")), pos.Line)
				names, args := chain(call)
				switch {
				case sel.Sel.Name == "ProxyGet" && len(call.Args) >= 3:
					if lit, ok := call.Args[2].(*ast.BasicLit); ok {
						kind, _ := strconv.Unquote(lit.Value)
						uses = append(uses, use{"", kind + "/proxy", "get", at})
					}
				case sel.Sel.Name == "Resource" && len(names) >= 2 && names[len(names)-2] == "Dynamic":
					dynamicSites = append(dynamicSites, at)
				case len(names) >= 3:
					// ...GroupV1().Resources(ns).Verb(...) or ...GroupV1().Resources(ns).ProxyGet(...)
					g, okG := clientGroups[names[len(names)-3]]
					res := strings.ToLower(names[len(names)-2])
					okG = okG && res != "restclient" // RESTClient chains are read below
					if v, okV := clientVerbs[names[len(names)-1]]; okG && okV {
						uses = append(uses, use{g, res, v, at})
					}
					if okG && names[len(names)-1] == "ProxyGet" {
						uses = append(uses, use{g, res + "/proxy", "get", at})
					}
				}
				// RESTClient().Post().Resource("pods")...SubResource("exec"): exec is a create, a Get a get.
				// Read at the SubResource call, whose chain holds the method and the resource.
				if i := slices.Index(names, "RESTClient"); i >= 0 && i+1 < len(names) && sel.Sel.Name == "SubResource" {
					r := ""
					for j, m := range names {
						if m == "Resource" {
							r = args[j]
						}
					}
					if r != "" && args[len(args)-1] != "" {
						verb := map[string]string{"Post": "create", "Get": "get"}[names[i+1]]
						uses = append(uses, use{"", r + "/" + args[len(args)-1], verb, at})
					}
				}
				return true
			})
		}
	}
	return uses, dynamicSites
}

// granted is the table as "group/resource[/sub] verb" keys.
func granted() map[string]bool {
	out := map[string]bool{}
	for _, p := range schedule.RequiredPermissions {
		for _, v := range p.Verbs {
			out[p.Group+"/"+p.ResourceName()+" "+v] = true
		}
	}
	return out
}

// knownDynamicSites are the dynamic-client calls of the run and what they touch, which the source does not say:
// the applier (the applied kinds: TestAppliedKindsArePermitted), the cleaner (workloads.SweptResources, list and
// delete) and the CRD detection (customresourcedefinitions get/list, in the table). A new site must be added here,
// with its permissions in the table.
var knownDynamicSites = []string{"internal/kube/apply.go", "workloads/cleanup.go", "mesh/detect.go"}

func TestPermissionsCoverCode(t *testing.T) {
	t.Parallel()
	uses, sites := codeUses(t)
	if len(uses) < 40 {
		t.Fatalf("found only %d API calls in the run's code: the scan is broken", len(uses))
	}
	have := granted()
	var missing []string
	seen := map[string]bool{}
	for _, u := range uses {
		if !have[u.key()] && !seen[u.key()] {
			seen[u.key()] = true
			missing = append(missing, fmt.Sprintf("%s (%s)", u.key(), u.at))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the run's code uses %s, which schedule.RequiredPermissions (preflight's table, the scheduled ClusterRole) does not grant", m)
	}
	for _, s := range sites {
		file, _, _ := strings.Cut(s, ":")
		if !slices.Contains(knownDynamicSites, file) {
			t.Errorf("dynamic-client call at %s: say what it touches in knownDynamicSites and grant it in schedule.RequiredPermissions", s)
		}
	}
	// The scan must see the calls the table was written for (a scan that finds nothing proves nothing).
	for _, k := range []string{"/pods list", "/pods/exec create", "/nodes/proxy get", "apps/deployments patch", "/namespaces patch", "gateway.networking.k8s.io/gateways create"} {
		found := false
		for _, u := range uses {
			found = found || u.key() == k
		}
		if !found {
			t.Errorf("the scan did not find %s in the run's code", k)
		}
	}
}

// resourceOf is the plural resource of a kind, as the API server names it (apimachinery's guess makes "gatewaies"
// of Gateway: a vowel before the y takes an s).
func resourceOf(gk schema.GroupKind) string {
	if k := strings.ToLower(gk.Kind); strings.HasSuffix(k, "ay") || strings.HasSuffix(k, "ey") {
		return k + "s"
	}
	plural, _ := meta.UnsafeGuessKindToResource(gk.WithVersion("v1"))
	return plural.Resource
}

// TestAppliedKindsArePermitted: every kind the run applies (server-side apply: create and patch) is granted, for
// the catalog apps and load clients of the examples (plan --show-objects' objects) and for every kind a user's
// app manifests may contain (workloads.PlaceableKinds); the cleaner's sweep of what the run creates is granted
// list and delete.
func TestAppliedKindsArePermitted(t *testing.T) {
	t.Parallel()
	have := granted()
	need := map[string][]string{} // "group/resource" -> verbs
	add := func(gk schema.GroupKind, verbs ...string) {
		k := gk.Group + "/" + resourceOf(gk)
		for _, v := range verbs {
			if !slices.Contains(need[k], v) {
				need[k] = append(need[k], v)
			}
		}
	}
	for _, f := range []string{"quickstart.yaml", "bookinfo.yaml", "demo.yaml", "study-a-multi.yaml", "chain-depth.yaml"} {
		s, err := scenario.Load(filepath.Join("..", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		cases, err := PlanObjects(s, scenario.NewPlan(s))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			for _, o := range c.Objects {
				api, _ := o["apiVersion"].(string)
				kind, _ := o["kind"].(string)
				gv, err := schema.ParseGroupVersion(api)
				if err != nil || kind == "" {
					t.Fatalf("%s: object %v", f, o)
				}
				add(gv.WithKind(kind).GroupKind(), "create", "patch")
			}
		}
	}
	if len(need) < 5 {
		t.Fatalf("only %d kinds in the examples' objects: %v", len(need), need)
	}
	for _, gk := range workloads.PlaceableKinds() {
		add(gk, "create", "patch")
	}
	uses, _ := codeUses(t)
	created := map[string]bool{}
	for k := range need {
		created[k] = true
	}
	for _, u := range uses {
		created[u.group+"/"+u.resource] = created[u.group+"/"+u.resource] || u.verb == "create"
	}
	// The teardown sweeps by label what the run may have created in namespaces it did not create; a sweep of a
	// resource the run never creates may be forbidden (the cleaner skips it: what meshbench may not list, it never
	// created), so list and delete are required exactly where the run creates.
	for _, gvr := range workloads.SweptResources() {
		k := gvr.Group + "/" + gvr.Resource
		if !created[k] {
			continue
		}
		for _, v := range []string{"list", "delete"} {
			if !slices.Contains(need[k], v) {
				need[k] = append(need[k], v)
			}
		}
	}
	keys := make([]string, 0, len(need))
	for k := range need {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range need[k] {
			if !have[k+" "+v] {
				t.Errorf("the run applies or sweeps %s but schedule.RequiredPermissions does not grant %s", k, v)
			}
		}
	}
}
