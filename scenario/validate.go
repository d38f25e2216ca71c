package scenario

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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

// RequireWorkload reports the problem of running the mesh benchmark from a scenario that only configures cni.
func RequireWorkload(s *Scenario) Problems {
	if s.Spec.Workload.App == "" {
		return Problems{{Path: "spec.workload.app", Message: fmt.Sprintf("is required for meshbench run: one of %s", strings.Join(quoteAll(Apps), ", "))}}
	}
	return nil
}

// RequireCNI reports the problem of running the network benchmark from a scenario without a cni section.
func RequireCNI(s *Scenario) Problems {
	if !s.Spec.CNI.configured() {
		return Problems{{Path: "spec.cni", Message: "is required for meshbench cni: add a cni section (see examples/study-b-network.yaml)"}}
	}
	return nil
}

// Validate checks a defaulted scenario and returns every problem at once (nil when valid). It is pure: files named
// by the scenario are checked by CheckFiles.
func Validate(s *Scenario) Problems {
	c := &collector{}
	if s.APIVersion != APIVersion {
		c.add(field.NewPath("apiVersion"), "must be %q (got %q)", APIVersion, s.APIVersion)
	}
	if s.Kind != Kind {
		c.add(field.NewPath("kind"), "must be %q (got %q)", Kind, s.Kind)
	}
	validateName(c, field.NewPath("metadata", "name"), s.Metadata.Name)
	if n := len(s.Metadata.Description); n > MaxDescriptionBytes {
		c.add(field.NewPath("metadata", "description"), "is %d bytes long; at most %d bytes: keep the description short, it is shown in reports", n, MaxDescriptionBytes)
	}
	sp := field.NewPath("spec")
	c.oneOf(sp.Child("profile"), string(s.Spec.Profile), strs(Profiles))
	validateWorkload(c, sp.Child("workload"), &s.Spec.Workload, s.Spec.CNI.configured())
	validateModes(c, sp.Child("modes"), s.Spec.Modes)
	validateWaypoint(c, sp.Child("waypoint"), s.Spec.Waypoint)
	if r := s.Spec.Istio.Revision; r != "" {
		// istiod revisions are Helm values used in object names (istiod-<rev>) and label values.
		if msgs := validation.IsDNS1123Label(r); len(msgs) > 0 {
			c.add(sp.Child("istio", "revision"), "must be a DNS label such as \"canary\" or \"1-30-1\" (got %q); the revision is the istio.io/rev label of the istiod pods", r)
		}
	}
	validateLoad(c, sp.Child("load"), &s.Spec.Load, s.Spec.Windows.Load.Duration)
	if s.Spec.Workload.App != "" {
		validateTargets(c, sp.Child("load"), &s.Spec.Load, s.Spec.Workload.App)
	}
	validateWindows(c, sp.Child("windows"), s.Spec.Windows, s.Spec.Prometheus.ScrapeInterval.Duration)
	validatePrometheus(c, sp.Child("prometheus"), s.Spec.Prometheus)
	if s.Spec.CNI.configured() {
		validateCNI(c, sp.Child("cni"), s.Spec.CNI)
	}
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

func validateWorkload(c *collector, p *field.Path, w *Workload, cniOnly bool) {
	switch {
	case w.App == "" && !cniOnly:
		c.add(p.Child("app"), "is required: one of %s (it has no default: it is what the run measures); a scenario for meshbench cni alone leaves workload out and sets cni",
			strings.Join(quoteAll(Apps), ", "))
	case w.App != "":
		c.oneOf(p.Child("app"), string(w.App), strs(Apps))
	}
	services := 8 // bank-of-anthos: 6 services + 2 databases (study A's "8 microservices")
	switch {
	case w.App == AppFortioChain && w.Chain != nil:
		cp := p.Child("chain")
		c.intRange(cp.Child("depth"), w.Chain.Depth, 1, MaxChainDepth, "")
		c.intRange(cp.Child("fanOut"), w.Chain.FanOut, 1, 8, "")
		c.intRange(cp.Child("payloadBytes"), w.Chain.PayloadBytes, 1, 1<<20, "")
		if chainSane(w.Chain) {
			services = w.Chain.Services()
			if services > maxChainServices {
				c.add(cp, "describes %d services (1 + fanOut + fanOut^2 ... up to depth); at most %d: lower depth or fanOut", services, maxChainServices)
			}
		}
	case w.App != AppFortioChain && w.Chain != nil:
		c.add(p.Child("chain"), "is only used with app \"fortio-chain\"; remove it or change workload.app")
	case w.App == AppBookinfo:
		services = 6 // productpage, details, reviews-v1..v3 (one Service "reviews"), ratings: 6 Deployments
	case w.App.UserApp():
		services = maxChainServices // unknown before the manifests are read; workloads checks the real count
	}
	validateUserApp(c, p, w)
	c.intRange(p.Child("replicas"), w.Replicas, 1, 100, "")
	if d := w.ClusterDomain; d != "" {
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
			c.add(p.Child("clusterDomain"), "must be a DNS domain such as \"cluster.local\" without leading or trailing dot (got %q); it is the kubelet's clusterDomain", d)
		}
	}
	if msgs := validation.IsDNS1123Label(strings.TrimSuffix(w.NamespacePrefix, "-") + "x"); len(msgs) > 0 || len(w.NamespacePrefix) > 30 {
		c.add(p.Child("namespacePrefix"), "must be lower-case letters, digits and '-', at most 30 characters (got %q)", w.NamespacePrefix)
	}
	if protectedPrefix(w.NamespacePrefix) {
		c.add(p.Child("namespacePrefix"), "is %q: namespaces starting kube- or istio- belong to the cluster and to Istio; meshbench never creates or changes them (use e.g. \"mb-\")", w.NamespacePrefix)
	}
	names := map[string]bool{}
	for i, t := range w.Topologies {
		tp := p.Child("topologies").Index(i)
		c.oneOf(tp.Child("kind"), string(t.Kind), []string{string(TopologySingle), string(TopologyMulti)})
		if t.Kind == TopologySingle && t.Namespaces != 0 {
			c.add(tp.Child("namespaces"), "is only used with kind \"multi\" (got %d); remove it or set kind: multi", t.Namespaces)
		}
		topoServices := services
		switch {
		case t.ChainDepth != 0 && w.App != AppFortioChain:
			c.add(tp.Child("chainDepth"), "is only used with app \"fortio-chain\" (got %d); remove it or change workload.app", t.ChainDepth)
		case t.ChainDepth != 0:
			c.intRange(tp.Child("chainDepth"), t.ChainDepth, 1, MaxChainDepth, "leave it out to use workload.chain.depth")
			if ch := w.ChainFor(t); ch != nil && chainSane(ch) && t.ChainDepth <= MaxChainDepth {
				topoServices = ch.Services()
				if topoServices > maxChainServices {
					c.add(tp.Child("chainDepth"), "describes %d services with workload.chain.fanOut %d; at most %d: lower chainDepth or fanOut", topoServices, ch.FanOut, maxChainServices)
				}
			}
		}
		if w.App == AppExisting && i == 0 && (t.Kind != TopologySingle || len(w.Topologies) > 1) {
			c.add(p.Child("topologies"), "app \"existing\" is measured where it is deployed: remove topologies (the namespaces are existing.namespaces)")
		}
		if t.Kind == TopologyMulti && (t.Namespaces < 0 || t.Namespaces > topoServices) {
			c.add(tp.Child("namespaces"), "must be between 0 (one service per namespace) and the number of services (%d) (got %d)", topoServices, t.Namespaces)
		}
		if t.Replicas != w.Replicas { // an inherited value was already checked at workload.replicas
			c.intRange(tp.Child("replicas"), t.Replicas, 1, 100, "")
		}
		ns := w.NamespacePrefix + t.Name // the first namespace workloads.Namespaces gives the topology
		if t.Kind == TopologyMulti {
			ns += "-0"
		}
		if w.App != AppExisting && !protectedPrefix(w.NamespacePrefix) && ProtectedNamespace(ns) {
			c.add(tp.Child("name"), "with namespacePrefix %q names namespace %q, a system namespace meshbench never creates or changes; rename the topology", w.NamespacePrefix, ns)
		}
		if !nameRE.MatchString(t.Name) || len(t.Name) > 20 {
			c.add(tp.Child("name"), "must be at most 20 lower-case letters, digits and '-' (got %q)", t.Name)
		}
		if names[t.Name] {
			c.add(tp.Child("name"), "duplicates topology %q; give each topology a distinct name", t.Name)
		}
		names[t.Name] = true
	}
	for _, k := range sortedKeys(w.NodeSelector) {
		kp := p.Child("nodeSelector").Key(k)
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			c.add(kp, "is not a valid label key: %s", strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(w.NodeSelector[k]); len(msgs) > 0 {
			c.add(kp, "has an invalid label value %q: %s", w.NodeSelector[k], strings.Join(msgs, "; "))
		}
	}
	validateTolerations(c, p.Child("tolerations"), w.Tolerations)
	if w.Resources != nil && w.App != AppExisting { // existing: refused by validateUserApp
		validateResources(c, p.Child("resources"), w.Resources, w.App)
	}
}

// validateUserApp checks workload.manifests and workload.existing: present exactly with their app. What only reading
// the manifests can tell (cluster-scoped objects, a Scale name without a workload) is workloads.CheckManifests'.
// validateTolerations checks what the API server would refuse at apply time, after the run has started (the rules
// of k8s.io/api core/v1 Toleration's field docs, enforced by the API server's pod validation): a key is a qualified
// name and needs operator Exists when empty; Exists takes no value; Equal's value is a label value; effect is one of
// the taint effects or empty (all); tolerationSeconds needs effect NoExecute.
func validateTolerations(c *collector, p *field.Path, ts []corev1.Toleration) {
	ops := []corev1.TolerationOperator{"", corev1.TolerationOpEqual, corev1.TolerationOpExists}
	effects := []corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
				c.add(tp.Child("key"), "is not a valid taint key: %s", strings.Join(msgs, "; "))
			}
		} else if t.Operator != corev1.TolerationOpExists {
			c.add(tp.Child("operator"), "must be %q when key is empty (a toleration of every taint)", corev1.TolerationOpExists)
		}
		if !slices.Contains(ops, t.Operator) {
			c.oneOf(tp.Child("operator"), string(t.Operator), strs(ops[1:]))
		}
		switch t.Operator {
		case corev1.TolerationOpExists:
			if t.Value != "" {
				c.add(tp.Child("value"), "must be empty with operator Exists (got %q)", t.Value)
			}
		default:
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				c.add(tp.Child("value"), "has an invalid taint value %q: %s", t.Value, strings.Join(msgs, "; "))
			}
		}
		if !slices.Contains(effects, t.Effect) {
			c.oneOf(tp.Child("effect"), string(t.Effect), strs(effects[1:]))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			c.add(tp.Child("tolerationSeconds"), "needs effect %q (the only effect that evicts; got %q)", corev1.TaintEffectNoExecute, t.Effect)
		}
	}
}

