package workloads

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// manifestObject is one object of app "manifests" and where it was read: the file (for messages) and the scenario
// field that named it (for the problem's path).
type manifestObject struct {
	obj   *unstructured.Unstructured
	file  string
	field string
}

func (m manifestObject) ref() string { return m.obj.GetKind() + "/" + m.obj.GetName() }

// placeableKinds are the kinds meshbench can place into a topology's namespaces, decided without a cluster (the
// scenario is checked before anything connects): the namespaced kinds of the built-in groups apps use, and Istio's
// networking and security kinds (all namespaced CRDs). Anything else, cluster-scoped or unknown, is refused: the
// run could not delete it, and applying it would reach beyond the run's namespaces.
var placeableKinds = func() map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for group, kinds := range map[string][]string{
		"":                          {"Service", "ServiceAccount", "ConfigMap", "Secret", "PersistentVolumeClaim", "Endpoints", "LimitRange", "ResourceQuota", "PodTemplate"},
		"apps":                      {"Deployment", "StatefulSet", "ControllerRevision"},
		"policy":                    {"PodDisruptionBudget"},
		"networking.k8s.io":         {"NetworkPolicy", "Ingress"},
		"autoscaling":               {"HorizontalPodAutoscaler"},
		"rbac.authorization.k8s.io": {"Role", "RoleBinding"},
		"networking.istio.io":       {"VirtualService", "DestinationRule", "Gateway", "ServiceEntry", "Sidecar", "WorkloadEntry", "WorkloadGroup", "EnvoyFilter", "ProxyConfig"},
		"security.istio.io":         {"AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication"},
	} {
		for _, k := range kinds {
			out[schema.GroupKind{Group: group, Kind: k}] = true
		}
	}
	return out
}()

// PlaceableKinds are the kinds app manifests may contain (placeableKinds), sorted by group and kind: the run's
// permissions must let it apply and delete every one of them.
func PlaceableKinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(placeableKinds))
	for gk := range placeableKinds {
		out = append(out, gk)
	}
	slices.SortFunc(out, func(a, b schema.GroupKind) int { return strings.Compare(a.Group+"/"+a.Kind, b.Group+"/"+b.Kind) })
	return out
}

// untrackedPodKinds run pods but are not Deployments or StatefulSets. They are namespaced, yet refused: meshbench
// waits for readiness, scales, proves the data-plane mode and collects per workload only for Deployments and
// StatefulSets, so their pods would run unseen (a DaemonSet on every node, a Job finishing or never finishing
// beside a sidecar) and skew what is measured without showing up in the results.
var untrackedPodKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "Pod"}:                   true,
	{Group: "", Kind: "ReplicationController"}: true,
	{Group: "apps", Kind: "DaemonSet"}:         true,
	{Group: "apps", Kind: "ReplicaSet"}:        true,
	{Group: "batch", Kind: "Job"}:              true,
	{Group: "batch", Kind: "CronJob"}:          true,
}

// manifestsPath is the scenario field of workload.manifests.
var manifestsPath = field.NewPath("spec", "workload", "manifests")

// manifestExts are the file names read from a directory of workload.manifests.paths.
var manifestExts = []string{".yaml", ".yml", ".json"}

