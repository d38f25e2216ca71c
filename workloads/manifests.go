package workloads

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

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

// placeableKinds are the kinds meshbench can place into a topology's namespaces, decided without a cluster: the
// built-in namespaced kinds apps use and Istio's namespaced CRDs. Anything else could reach beyond the run's
// namespaces and could not be deleted by the run.
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

// untrackedPodKinds run pods but are not Deployments or StatefulSets, the only kinds meshbench waits for, scales,
// proves and measures: their pods would skew the figures unseen, so they are refused.
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

func isWorkloadKind(kind string) bool { return kind == "Deployment" || kind == "StatefulSet" }

// CheckManifests returns every problem of app "manifests" that reading them can tell (docs/apps.md lists them); nil
// for the other apps. It touches no cluster, so a bad manifest exits 2 with scenario validation.
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