func validateUserApp(c *collector, p *field.Path, w *Workload) {
	mp, ep := p.Child("manifests"), p.Child("existing")
	switch {
	case w.App == AppManifests && w.Manifests == nil:
		c.add(mp, "is required with app \"manifests\": set paths (YAML files or directories) or kustomization (a directory)")
	case w.App != AppManifests && w.Manifests != nil:
		c.add(mp, "is only used with app \"manifests\"; remove it or set workload.app: manifests")
	}
	switch {
	case w.App == AppExisting && w.Existing == nil:
		c.add(ep, "is required with app \"existing\": list the namespaces the app runs in")
	case w.App != AppExisting && w.Existing != nil:
		c.add(ep, "is only used with app \"existing\"; remove it or set workload.app: existing")
	}
	if m := w.Manifests; m != nil && w.App == AppManifests {
		switch {
		case len(m.Paths) == 0 && m.Kustomization == "":
			c.add(mp, "sets neither paths nor kustomization: set one of them")
		case len(m.Paths) > 0 && m.Kustomization != "":
			c.add(mp, "sets both paths and kustomization: set one of them (a kustomization can list the files as resources)")
		}
		for i, f := range m.Paths {
			if strings.TrimSpace(f) == "" {
				c.add(mp.Child("paths").Index(i), "is empty: name a YAML file or a directory")
			}
		}
		for i, ref := range m.Scale {
			if _, _, err := ParseWorkloadRef(ref, false); err != nil {
				c.add(mp.Child("scale").Index(i), "%v", err)
			}
		}
		multi := false
		maxNS := 0
		for _, t := range w.Topologies {
			if t.Kind == TopologyMulti {
				multi = true
				if t.Namespaces > 0 && (maxNS == 0 || t.Namespaces < maxNS) {
					maxNS = t.Namespaces
				}
			}
		}
		if len(m.Placement) > 0 && !multi {
			c.add(mp.Child("placement"), "is only used with multi topologies; remove it or add a topology of kind multi")
		}
		for _, k := range sortedKeys(m.Placement) {
			kp := mp.Child("placement").Key(k)
			if _, _, err := ParseWorkloadRef(k, true); err != nil {
				c.add(kp, "%v", err)
			}
			if v := m.Placement[k]; v < 0 || (maxNS > 0 && v >= maxNS) {
				c.add(kp, "is namespace index %d; a multi topology here has %d namespaces: use 0..%d", v, maxNS, maxNS-1)
			}
		}
		for i, svc := range m.ServiceRefs {
			if msgs := validation.IsDNS1035Label(svc); len(msgs) > 0 {
				c.add(mp.Child("serviceRefs").Index(i), "must be a Service name (got %q): %s", svc, strings.Join(msgs, "; "))
			}
		}
	}
	if e := w.Existing; e != nil && w.App == AppExisting {
		if len(e.Namespaces) == 0 {
			c.add(ep.Child("namespaces"), "must list at least one namespace (the entry namespace first)")
		}
		for i, ns := range e.Namespaces {
			np := ep.Child("namespaces").Index(i)
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				c.add(np, "must be a namespace name (got %q)", ns)
			}
			if ProtectedNamespace(ns) {
				c.add(np, "is %q, a system namespace: meshbench never switches its data plane; name the app's own namespaces", ns)
			}
		}
		for _, i := range dups(e.Namespaces) {
			c.add(ep.Child("namespaces").Index(i), "lists %q twice", e.Namespaces[i])
		}
		for i, ref := range e.Workloads {
			var err error
			if strings.Count(ref, "/") == 2 {
				_, _, err = splitNamespaced(ref)
			} else {
				_, _, err = ParseWorkloadRef(ref, false)
			}
			if err != nil {
				c.add(ep.Child("workloads").Index(i), "%v (or \"namespace/Kind/name\")", err)
			}
		}
		if w.Resources != nil {
			c.add(p.Child("resources"), "is not used with app \"existing\": meshbench never changes the deployed workloads' resources; remove it")
		}
	}
}

