package workloads

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// manifests builds app "manifests" in the builder's topology: the user's objects, each placed into a topology
// namespace and labeled with the run; pod templates get the app labels (selectors are never changed: they are
// immutable and the user's own), the node selector and, across namespaces, fully qualified service references.
func (b *builder) manifests() error {
	if b.s.Spec.Workload.Manifests == nil {
		return fmt.Errorf("manifests: spec.workload.manifests is not set")
	}
	read, refs, ps := b.renderer.checkManifests(b.s)
	if len(ps) > 0 {
		return ps
	}
	objs := make([]*unstructured.Unstructured, len(read))
	components := 0
	for i, o := range read {
		objs[i] = o.obj.DeepCopy() // the renderer's objects are shared by every build
		if isWorkloadKind(o.obj.GetKind()) {
			components++
		}
	}
	ns := Namespaces(b.s.Spec.Workload.NamespacePrefix, b.topo, max(components, refs.maxNamespace()+1))
	b.namespaces(ns)
	svcNS, err := b.placeObjects(objs, refs, ns)
	if err != nil {
		return err
	}
	domain := domainOf(b.s.Spec.Workload)
	for _, o := range objs {
		if err := b.addManifestObject(o, refs, svcNS, domain); err != nil {
			return err
		}
	}
	sort.SliceStable(b.target.Workloads, func(i, j int) bool {
		wi, wj := b.target.Workloads[i], b.target.Workloads[j]
		return wi.Namespace+"/"+wi.Kind+"/"+wi.Name < wj.Namespace+"/"+wj.Kind+"/"+wj.Name
	})
	return b.manifestLoadTargets(svcNS, domain)
}

// placeObjects sets each object's namespace from the placement (in a single-namespace topology, the first of ns)
// and returns the namespace of each Service by name.
func (b *builder) placeObjects(objs []*unstructured.Unstructured, refs manifestRefs, ns []string) (map[string]string, error) {
	svcNS := map[string]string{}
	for _, o := range objs {
		idx := refs.namespaceIndex(o.GetKind(), o.GetName())
		if b.topo.Kind != scenario.TopologyMulti {
			idx = 0
		}
		if idx < 0 || idx >= len(ns) {
			return nil, fmt.Errorf("manifests: placement of %s/%s is namespace %d; topology %s has %d namespaces", o.GetKind(), o.GetName(), idx, b.topo.Name, len(ns))
		}
		o.SetNamespace(ns[idx])
		if o.GetKind() == "Service" {
			svcNS[o.GetName()] = ns[idx]
		}
	}
	return svcNS, nil
}

// addManifestObject labels o with the run (a Deployment or StatefulSet as its own component), patches its pod
// template, scales it when scale names it, and adds it to the build and the target.
func (b *builder) addManifestObject(o *unstructured.Unstructured, refs manifestRefs, svcNS map[string]string, domain string) error {
	kind, name := o.GetKind(), o.GetName()
	workload := isWorkloadKind(kind)
	component := ""
	if workload {
		component = name
	}
	o.SetLabels(kube.MergeLabels(o.GetLabels(), b.labels(component)))
	if tp := podTemplatePath(kind); tp != nil {
		if err := b.patchTemplate(o, tp, component, svcNS, domain); err != nil {
			return fmt.Errorf("manifests: %s/%s: %w", kind, name, err)
		}
	}
	switch {
	case kind == "Service":
		b.target.Services = append(b.target.Services, name)
	case workload:
		replicas := int32(1)
		if r, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); found {
			replicas = int32(r)
		}
		if refs.scaled(kind, name) {
			replicas = b.replicas
			if err := unstructured.SetNestedField(o.Object, int64(replicas), "spec", "replicas"); err != nil {
				return fmt.Errorf("manifests: %s/%s: set replicas: %w", kind, name, err)
			}
		}
		b.target.Workloads = append(b.target.Workloads, workloadRef{Kind: kind, Namespace: o.GetNamespace(), Name: name, Replicas: replicas})
	}
	b.add(o)
	return nil
}

// manifestLoadTargets sets the target's load targets: every one, not only the first, since load is shared
// between them by weight; a target's service must be a Service of the manifests.
func (b *builder) manifestLoadTargets(svcNS map[string]string, domain string) error {
	var es []target.LoadTarget
	firstNS := ""
	for i, t := range b.s.Spec.Load.Targets {
		n := ""
		if t.Service != "" {
			var ok bool
			if n, ok = svcNS[t.Service]; !ok {
				return fmt.Errorf("manifests: spec.load.targets[%d].service %q is no Service of the manifests", i, t.Service)
			}
		}
		if i == 0 {
			firstNS = n
		}
		es = append(es, loadTargetOf(t, n, domain, b.s.Spec.Load.Path))
	}
	if len(es) > 0 {
		setLoadTargets(&b.target, es, b.s.Spec.Load.Targets[0], firstNS)
	}
	return nil
}

