package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateWorkload checks spec.workload, its parts in the order of the file.
func validateWorkload(c *collector, p *field.Path, w *Workload, cniOnly bool) {
	validateApp(c, p.Child("app"), w.App, cniOnly)
	services := validateChain(c, p, w)
	validateUserApp(c, p, w)
	c.intRange(p.Child("replicas"), w.Replicas, 1, 100, "")
	validateClusterDomain(c, p.Child("clusterDomain"), w.ClusterDomain)
	validateNamespacePrefix(c, p.Child("namespacePrefix"), w.NamespacePrefix)
	names := map[string]bool{}
	for i, t := range w.Topologies {
		validateTopology(c, p, w, i, services)
		if names[t.Name] {
			c.add(p.Child("topologies").Index(i).Child("name"), "duplicates topology %q; give each topology a distinct name", t.Name)
		}
		names[t.Name] = true
	}
	validateNodeSelector(c, p.Child("nodeSelector"), w.NodeSelector)
	validateTolerations(c, p.Child("tolerations"), w.Tolerations)
	if w.Resources != nil && w.App != AppExisting { // existing: refused by validateUserApp
		validateResources(c, p.Child("resources"), w.Resources, w.App)
	}
}

// validateApp checks workload.app: required unless the scenario is for meshbench cni alone.
func validateApp(c *collector, p *field.Path, app App, cniOnly bool) {
	switch {
	case app == "" && !cniOnly:
		c.add(p, "is required: one of %s (it has no default: it is what the run measures); a scenario for meshbench cni alone leaves workload out and sets cni",
			strings.Join(quoteAll(Apps), ", "))
	case app != "":
		c.oneOf(p, string(app), strs(Apps))
	}
}

// validateChain checks workload.chain and returns the app's number of services, the bound of a multi topology's
// namespaces: the chain's, Bank of Anthos' and Bookinfo's own, and maxChainServices for the user's apps (unknown
// before the manifests are read; workloads checks the real count).
func validateChain(c *collector, p *field.Path, w *Workload) int {
	services := 8 // bank-of-anthos: 6 services + 2 databases (study A's "8 microservices")
	switch {
	case w.App == AppFortioChain && w.Chain != nil:
		cp := p.Child("chain")
		c.intRange(cp.Child("depth"), w.Chain.Depth, 1, maxChainDepth, "")
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
		services = maxChainServices
	}
	return services
}

// validateClusterDomain checks workload.clusterDomain, the kubelet's DNS domain (empty: detected).
func validateClusterDomain(c *collector, p *field.Path, d string) {
	if d == "" {
		return
	}
	if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		c.add(p, "must be a DNS domain such as \"cluster.local\" without leading or trailing dot (got %q); it is the kubelet's clusterDomain", d)
	}
}

// validateNamespacePrefix checks workload.namespacePrefix: a DNS label start, outside the cluster's and Istio's names.
func validateNamespacePrefix(c *collector, p *field.Path, prefix string) {
	if msgs := validation.IsDNS1123Label(strings.TrimSuffix(prefix, "-") + "x"); len(msgs) > 0 || len(prefix) > 30 {
		c.add(p, "must be lower-case letters, digits and '-', at most 30 characters (got %q)", prefix)
	}
	if protectedPrefix(prefix) {
		c.add(p, "is %q: namespaces starting kube- or istio- belong to the cluster and to Istio; meshbench never creates or changes them (use e.g. \"mb-\")", prefix)
	}
}

// validateTopology checks workload.topologies[i] but the uniqueness of its name; services is the app's number of
// services (validateChain).
func validateTopology(c *collector, p *field.Path, w *Workload, i, services int) {
	t := w.Topologies[i]
	tp := p.Child("topologies").Index(i)
	c.oneOf(tp.Child("kind"), string(t.Kind), []string{string(TopologySingle), string(TopologyMulti)})
	if t.Kind == TopologySingle && t.Namespaces != 0 {
		c.add(tp.Child("namespaces"), "is only used with kind \"multi\" (got %d); remove it or set kind: multi", t.Namespaces)
	}
	services = validateChainDepth(c, tp.Child("chainDepth"), w, t, services)
	if w.App == AppExisting && i == 0 && (t.Kind != TopologySingle || len(w.Topologies) > 1) {
		c.add(p.Child("topologies"), "app \"existing\" is measured where it is deployed: remove topologies (the namespaces are existing.namespaces)")
	}
	if t.Kind == TopologyMulti && (t.Namespaces < 0 || t.Namespaces > services) {
		c.add(tp.Child("namespaces"), "must be between 0 (one service per namespace) and the number of services (%d) (got %d)", services, t.Namespaces)
	}
	if t.Replicas != w.Replicas { // an inherited value was already checked at workload.replicas
		c.intRange(tp.Child("replicas"), t.Replicas, 1, 100, "")
	}
	validateTopologyName(c, tp.Child("name"), w.App, w.NamespacePrefix, t)
}

// validateChainDepth checks topologies[].chainDepth and returns the number of services of the chain the topology
// deploys (services when it keeps the workload's chain or the chain is out of range).
func validateChainDepth(c *collector, p *field.Path, w *Workload, t Topology, services int) int {
	switch {
	case t.ChainDepth != 0 && w.App != AppFortioChain:
		c.add(p, "is only used with app \"fortio-chain\" (got %d); remove it or change workload.app", t.ChainDepth)
	case t.ChainDepth != 0:
		c.intRange(p, t.ChainDepth, 1, maxChainDepth, "leave it out to use workload.chain.depth")
		if ch := w.ChainFor(t); ch != nil && chainSane(ch) && t.ChainDepth <= maxChainDepth {
			services = ch.Services()
			if services > maxChainServices {
				c.add(p, "describes %d services with workload.chain.fanOut %d; at most %d: lower chainDepth or fanOut", services, ch.FanOut, maxChainServices)
			}
		}
	}
	return services
}