// ProtectedNamespace reports namespaces meshbench never creates, labels, restarts or deletes: the cluster's own
// (default, kube-system, kube-public, kube-node-lease and any kube-*), Istio's (istio-system, the default Istio root
// namespace, and any istio-*) and the local-path provisioner's. A custom Istio root namespace is only known from the
// cluster's mesh config: preflight and the run refuse it there (mesh.Info.RootNamespace).
func ProtectedNamespace(ns string) bool {
	return ns == "default" || protectedPrefix(ns) || ns == "local-path-storage"
}

// ErrProtectedNamespace is the refusal of a system namespace (RefuseProtected).
var ErrProtectedNamespace = errors.New("system namespace")

// RefuseProtected refuses namespaces meshbench never deploys into, labels, restarts or deletes, whatever the flags:
// ProtectedNamespace (kube-*, istio-*, default, ...) and the cluster's protected ones (the Istio root namespace).
// It reads nothing: the refusal comes before any API call. The deployer, preflight and the mode switcher share it.
func RefuseProtected(namespaces []string, protected ...string) error {
	var bad []string
	for _, ns := range namespaces {
		if ProtectedNamespace(ns) || slices.Contains(protected, ns) {
			bad = append(bad, ns)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("namespace(s) %v: %w of the cluster or of Istio (kube-*, istio-*, default, the mesh root namespace): "+
		"meshbench never deploys into, labels or restarts them, not even with --allow-existing-namespaces; use the app's own namespaces", bad, ErrProtectedNamespace)
}

// protectedPrefix: a name (or a namespace prefix) in the cluster's or Istio's namespace space.
func protectedPrefix(s string) bool {
	return strings.HasPrefix(s, "kube-") || strings.HasPrefix(s, "istio-")
}

// ParseWorkloadRef reads "name" or "Kind/name" (Kind Deployment or StatefulSet, or, with anyKind, any kind). Kind is
// "" for a bare name.
func ParseWorkloadRef(ref string, anyKind bool) (kind, name string, err error) {
	k, n, ok := strings.Cut(ref, "/")
	if !ok {
		k, n = "", ref
	}
	if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
		return "", "", fmt.Errorf("%q: the name must be a Kubernetes object name (\"name\" or \"Kind/name\")", ref)
	}
	if k != "" && !anyKind && k != "Deployment" && k != "StatefulSet" {
		return "", "", fmt.Errorf("%q: kind must be Deployment or StatefulSet (\"name\" or \"Kind/name\")", ref)
	}
	if k != "" && anyKind && !kindRE.MatchString(k) {
		return "", "", fmt.Errorf("%q: %q is not a kind such as Service or Deployment", ref, k)
	}
	return k, n, nil
}

// SplitNamespacedRef reads "namespace/Kind/name" (existing.workloads).
func SplitNamespacedRef(ref string) (ns, kindName string, err error) { return splitNamespaced(ref) }

// splitNamespaced reads "namespace/Kind/name".
func splitNamespaced(ref string) (ns, rest string, err error) {
	parts := strings.SplitN(ref, "/", 3)
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%q: use \"name\", \"Kind/name\" or \"namespace/Kind/name\"", ref)
	}
	if _, _, err := ParseWorkloadRef(parts[1]+"/"+parts[2], false); err != nil {
		return "", "", err
	}
	if msgs := validation.IsDNS1123Label(parts[0]); len(msgs) > 0 {
		return "", "", fmt.Errorf("%q: %q is not a namespace name", ref, parts[0])
	}
	return parts[0], parts[1] + "/" + parts[2], nil
}

var kindRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// maxChainServices bounds a fortio-chain's services (one Deployment each).
const maxChainServices = 200

// chainSane says whether depth and fan-out are in range, so that Services() is small enough to compute.
func chainSane(ch *Chain) bool {
	return ch.Depth >= 1 && ch.FanOut >= 1 && ch.Depth <= MaxChainDepth && ch.FanOut <= 8
}

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

func validateWaypoint(c *collector, p *field.Path, w Waypoint) {
	c.oneOf(p.Child("scope"), string(w.Scope), []string{string(WaypointPerNamespace), string(WaypointShared)})
	if msgs := validation.IsDNS1123Label(w.Name); len(msgs) > 0 {
		c.add(p.Child("name"), "must be a DNS label (got %q)", w.Name)
	}
	c.oneOf(p.Child("for"), w.For, []string{"service", "workload", "all"})
}

func validateLoad(c *collector, p *field.Path, l *LoadSpec, window time.Duration) {
	if len(l.QPS) == 0 {
		c.add(p.Child("qps"), "must list at least one level, a number > 0 or \"max\"")
	}
	seen := map[string]bool{}
	for i, q := range l.QPS {
		if !q.Max && !(q.Value > 0) {
			c.add(p.Child("qps").Index(i), "must be > 0 or \"max\" (got %s)", q)
			continue
		}
		if !q.Max && (q.Value < MinQPSLevel || q.Value > MaxQPSLevel) {
			c.add(p.Child("qps").Index(i), "must be between %s and %s requests per second, or \"max\" (got %g): below, a load window holds "+
				"too few requests to measure; above, no load generator drives it (\"max\" measures the highest rate the clients reach)",
				strconv.FormatFloat(MinQPSLevel, 'f', -1, 64), strconv.FormatFloat(MaxQPSLevel, 'f', -1, 64), q.Value)
			continue
		}
		if seen[q.String()] {
			c.add(p.Child("qps").Index(i), "lists level %s twice", q)
		}
		seen[q.String()] = true
	}
	c.intRange(p.Child("connections"), l.Connections, 1, 10000, "")
	c.intRange(p.Child("payloadBytes"), l.PayloadBytes, 0, 10<<20, "")
	if !strings.HasPrefix(l.Path, "/") {
		c.add(p.Child("path"), "must start with '/' (got %q)", l.Path)
	}
	for _, d := range []struct {
		n string
		v Duration
	}{{"duration", l.Duration}, {"warmUp", l.WarmUp}, {"trimStart", l.TrimStart}, {"trimEnd", l.TrimEnd}} {
		c.nonNegative(p.Child(d.n), d.v)
	}
	if min := l.MinDuration(window); l.Duration.Duration < min {
		c.add(p.Child("duration"), "is %s but warmUp + trimStart + windows.load + trimEnd is %s; raise load.duration or shorten the window", l.Duration, D(min))
	}
	c.intRange(p.Child("clients"), l.Clients, 1, 100, "")
}