// readManifests reads every object of m: the kustomization built with kustomize's library, or the files and
// directories of Paths, document by document (Lists expanded, empty documents skipped). Every file that cannot be
// read is a problem; reading goes on with the others. Every file follows inputfile's rule (a regular file of at most
// inputfile.MaxManifest, checked before it is opened: a FIFO or /dev/zero is refused, never read), and all of them
// together are at most inputfile.MaxManifests.
func readManifests(m *scenario.Manifests) ([]manifestObject, scenario.Problems) {
	var out []manifestObject
	var ps scenario.Problems
	add := func(fp, format string, args ...any) {
		ps = append(ps, scenario.Problem{Path: fp, Message: fmt.Sprintf(format, args...)})
	}
	budget := &manifestBudget{}
	if m.Kustomization != "" {
		fp := manifestsPath.Child("kustomization").String()
		dir := m.Resolve(m.Kustomization)
		// kustomize tries each name of the kustomization file and says only "unable to find one" when reading all
		// failed: a FIFO or an over-cap kustomization.yaml is named here with the rule's reason.
		for _, name := range konfig.RecognizedKustomizationFileNames() {
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				if _, err := inputfile.Check(filepath.Join(dir, name), inputfile.Manifest); err != nil {
					add(fp, "%v", err)
					return nil, ps
				}
			}
		}
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(boundedFS{filesys.MakeFsOnDisk(), budget}, dir)
		if err != nil {
			add(fp, "kustomize build %s: %v; fix the kustomization (`kubectl kustomize %s` shows the same error)", dir, err, dir)
			return nil, ps
		}
		for _, r := range rm.Resources() {
			u, err := fromJSON(r.MarshalJSON())
			if err != nil {
				add(fp, "kustomize build %s: %s: %v", dir, r.CurId(), err)
				continue
			}
			out = appendObjects(out, u, filepath.Join(dir, "kustomization.yaml"), fp)
		}
		return out, ps
	}
	for i, p := range m.Paths {
		fp := manifestsPath.Child("paths").Index(i).String()
		path := m.Resolve(p)
		st, err := os.Stat(path)
		if err != nil {
			add(fp, "cannot read %s: %v; name an existing YAML file or directory (relative to the scenario file)", path, err)
			continue
		}
		files := []string{path}
		if st.IsDir() {
			entries, err := os.ReadDir(path)
			if err != nil {
				add(fp, "read directory %s: %v", path, err)
				continue
			}
			files = files[:0]
			for _, e := range entries {
				if !e.IsDir() && slices.Contains(manifestExts, strings.ToLower(filepath.Ext(e.Name()))) {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
			if len(files) == 0 {
				add(fp, "directory %s has no *.yaml, *.yml or *.json file (subdirectories are not read)", path)
			}
		}
		for _, f := range files {
			objs, err := decodeFile(f, budget)
			if err != nil {
				add(fp, "%v", err)
				if errors.Is(err, errManifestsTooLarge) {
					return out, ps
				}
				continue
			}
			for _, o := range objs {
				out = appendObjects(out, o, f, fp)
			}
		}
	}
	return out, ps
}

// errManifestsTooLarge: the manifests' files together are above inputfile.MaxManifests.
var errManifestsTooLarge = fmt.Errorf("the manifest files together are larger than %s: split the app or leave out what it does not need",
	inputfile.Bytes(inputfile.MaxManifests))

// manifestBudget counts the bytes of the manifest files read so far against inputfile.MaxManifests.
type manifestBudget struct{ used int64 }

func (b *manifestBudget) take(path string, n int64) error {
	if b.used += n; b.used > inputfile.MaxManifests {
		return fmt.Errorf("%s: %w", path, errManifestsTooLarge)
	}
	return nil
}

// boundedFS is kustomize's file system with inputfile's rule on every file it reads, and the budget of all of them.
type boundedFS struct {
	filesys.FileSystem
	budget *manifestBudget
}

func (b boundedFS) ReadFile(path string) ([]byte, error) {
	data, err := inputfile.ReadFile(path, inputfile.Manifest)
	if err != nil {
		return nil, err
	}
	if err := b.budget.take(path, int64(len(data))); err != nil {
		return nil, err
	}
	return data, nil
}

func (b boundedFS) Open(path string) (filesys.File, error) {
	fi, err := inputfile.Check(path, inputfile.Manifest)
	if err != nil {
		return nil, err
	}
	if err := b.budget.take(path, fi.Size()); err != nil {
		return nil, err
	}
	return b.FileSystem.Open(path)
}

// decodeFile reads the YAML or JSON documents of one file (inputfile's rule, and the budget of all manifests).
func decodeFile(path string, budget *manifestBudget) ([]*unstructured.Unstructured, error) {
	f, err := inputfile.Open(path, inputfile.Manifest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := budget.take(path, f.Size()); err != nil {
		return nil, err
	}
	dec := yamlutil.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		var fe *inputfile.Error
		if errors.As(err, &fe) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, doc, err)
		}
		if t := strings.TrimSpace(string(raw)); t == "" || t == "null" || t == "{}" {
			continue
		}
		u, err := fromJSON(raw, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, doc, err)
		}
		out = append(out, u)
	}
}

// fromJSON decodes an object the way client-go does (whole numbers as int64, which DeepCopy and the Nested helpers
// need).
func fromJSON(b []byte, err error) (*unstructured.Unstructured, error) {
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}

// appendObjects adds o, or the items of a List.
func appendObjects(out []manifestObject, o *unstructured.Unstructured, file, fp string) []manifestObject {
	if o.IsList() {
		_ = o.EachListItem(func(item runtime.Object) error {
			if u, ok := item.(*unstructured.Unstructured); ok {
				out = append(out, manifestObject{obj: u, file: file, field: fp})
			}
			return nil
		})
		return out
	}
	return append(out, manifestObject{obj: o, file: file, field: fp})
}

func isWorkloadKind(kind string) bool { return kind == "Deployment" || kind == "StatefulSet" }