// validateTopologyName checks a topology's name: short, and naming no system namespace with the prefix.
func validateTopologyName(c *collector, p *field.Path, app App, prefix string, t Topology) {
	ns := prefix + t.Name // the first namespace workloads.Namespaces gives the topology
	if t.Kind == TopologyMulti {
		ns += "-0"
	}
	if app != AppExisting && !protectedPrefix(prefix) && ProtectedNamespace(ns) {
		c.add(p, "with namespacePrefix %q names namespace %q, a system namespace meshbench never creates or changes; rename the topology", prefix, ns)
	}
	if !nameRE.MatchString(t.Name) || len(t.Name) > 20 {
		c.add(p, "must be at most 20 lower-case letters, digits and '-' (got %q)", t.Name)
	}
}

// validateNodeSelector checks workload.nodeSelector's keys and values as label keys and values, in key order.
func validateNodeSelector(c *collector, p *field.Path, sel map[string]string) {
	for _, k := range sortedKeys(sel) {
		kp := p.Key(k)
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			c.add(kp, "is not a valid label key: %s", strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(sel[k]); len(msgs) > 0 {
			c.add(kp, "has an invalid label value %q: %s", sel[k], strings.Join(msgs, "; "))
		}
	}
}

// validateTolerations checks what the API server would refuse at apply time, after the run started (k8s.io/api
// core/v1 Toleration's field docs; docs/scenario.md).
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

// validateUserApp checks workload.manifests and workload.existing: present exactly with their app. What only reading
// the manifests can tell (cluster-scoped objects, a Scale name without a workload) is workloads.CheckManifests'.
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
		validateManifests(c, mp, m, w.Topologies)
	}
	if e := w.Existing; e != nil && w.App == AppExisting {
		validateExisting(c, ep, e)
		if w.Resources != nil {
			c.add(p.Child("resources"), "is not used with app \"existing\": meshbench never changes the deployed workloads' resources; remove it")
		}
	}
}

// validateManifests checks workload.manifests of app manifests against the topologies it is placed in.
func validateManifests(c *collector, p *field.Path, m *Manifests, ts []Topology) {
	switch {
	case len(m.Paths) == 0 && m.Kustomization == "":
		c.add(p, "sets neither paths nor kustomization: set one of them")
	case len(m.Paths) > 0 && m.Kustomization != "":
		c.add(p, "sets both paths and kustomization: set one of them (a kustomization can list the files as resources)")
	}
	for i, f := range m.Paths {
		if strings.TrimSpace(f) == "" {
			c.add(p.Child("paths").Index(i), "is empty: name a YAML file or a directory")
		}
	}
	for i, ref := range m.Scale {
		if _, _, err := ParseWorkloadRef(ref, false); err != nil {
			c.add(p.Child("scale").Index(i), "%v", err)
		}
	}
	validatePlacement(c, p.Child("placement"), m.Placement, ts)
	for i, svc := range m.ServiceRefs {
		if msgs := validation.IsDNS1035Label(svc); len(msgs) > 0 {
			c.add(p.Child("serviceRefs").Index(i), "must be a Service name (got %q): %s", svc, strings.Join(msgs, "; "))
		}
	}
}

// validatePlacement checks manifests.placement, in key order: only with a multi topology, each index within the
// namespaces of every multi topology that sets their number.
func validatePlacement(c *collector, p *field.Path, placement map[string]int, ts []Topology) {
	multi := false
	maxNS := 0 // the fewest namespaces a multi topology sets; 0: none sets them
	for _, t := range ts {
		if t.Kind == TopologyMulti {
			multi = true
			if t.Namespaces > 0 && (maxNS == 0 || t.Namespaces < maxNS) {
				maxNS = t.Namespaces
			}
		}
	}
	if len(placement) > 0 && !multi {
		c.add(p, "is only used with multi topologies; remove it or add a topology of kind multi")
	}
	for _, k := range sortedKeys(placement) {
		kp := p.Key(k)
		if _, _, err := ParseWorkloadRef(k, true); err != nil {
			c.add(kp, "%v", err)
		}
		if v := placement[k]; v < 0 || (maxNS > 0 && v >= maxNS) {
			c.add(kp, "is namespace index %d; a multi topology here has %d namespaces: use 0..%d", v, maxNS, maxNS-1)
		}
	}
}

// validateExisting checks workload.existing of app existing: its namespaces (the app's own, each once) and
// workload references.
func validateExisting(c *collector, p *field.Path, e *Existing) {
	if len(e.Namespaces) == 0 {
		c.add(p.Child("namespaces"), "must list at least one namespace (the entry namespace first)")
	}
	for i, ns := range e.Namespaces {
		np := p.Child("namespaces").Index(i)
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			c.add(np, "must be a namespace name (got %q)", ns)
		}
		if ProtectedNamespace(ns) {
			c.add(np, "is %q, a system namespace: meshbench never switches its data plane; name the app's own namespaces", ns)
		}
	}
	for _, i := range dups(e.Namespaces) {
		c.add(p.Child("namespaces").Index(i), "lists %q twice", e.Namespaces[i])
	}
	for i, ref := range e.Workloads {
		var err error
		if strings.Count(ref, "/") == 2 {
			_, _, err = splitNamespaced(ref)
		} else {
			_, _, err = ParseWorkloadRef(ref, false)
		}
		if err != nil {
			c.add(p.Child("workloads").Index(i), "%v (or \"namespace/Kind/name\")", err)
		}
	}
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
	return ch.Depth >= 1 && ch.FanOut >= 1 && ch.Depth <= maxChainDepth && ch.FanOut <= 8
}