// validateTargets checks load.targets and load.login against the app.
func validateTargets(c *collector, p *field.Path, l *LoadSpec, app App) {
	if app.UserApp() && len(l.Targets) == 0 {
		c.add(p.Child("targets"), "is required with app %q: name at least one Service (service, port, path) or url to send load to", app)
	}
	if !app.UserApp() && len(l.Targets) > 0 {
		c.add(p.Child("targets"), "is only used with apps \"manifests\" and \"existing\"; app %q sends load to its entry service (choose the path with load.path): remove load.targets", app)
	}
	names := map[string]bool{}
	for i, t := range l.Targets {
		tp := p.Child("targets").Index(i)
		if t.Protocol == ProtocolTCP && len(t.Headers) > 0 {
			c.add(tp.Child("headers"), "are not sent with protocol tcp (fortio's echo client has no headers); remove them or use protocol http")
		}
		validateAddress(c, tp, t.Service, t.Namespace, t.URL, t.Port, app)
		c.oneOf(tp.Child("protocol"), t.Protocol, []string{ProtocolHTTP, ProtocolGRPC, ProtocolTCP})
		if t.Path != "" && !strings.HasPrefix(t.Path, "/") {
			c.add(tp.Child("path"), "must start with '/' (got %q)", t.Path)
		}
		if t.Path != "" && t.Protocol != ProtocolHTTP {
			c.add(tp.Child("path"), "is only used with protocol http; remove it")
		}
		c.intRange(tp.Child("weight"), t.Weight, 1, 1000, "a relative share of the load")
		if !nameRE.MatchString(t.Name) || len(t.Name) > 63 {
			c.add(tp.Child("name"), "must be a short name of lower-case letters, digits and '-' (got %q); it labels the target's samples", t.Name)
		}
		if names[t.Name] {
			c.add(tp.Child("name"), "duplicates target %q; give each target a distinct name", t.Name)
		}
		names[t.Name] = true
		validateHeaders(c, tp.Child("headers"), t.Headers)
	}
	if lg := l.Login; lg != nil {
		lp := p.Child("login")
		validateAddress(c, lp, lg.Service, lg.Namespace, lg.URL, lg.Port, app)
		if lg.Path != "" && !strings.HasPrefix(lg.Path, "/") {
			c.add(lp.Child("path"), "must start with '/' (got %q)", lg.Path)
		}
		c.oneOf(lp.Child("method"), lg.Method, []string{"GET", "POST"})
		kind, name, ok := strings.Cut(lg.Capture, ":")
		if !ok || name == "" || (kind != "cookie" && kind != "header" && kind != "json") {
			c.add(lp.Child("capture"), "must be \"cookie:<name>\", \"header:<name>\" or \"json:<field>\" (got %q)", lg.Capture)
		}
		if msgs := validation.IsHTTPHeaderName(lg.SetHeader); len(msgs) > 0 {
			c.add(lp.Child("setHeader"), "must be an HTTP header name (got %q)", lg.SetHeader)
		}
		if !strings.Contains(lg.Value, "{value}") {
			c.add(lp.Child("value"), "must contain {value}, where the captured credential goes (got %q)", lg.Value)
		}
		validateHeaders(c, lp.Child("headers"), lg.Headers)
	}
}