// CheckManifests reads the manifests of app "manifests" and returns every problem only reading them can tell: a
// file that cannot be read or parsed, a kustomization kustomize refuses, cluster-scoped or unknown kinds, kinds
// that run pods but are no Deployment or StatefulSet (meshbench would not track their pods), an object without kind
// or name, a scale entry naming no Deployment or StatefulSet, a placement key naming no object, and manifests
// without any Deployment or StatefulSet. Nil for the other apps. It touches no cluster: commands call it with
// scenario validation, so a bad manifest exits 2 before anything connects.
func CheckManifests(s *scenario.Scenario) scenario.Problems { return new(Renderer).CheckManifests(s) }

// CheckManifests is the package's CheckManifests with r's one rendering of the manifests.
func (r *Renderer) CheckManifests(s *scenario.Scenario) scenario.Problems {
	_, _, ps := r.checkManifests(s)
	return ps
}

// objectRef is one "name" or "Kind/name" of workload.manifests (scale, placement), parsed; kind "" matches every
// kind.
type objectRef struct {
	raw, kind, name string
}

func (r objectRef) matches(kind, name string) bool {
	return r.name == name && (r.kind == "" || r.kind == kind)
}

// manifestRefs are workload.manifests' scale and placement, parsed once for the checks and the build. Entries that
// do not parse are left out: scenario.Validate reports them.
type manifestRefs struct {
	scale []objectRef
	// placement by key, sorted; ns is the namespace index.
	placement []placementRef
}

type placementRef struct {
	objectRef
	ns int
}

func parseRefs(m *scenario.Manifests) manifestRefs {
	var out manifestRefs
	for _, ref := range m.Scale {
		kind, name, err := scenario.ParseWorkloadRef(ref, false)
		if err != nil {
			continue
		}
		out.scale = append(out.scale, objectRef{raw: ref, kind: kind, name: name})
	}
	for _, key := range slices.Sorted(maps.Keys(m.Placement)) {
		kind, name, err := scenario.ParseWorkloadRef(key, true)
		if err != nil {
			continue
		}
		out.placement = append(out.placement, placementRef{objectRef{raw: key, kind: kind, name: name}, m.Placement[key]})
	}
	return out
}

// scaled reports whether the workload Kind/name takes the topology's replicas.
func (r manifestRefs) scaled(kind, name string) bool {
	return slices.ContainsFunc(r.scale, func(s objectRef) bool { return s.matches(kind, name) })
}

// namespaceIndex is the placement of Kind/name: a "Kind/name" key before a bare "name" key, else 0.
func (r manifestRefs) namespaceIndex(kind, name string) int {
	idx, byName := 0, false
	for _, p := range r.placement {
		switch {
		case p.kind == kind && p.name == name:
			return p.ns
		case p.kind == "" && p.name == name:
			idx, byName = p.ns, true
		}
	}
	if byName {
		return idx
	}
	return 0
}

// maxNamespace is the highest namespace index placement names.
func (r manifestRefs) maxNamespace() int {
	out := 0
	for _, p := range r.placement {
		out = max(out, p.ns)
	}
	return out
}

// checkManifests is CheckManifests that also returns the objects read and the parsed references (one read and one
// parse for build).
func (r *Renderer) checkManifests(s *scenario.Scenario) ([]manifestObject, manifestRefs, scenario.Problems) {
	if s == nil || s.Spec.Workload.App != scenario.AppManifests || s.Spec.Workload.Manifests == nil {
		return nil, manifestRefs{}, nil
	}
	m := s.Spec.Workload.Manifests
	objs, ps := r.read(m)
	refs := parseRefs(m)
	add := func(fp, format string, args ...any) {
		ps = append(ps, scenario.Problem{Path: fp, Message: fmt.Sprintf(format, args...)})
	}
	refused := map[string][]string{} // field -> "Kind/name (file)"
	var fields []string
	workloads := 0
	for _, o := range objs {
		gvk := o.obj.GroupVersionKind()
		if gvk.Kind == "" || o.obj.GetName() == "" || o.obj.GetAPIVersion() == "" {
			add(o.field, "%s: an object without apiVersion, kind or metadata.name (kind %q, name %q); every object needs all three", o.file, gvk.Kind, o.obj.GetName())
			continue
		}
		if untrackedPodKinds[gvk.GroupKind()] {
			add(o.field, "%s (%s): meshbench tracks Deployments and StatefulSets (readiness, scaling, mode verification, per-workload collection) and would not see its pods; convert %s to a Deployment or StatefulSet or remove it from the manifests", o.ref(), o.file, o.ref())
			continue
		}
		if !placeableKinds[gvk.GroupKind()] {
			if refused[o.field] == nil {
				fields = append(fields, o.field)
			}
			refused[o.field] = append(refused[o.field], fmt.Sprintf("%s (%s)", o.ref(), o.file))
		}
		if isWorkloadKind(gvk.Kind) && (gvk.Group == "apps") {
			workloads++
		}
	}
	for _, fp := range fields {
		add(fp, "has objects meshbench cannot place in the run's namespaces (cluster-scoped, or a kind it does not know as namespaced): %s; remove them from the manifests, or apply them yourself before the run", strings.Join(refused[fp], ", "))
	}
	if len(objs) > 0 && workloads == 0 {
		add(manifestsPath.String(), "has no Deployment or StatefulSet: meshbench measures the pods of the app's Deployments and StatefulSets; add them")
	}
	if len(objs) == 0 && len(ps) == 0 {
		add(manifestsPath.String(), "holds no objects; name the app's YAML files, directories or kustomization")
	}
	if len(objs) == 0 {
		return objs, refs, ps
	}
	for i, ref := range m.Scale {
		j := slices.IndexFunc(refs.scale, func(s objectRef) bool { return s.raw == ref })
		if j < 0 {
			continue // did not parse: scenario.Validate reports it
		}
		if !slices.ContainsFunc(objs, func(o manifestObject) bool {
			return isWorkloadKind(o.obj.GetKind()) && refs.scale[j].matches(o.obj.GetKind(), o.obj.GetName())
		}) {
			add(manifestsPath.Child("scale").Index(i).String(), "%q names no Deployment or StatefulSet of the manifests (they have %s); fix the name", ref, strings.Join(workloadRefs(objs), ", "))
		}
	}
	for _, p := range refs.placement {
		if !slices.ContainsFunc(objs, func(o manifestObject) bool { return p.matches(o.obj.GetKind(), o.obj.GetName()) }) {
			add(manifestsPath.Child("placement").Key(p.raw).String(), "names no object of the manifests; use an object's name or Kind/name")
		}
	}
	return objs, refs, ps
}

