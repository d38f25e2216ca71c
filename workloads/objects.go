package workloads

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Objects returns every object the app needs in topology topo for run runID, in apply order, and its Target. Pure:
// the jwt-key Secret carries placeholder text that Deployer.Ensure replaces with a generated RSA key.
func Objects(s *scenario.Scenario, topo scenario.Topology, runID string) ([]runtime.Object, target.Target, error) {
	return new(Renderer).Objects(s, topo, runID)
}

func (r *Renderer) build(s *scenario.Scenario, topo scenario.Topology, runID string, key JWTKey) ([]runtime.Object, target.Target, error) {
	if s == nil {
		return nil, target.Target{}, fmt.Errorf("build workload objects: no scenario")
	}
	if runID == "" {
		return nil, target.Target{}, fmt.Errorf("build workload objects: empty run id")
	}
	if topo.Name == "" {
		return nil, target.Target{}, fmt.Errorf("build workload objects: topology without a name (scenario defaults not applied?)")
	}
	b := &builder{s: s, topo: topo, runID: runID, app: s.Spec.Workload.App, renderer: r}
	b.replicas = int32(topo.Replicas)
	if b.replicas < 1 {
		b.replicas = int32(max(s.Spec.Workload.Replicas, 1))
	}
	var err error
	switch b.app {
	case scenario.AppBankOfAnthos:
		err = b.bankOfAnthos(key)
	case scenario.AppFortioChain:
		err = b.fortioChain()
	case scenario.AppBookinfo:
		err = b.bookinfo()
	case scenario.AppManifests:
		err = b.manifests()
	case scenario.AppExisting:
		err = b.existing()
	default:
		err = fmt.Errorf("unknown app %q: use one of %v", b.app, scenario.Apps)
	}
	if err != nil {
		return nil, target.Target{}, err
	}
	b.target.App = b.app
	b.target.Topology = topo.Name
	b.target.AppSelector = appSelector(b.app, runID)
	if b.app == scenario.AppExisting {
		b.target.AppSelector = ExistingAppSelector
	}
	b.target.ClusterDomain = domainOf(s.Spec.Workload)
	return b.sorted(), b.target, nil
}

// builder accumulates the objects of one app in one topology.
type builder struct {
	s        *scenario.Scenario
	topo     scenario.Topology
	runID    string
	app      scenario.App
	replicas int32
	objs     []runtime.Object
	target   target.Target
	// renderer reads app manifests' files (once per Renderer).
	renderer *Renderer
}

func (b *builder) add(o runtime.Object) { b.objs = append(b.objs, o) }

// kindOrder is the apply order: what others reference comes first.
var kindOrder = map[string]int{
	"Namespace": 0, "ServiceAccount": 1, "ConfigMap": 2, "Secret": 3, "Service": 4, "StatefulSet": 5, "Deployment": 6,
}

// kindRank is a kind's place in the apply order; kinds of the user's manifests that kindOrder does not know (Roles,
// PodDisruptionBudgets, Istio's objects) come after the Secrets, before the Services and workloads.
func kindRank(kind string) float64 {
	if r, ok := kindOrder[kind]; ok {
		return float64(r)
	}
	return 3.5
}

func (b *builder) sorted() []runtime.Object {
	out := append([]runtime.Object(nil), b.objs...)
	sort.SliceStable(out, func(i, j int) bool {
		ki, kj := out[i].GetObjectKind().GroupVersionKind().Kind, out[j].GetObjectKind().GroupVersionKind().Kind
		if kindRank(ki) != kindRank(kj) {
			return kindRank(ki) < kindRank(kj)
		}
		if ki != kj {
			return ki < kj
		}
		mi, mj := metaOf(out[i]), metaOf(out[j])
		if mi.GetNamespace() != mj.GetNamespace() {
			return mi.GetNamespace() < mj.GetNamespace()
		}
		return mi.GetName() < mj.GetName()
	})
	return out
}

func metaOf(o runtime.Object) metav1.Object {
	if m, ok := o.(metav1.ObjectMetaAccessor); ok {
		return m.GetObjectMeta()
	}
	if m, ok := o.(metav1.Object); ok { // *unstructured.Unstructured (app manifests)
		return m
	}
	return &metav1.ObjectMeta{}
}

// labels are the labels of every object of the app.
func (b *builder) labels(component string) map[string]string {
	l := appLabels(b.app, b.runID)
	if component != "" {
		l[ComponentLabel] = component
	}
	return l
}

// podLabels add the conventional app labels Istio's telemetry reads.
func (b *builder) podLabels(component string) map[string]string {
	return kube.MergeLabels(b.labels(component), map[string]string{
		"app":                       component,
		"app.kubernetes.io/name":    component,
		"app.kubernetes.io/part-of": string(b.app),
	})
}

// selector is the immutable Deployment/StatefulSet selector (no run id: a namespace reused across runs keeps working).
func (b *builder) selector(component string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": component, appLabel: string(b.app)}}
}

func (b *builder) namespaces(names []string) {
	for _, ns := range names {
		b.add(&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: kube.RunLabels(b.runID)},
		})
	}
	b.target.Namespaces = append([]string(nil), names...)
}