func validateAddress(c *collector, p *field.Path, service, namespace, rawURL string, port int, app App) {
	switch {
	case service == "" && rawURL == "":
		c.add(p, "sets neither service nor url: name the app's Service (and port) or give a full url")
	case service != "" && rawURL != "":
		c.add(p, "sets both service and url: set one of them")
	}
	if service != "" {
		if msgs := validation.IsDNS1035Label(service); len(msgs) > 0 {
			c.add(p.Child("service"), "must be a Service name (got %q)", service)
		}
		c.intRange(p.Child("port"), port, 1, 65535, "the Service's port number")
	}
	if rawURL != "" {
		u := rawURL
		if !strings.Contains(u, "://") {
			u = "grpc://" + u
		}
		if pu, err := url.Parse(u); err != nil || pu.Host == "" {
			c.add(p.Child("url"), "must be a URL such as http://frontend.shop.svc:80/ or host:port (got %q)", rawURL)
		}
	}
	if namespace != "" && app != AppExisting {
		c.add(p.Child("namespace"), "is only used with app \"existing\" (meshbench places the other apps' Services itself); remove it")
	}
	if namespace != "" && ProtectedNamespace(namespace) {
		c.add(p.Child("namespace"), "is %q, a system namespace: meshbench sends load only to the app's own namespaces (existing.namespaces)", namespace)
	}
}

func validateHeaders(c *collector, p *field.Path, h map[string]string) {
	for _, k := range sortedKeys(h) {
		if msgs := validation.IsHTTPHeaderName(k); len(msgs) > 0 {
			c.add(p.Key(k), "is not an HTTP header name")
		}
	}
}

func validateWindows(c *collector, p *field.Path, w Windows, scrape time.Duration) {
	c.nonNegative(p.Child("idle"), w.Idle)
	c.nonNegative(p.Child("settle"), w.Settle)
	switch {
	case w.Load.Duration <= 0:
		c.add(p.Child("load"), "must be > 0, e.g. \"10m\" as in study A")
	case scrape > 0 && w.Load.Duration < 4*scrape:
		c.add(p.Child("load"), "is %s, shorter than 4 scrape intervals (%s): rates need >= 4 samples; lengthen the window", w.Load, D(4*scrape))
	}
	if w.Idle.Duration > 0 && scrape > 0 && w.Idle.Duration < 4*scrape {
		c.add(p.Child("idle"), "is %s, shorter than 4 scrape intervals (%s): rates need >= 4 samples; lengthen the window", w.Idle, D(4*scrape))
	}
	c.intRange(p.Child("repetitions"), w.Repetitions, 1, 100, "use >= 3 for confidence intervals")
	c.intRange(p.Child("attempts"), w.Attempts, 1, 5, "1 fails a case on its first incomplete window; 2 (the default) measures it once more")
	c.oneOf(p.Child("interleave"), string(w.Interleave), []string{string(InterleaveSerpentine), string(InterleaveRandom), string(InterleaveNone)})
	if w.Seed < 0 {
		c.add(p.Child("seed"), "must not be negative (got %d)", w.Seed)
	}
}