func workloadRefs(objs []manifestObject) []string {
	var out []string
	for _, o := range objs {
		if isWorkloadKind(o.obj.GetKind()) {
			out = append(out, o.ref())
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

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
	nsOf := func(o *unstructured.Unstructured) (string, error) {
		idx := refs.namespaceIndex(o.GetKind(), o.GetName())
		if b.topo.Kind != scenario.TopologyMulti {
			idx = 0
		}
		if idx < 0 || idx >= len(ns) {
			return "", fmt.Errorf("manifests: placement of %s/%s is namespace %d; topology %s has %d namespaces", o.GetKind(), o.GetName(), idx, b.topo.Name, len(ns))
		}
		return ns[idx], nil
	}
	b.namespaces(ns)
	svcNS := map[string]string{}
	for _, o := range objs {
		n, err := nsOf(o)
		if err != nil {
			return err
		}
		o.SetNamespace(n)
		if o.GetKind() == "Service" {
			svcNS[o.GetName()] = n
		}
	}
	domain := DomainOf(b.s.Spec.Workload)
	for _, o := range objs {
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
			b.target.Workloads = append(b.target.Workloads, WorkloadRef{Kind: kind, Namespace: o.GetNamespace(), Name: name, Replicas: replicas})
		}
		b.add(o)
	}
	sort.SliceStable(b.target.Workloads, func(i, j int) bool {
		wi, wj := b.target.Workloads[i], b.target.Workloads[j]
		return wi.Namespace+"/"+wi.Kind+"/"+wi.Name < wj.Namespace+"/"+wj.Kind+"/"+wj.Name
	})
	// Every load target, not only the first: load is shared between them by weight.
	var es []Endpoint
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
		es = append(es, loadEndpoint(t, n, domain, b.s.Spec.Load.Path))
	}
	if len(es) > 0 {
		setEndpoints(&b.target, es, b.s.Spec.Load.Targets[0], firstNS)
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

// patchTemplate labels a pod template (app labels; the component for Deployments and StatefulSets), merges the
// scenario's node selector and rewrites service references of other namespaces to their FQDN.
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
	podNS := o.GetNamespace()
	rewrite := map[string]string{}
	for _, svc := range b.s.Spec.Workload.Manifests.ServiceRefs {
		if n, ok := svcNS[svc]; ok && n != podNS {
			rewrite[svc] = FQDN(svc, n, domain)
		}
	}
	if len(rewrite) > 0 {
		for _, list := range []string{"containers", "initContainers"} {
			cs, _, _ := unstructured.NestedSlice(tmpl, "spec", list)
			for _, c := range cs {
				cm, ok := c.(map[string]any)
				if !ok {
					continue
				}
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
			if len(cs) > 0 {
				if err := unstructured.SetNestedSlice(tmpl, cs, "spec", list); err != nil {
					return err
				}
			}
		}
	}
	return unstructured.SetNestedMap(o.Object, tmpl, tp...)
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