// podTemplatePath is where a kind keeps its pod template: only the workloads meshbench tracks hold one here
// (checkManifests refuses the other kinds that run pods).
func podTemplatePath(kind string) []string {
	if isWorkloadKind(kind) {
		return []string{"spec", "template"}
	}
	return nil
}

// mergeTolerations appends spec.workload.tolerations to the template's own (the user's manifests may tolerate
// taints of their own), skipping one the template already has.
func mergeTolerations(tmpl map[string]any, ts []corev1.Toleration) error {
	if len(ts) == 0 {
		return nil
	}
	cur, _, err := unstructured.NestedSlice(tmpl, "spec", "tolerations")
	if err != nil {
		return fmt.Errorf("read tolerations: %w", err)
	}
	for i := range ts {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ts[i])
		if err != nil {
			return fmt.Errorf("toleration %d: %w", i, err)
		}
		if !slices.ContainsFunc(cur, func(c any) bool { return equality.Semantic.DeepEqual(c, any(u)) }) {
			cur = append(cur, u)
		}
	}
	return unstructured.SetNestedSlice(tmpl, cur, "spec", "tolerations")
}

// patchTemplate labels a pod template (app labels; the component for Deployments and StatefulSets), merges the
// scenario's node selector and tolerations and rewrites service references of other namespaces to their FQDN.
func (b *builder) patchTemplate(o *unstructured.Unstructured, tp []string, component string, svcNS map[string]string, domain string) error {
	tmpl, found, err := unstructured.NestedMap(o.Object, tp...)
	if err != nil || !found {
		return fmt.Errorf("read pod template: found %v: %w", found, err)
	}
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	if err := unstructured.SetNestedStringMap(tmpl, kube.MergeLabels(labels, b.labels(component)), "metadata", "labels"); err != nil {
		return err
	}
	if sel := b.s.Spec.Workload.NodeSelector; len(sel) > 0 {
		cur, _, _ := unstructured.NestedStringMap(tmpl, "spec", "nodeSelector")
		if err := unstructured.SetNestedStringMap(tmpl, kube.MergeLabels(cur, sel), "spec", "nodeSelector"); err != nil {
			return err
		}
	}
	if err := mergeTolerations(tmpl, b.s.Spec.Workload.Tolerations); err != nil {
		return err
	}
	if err := rewriteServiceRefs(tmpl, b.s.Spec.Workload.Manifests.ServiceRefs, o.GetNamespace(), svcNS, domain); err != nil {
		return err
	}
	return unstructured.SetNestedMap(o.Object, tmpl, tp...)
}

// rewriteServiceRefs rewrites, in the args and env values of the template's containers and init containers, each
// of refs whose Service is in another namespace than podNS to its FQDN.
func rewriteServiceRefs(tmpl map[string]any, refs []string, podNS string, svcNS map[string]string, domain string) error {
	rewrite := map[string]string{}
	for _, svc := range refs {
		if n, ok := svcNS[svc]; ok && n != podNS {
			rewrite[svc] = fqdn(svc, n, domain)
		}
	}
	if len(rewrite) == 0 {
		return nil
	}
	for _, list := range []string{"containers", "initContainers"} {
		cs, _, _ := unstructured.NestedSlice(tmpl, "spec", list)
		for _, c := range cs {
			if cm, ok := c.(map[string]any); ok {
				rewriteContainer(cm, rewrite)
			}
		}
		if len(cs) > 0 {
			if err := unstructured.SetNestedSlice(tmpl, cs, "spec", list); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewriteContainer applies rewriteHosts to a container's args and env values, in place.
func rewriteContainer(cm map[string]any, rewrite map[string]string) {
	if args, ok := cm["args"].([]any); ok {
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = rewriteHosts(s, rewrite)
			}
		}
	}
	if envs, ok := cm["env"].([]any); ok {
		for _, e := range envs {
			if em, ok := e.(map[string]any); ok {
				if v, ok := em["value"].(string); ok {
					em["value"] = rewriteHosts(v, rewrite)
				}
			}
		}
	}
}

// hostChar is a character that continues a host name: a match next to one is part of a longer name
// ("backend-v2", "backend.other", "mybackend").
func hostChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}

// rewriteHosts replaces every whole-host occurrence of a key of names in s by its value.
func rewriteHosts(s string, names map[string]string) string {
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, name := range keys {
		var sb strings.Builder
		rest := s
		prev := byte(0)
		for {
			i := strings.Index(rest, name)
			if i < 0 {
				sb.WriteString(rest)
				break
			}
			before := prev
			if i > 0 {
				before = rest[i-1]
			}
			after := byte(0)
			if j := i + len(name); j < len(rest) {
				after = rest[j]
			}
			if (before == 0 || !hostChar(before)) && (after == 0 || !hostChar(after)) {
				sb.WriteString(rest[:i])
				sb.WriteString(names[name])
			} else {
				sb.WriteString(rest[:i+len(name)])
			}
			prev = rest[i+len(name)-1]
			rest = rest[i+len(name):]
		}
		s = sb.String()
	}
	return s
}