func validatePrometheus(c *collector, p *field.Path, pr Prometheus) {
	if pr.URL != "" && pr.Service != nil {
		c.add(p, "set either url or service, not both")
	}
	if pr.URL != "" {
		u, err := url.Parse(pr.URL)
		switch {
		case err != nil:
			c.add(p.Child("url"), "must be an http:// or https:// URL such as \"http://127.0.0.1:9090\"") // the text may hold a password: not echoed
		case u.User != nil:
			// run.json echoes the scenario, logs and reports name the URL and schedule stores it in a ConfigMap: a
			// password there is a password in all of them.
			c.add(p.Child("url"), "must not carry credentials (got %q): they would be written to run.json, logs, reports and the scheduled ConfigMap; "+
				"put a token in a file and name it in bearerTokenFile", u.Redacted())
		default:
			if err := CheckHTTPURL(pr.URL, "http://127.0.0.1:9090"); err != nil {
				c.add(p.Child("url"), "%v", err)
			}
		}
	}
	if pr.URL == "" && pr.Service != nil {
		// Through the API server's service proxy the requests carry the kubeconfig's credentials and its CA
		// (collectors/prom NewAPI refuses these fields there, once the run has started).
		for _, f := range []struct {
			name string
			set  bool
		}{{"bearerTokenFile", pr.BearerTokenFile != ""}, {"caFile", pr.CAFile != ""}, {"insecureSkipVerify", pr.InsecureSkipVerify}} {
			if f.set {
				c.add(p.Child(f.name), "applies to prometheus.url only: through prometheus.service the requests go through the API server with the kubeconfig's credentials; remove it, or set url instead of service")
			}
		}
	}
	if svc := pr.Service; svc != nil {
		sp := p.Child("service")
		if msgs := validation.IsDNS1123Label(svc.Namespace); len(msgs) > 0 {
			c.add(sp.Child("namespace"), "must be a namespace name (got %q)", svc.Namespace)
		}
		if msgs := validation.IsDNS1123Label(svc.Name); len(msgs) > 0 {
			c.add(sp.Child("name"), "must be a Service name (got %q)", svc.Name)
		}
		validatePort(c, sp.Child("port"), svc.Port)
		c.oneOf(sp.Child("scheme"), svc.Scheme, []string{"http", "https"})
	}
	if pr.ScrapeInterval.Duration != 0 && pr.ScrapeInterval.Duration < time.Second {
		c.add(p.Child("scrapeInterval"), "must be >= 1s or unset to auto-detect (got %s)", pr.ScrapeInterval)
	}
	if pr.Timeout.Duration <= 0 {
		c.add(p.Child("timeout"), "must be > 0 (got %s)", pr.Timeout)
	}
	if pr.KubeletSampleInterval.Duration < time.Second {
		c.add(p.Child("kubeletSampleInterval"), "must be >= 1s (got %s)", pr.KubeletSampleInterval)
	}
}