func (b *builder) serviceAccount(ns, name string) {
	f := false
	b.add(&corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   metav1.ObjectMeta{Name: name, Namespace: ns, Labels: b.labels(name)},
		AutomountServiceAccountToken: &f,
	})
}

func (b *builder) service(ns, name string, ports ...corev1.ServicePort) {
	b.addService(&corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: b.labels(name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": name, appLabel: string(b.app)},
			Ports:    ports,
		},
	})
}

// addService adds a Service and records it in the target.
func (b *builder) addService(svc *corev1.Service) {
	b.add(svc)
	b.target.Services = append(b.target.Services, svc.Name)
}

// podSpec fills what every app pod shares: service account, node selector, grace period.
func (b *builder) podSpec(name string, spec corev1.PodSpec) corev1.PodSpec {
	spec.ServiceAccountName = name
	spec.NodeSelector = copyMap(b.s.Spec.Workload.NodeSelector)
	spec.Tolerations = tolerations(b.s.Spec.Workload.Tolerations)
	grace := int64(5)
	spec.TerminationGracePeriodSeconds = &grace
	return spec
}

func (b *builder) deployment(ns, name string, spec corev1.PodSpec) {
	r := b.replicas
	b.addDeployment(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: b.labels(name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: b.selector(name),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.podLabels(name)},
				Spec:       b.podSpec(name, spec),
			},
		},
	})
}

// addDeployment adds a Deployment and records it in the target.
func (b *builder) addDeployment(d *appsv1.Deployment) {
	b.add(d)
	b.target.Workloads = append(b.target.Workloads, workloadRef{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Replicas: *d.Spec.Replicas})
}

// addStatefulSet adds a StatefulSet and records it in the target.
func (b *builder) addStatefulSet(s *appsv1.StatefulSet) {
	b.add(s)
	b.target.Workloads = append(b.target.Workloads, workloadRef{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, Replicas: *s.Spec.Replicas})
}

// resources builds requests and limits from the catalog values, overridden field by field by
// spec.workload.resources.
func (b *builder) resources(cpuReq, memReq, cpuLim, memLim string) corev1.ResourceRequirements {
	if o := b.s.Spec.Workload.Resources; o != nil {
		cpuReq, memReq = orDefault(o.CPURequest, cpuReq), orDefault(o.MemoryRequest, memReq)
		cpuLim, memLim = orDefault(o.CPULimit, cpuLim), orDefault(o.MemoryLimit, memLim)
	}
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	put := func(l corev1.ResourceList, name corev1.ResourceName, v string) {
		if v != "" {
			l[name] = resource.MustParse(v)
		}
	}
	put(r.Requests, corev1.ResourceCPU, cpuReq)
	put(r.Requests, corev1.ResourceMemory, memReq)
	put(r.Limits, corev1.ResourceCPU, cpuLim)
	put(r.Limits, corev1.ResourceMemory, memLim)
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	return r
}

func (b *builder) pullPolicy() corev1.PullPolicy {
	if p := b.s.Spec.Images.PullPolicy; p != "" {
		return corev1.PullPolicy(p)
	}
	return corev1.PullIfNotPresent
}

// podSecurity is a restricted pod security context: uid/gid uid, non-root, the runtime's default seccomp profile.
// (Bank of Anthos has its own, as upstream writes it: boaPodSecurity.)
func podSecurity(uid int64) *corev1.PodSecurityContext {
	t := true
	return &corev1.PodSecurityContext{
		RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: &t,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurity drops every capability; readOnlyRoot also makes the root filesystem read-only (writes go to
// the /tmp emptyDir).
func containerSecurity(readOnlyRoot bool) *corev1.SecurityContext {
	f := false
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f,
		Privileged:               &f,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if readOnlyRoot {
		t := true
		sc.ReadOnlyRootFilesystem = &t
	}
	return sc
}

func httpProbe(path string, port int, initialDelay, period, timeout, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}},
		InitialDelaySeconds: initialDelay, PeriodSeconds: period, TimeoutSeconds: timeout, FailureThreshold: failures,
	}
}

func tcpProbe(port int, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: period, TimeoutSeconds: 1, FailureThreshold: 3,
	}
}

func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func envFromConfigMaps(names ...string) []corev1.EnvFromSource {
	out := make([]corev1.EnvFromSource, len(names))
	for i, n := range names {
		out[i] = corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}}
	}
	return out
}

func tmpVolume() (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}
}

func tcpPort(name string, port int) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: int32(port), TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP}
}

func httpPort(name string, port, target int) corev1.ServicePort {
	ap := "http"
	return corev1.ServicePort{Name: name, Port: int32(port), TargetPort: intstr.FromInt32(int32(target)), Protocol: corev1.ProtocolTCP, AppProtocol: &ap}
}

func orDefault(v, d string) string {
	if v != "" {
		return v
	}
	return d
}

// tolerations copies spec.workload.tolerations for a pod template (nil when there are none, so templates without
// them stay as they were).
func tolerations(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