func validateCNI(c *collector, p *field.Path, n CNI) {
	hasUDP := false
	for i, t := range n.Tests {
		c.oneOf(p.Child("tests").Index(i), string(t), strs(AllCNITests))
		hasUDP = hasUDP || t == CNITestUDP
	}
	for _, i := range dups(n.Tests) {
		c.add(p.Child("tests").Index(i), "lists %q twice", n.Tests[i])
	}
	for i, pa := range n.Paths {
		c.oneOf(p.Child("paths").Index(i), string(pa), strs(AllCNIPaths))
	}
	for _, i := range dups(n.Paths) {
		c.add(p.Child("paths").Index(i), "lists %q twice", n.Paths[i])
	}
	if n.Duration.Duration < time.Second {
		c.add(p.Child("duration"), "must be >= 1s (got %s)", n.Duration)
	}
	c.intRange(p.Child("samples"), n.Samples, 1, 100, "use >= 3 for confidence intervals")
	c.intRange(p.Child("streams"), n.Streams, 1, 128, "")
	if n.Omit.Duration < 0 || (n.Duration.Duration > 0 && n.Omit.Duration >= n.Duration.Duration) {
		c.add(p.Child("omit"), "must be >= 0 and shorter than cni.duration (got %s)", n.Omit)
	}
	switch {
	case hasUDP && n.UDPBitrate == "":
		c.add(p.Child("udpBitrate"), "is required with the udp test: set a target such as \"1G\" or \"0\" (unlimited); iperf3's silent 1 Mbit/s default is not a measurement")
	case n.UDPBitrate != "":
		if _, err := ParseBitrate(n.UDPBitrate); err != nil {
			c.add(p.Child("udpBitrate"), "%v", err)
		}
	}
	c.intRange(p.Child("udpPacketBytes"), n.UDPPacketBytes, 0, 65507, "")
	c.intRange(p.Child("requestBytes"), n.RequestBytes, 1, 1<<20, "")
	c.intRange(p.Child("responseBytes"), n.ResponseBytes, 1, 1<<20, "")
	c.oneOf(p.Child("rrTool"), string(n.RRTool), []string{string(RRToolAuto), string(RRToolNetperf), string(RRToolBuiltin)})
	pl := n.Placement
	for _, nd := range []struct{ name, v string }{{"clientNode", pl.ClientNode}, {"serverNode", pl.ServerNode}} {
		if nd.v != "" && len(validation.IsDNS1123Subdomain(nd.v)) > 0 {
			c.add(p.Child("placement", nd.name), "must be a node name as kubectl get nodes shows it: lower-case letters, digits, '-' and '.' (got %q)", nd.v)
		}
	}
	if pl.ClientNode != "" && pl.ClientNode == pl.ServerNode {
		c.add(p.Child("placement", "serverNode"), "must differ from clientNode (%q): cross-node paths need two nodes", pl.ClientNode)
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

func validateImages(c *collector, p *field.Path, im Images) {
	regOK := validRegistry(c, p.Child("registry"), im.Registry)
	tagOK := validTag(c, p.Child("tag"), im.Tag)
	for _, f := range []struct{ n, v, derived string }{
		{"agent", im.Agent, ImageRef(im.Registry, AgentRepository, im.Tag)},
		{"meshbench", im.Meshbench, ImageRef(im.Registry, MeshbenchRepository, im.Tag)},
		{"network", im.Network, ""},
	} {
		if f.v == f.derived && !(regOK && tagOK) {
			continue // derived from a registry or tag already reported
		}
		if err := CheckImageRef(f.v); err != nil || f.v == "" || strings.Contains(f.v, "://") {
			c.add(p.Child(f.n), "must be an image reference such as \"registry.example/team/image:v1\" (got %q)%s", f.v, nameErr(err))
		}
	}
	validRegistry(c, p.Child("bankOfAnthos", "registry"), im.BankOfAnthos.Registry)
	validTag(c, p.Child("bankOfAnthos", "tag"), im.BankOfAnthos.Tag)
	validRegistry(c, p.Child("bookinfo", "registry"), im.Bookinfo.Registry)
	validTag(c, p.Child("bookinfo", "tag"), im.Bookinfo.Tag)
	c.oneOf(p.Child("pullPolicy"), im.PullPolicy, []string{"Always", "IfNotPresent", "Never"})
}

// validRegistry checks a registry prefix (host[:port][/path]) by composing an image name under it, as the pods will.
func validRegistry(c *collector, p *field.Path, reg string) bool {
	var err error
	switch {
	case strings.Contains(reg, "://"):
		c.add(p, "must not have a URL scheme (got %q): give host[:port][/path] such as \"ghcr.io/meshbench\"; a plain-HTTP registry is the nodes' container runtime setting (meshbench images push --insecure for pushing)", reg)
		return false
	case reg != "":
		err = CheckImageRef(ImageRef(reg, AgentRepository, DefaultImageTag))
	}
	if reg == "" || err != nil {
		c.add(p, "must be a registry host with an optional path, lower-case, without tag, such as \"ghcr.io/meshbench\" or \"172.30.0.1:5000/meshbench\" (got %q)%s", reg, nameErr(err))
		return false
	}
	return true
}

// CheckImageRef parses an image reference with go-containerregistry's name package, then applies the distribution
// reference grammar it leaves out (github.com/distribution/reference v0.5.0 regexp.go: path components are lower-case alphanumerics
// joined by '.', '_', '__' or dashes; a tag starts with a word character; a registry is a host name or IP with an
// optional port 1-65535), so "a//b", "-x/y" and "x/y:-tag", which name accepts and no runtime pulls, are refused.
// A reference without tag or digest means ":latest", as to the container runtime.
func CheckImageRef(ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	repo := r.Context()
	for _, c := range strings.Split(repo.RepositoryStr(), "/") {
		if !pathComponentRE.MatchString(c) {
			return fmt.Errorf("path component %q: lower-case letters and digits, separated by '.', '_', '__' or '-'", c)
		}
	}
	if t, ok := r.(name.Tag); ok && !tagRE.MatchString(t.TagStr()) {
		return fmt.Errorf("tag %q: letters, digits, '_', '.' and '-', not starting with '.' or '-'", t.TagStr())
	}
	if reg := repo.RegistryStr(); !registryRE.MatchString(reg) {
		return fmt.Errorf("registry %q: a host name or IP address with an optional port", reg)
	} else if _, port, ok := strings.Cut(strings.TrimPrefix(reg[strings.LastIndexByte(reg, ']')+1:], "["), ":"); ok {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("registry %q: the port must be a number from 1 to 65535", reg)
		}
	}
	return nil
}

var (
	pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	registryRE      = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?$`)
)

// tagRE is the distribution spec's tag grammar (go-containerregistry's name package checks only the characters).
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func validTag(c *collector, p *field.Path, tag string) bool {
	if !tagRE.MatchString(tag) {
		c.add(p, "must be an image tag: 1 to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-' (got %q)", tag)
		return false
	}
	return true
}

func nameErr(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateDurationBounds reports every duration setting above MaxDuration, wherever it is in the spec (a new
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
			if d > MaxDuration && !(p.String() == "spec.load.duration" && d == derivedLoad) {
				c.add(p, "is %s; at most %s: split a longer study into several runs", D(d), D(MaxDuration))
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
