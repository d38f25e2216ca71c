package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// Paths inside the scheduled pod.
const (
	scenarioDir  = "/etc/meshbench"
	ScenarioFile = "scenario.yaml"
	// ManifestsFile holds app manifests' objects as rendered where the schedule was made, next to ScenarioFile: the
	// scheduled scenario reads them from there (manifests.paths), since the pod cannot read the user's files.
	ManifestsFile = "manifests.yaml"
	// MaxConfigMapData is what the API server accepts in one ConfigMap's data: the values' bytes summed.
	MaxConfigMapData = corev1.MaxSecretSize
	RunsDir          = "/var/lib/meshbench/runs"
	// serviceAccountName runs the scheduled pods; clusterRoleName is its role.
	serviceAccountName = "meshbench"
	clusterRoleName    = "meshbench-runner"
	// DefaultSchedule is 03:00 every day (cluster time zone unless TimeZone is set).
	DefaultSchedule = "0 3 * * *"
	// DefaultNamespace holds the CronJob, its ServiceAccount and ConfigMap.
	DefaultNamespace = "meshbench"
	// prometheusSecretDir is where the Secret of Options.PrometheusSecret is mounted: the scheduled scenario's
	// spec.prometheus.bearerTokenFile is PrometheusTokenKey there and its caFile PrometheusCAKey.
	prometheusSecretDir = "/var/run/secrets/meshbench/prometheus"
	PrometheusTokenKey  = "token"
	PrometheusCAKey     = "ca.crt"
)

// Labels of the schedule's objects. They deliberately do not carry app.kubernetes.io/managed-by=meshbench: that label
// marks what runs create, and `meshbench cleanup` deletes everything that has it. The schedule is installed
// infrastructure and must survive a cleanup.
const (
	labelPartOf    = "app.kubernetes.io/part-of"
	labelComponent = "app.kubernetes.io/component"
	labelSchedule  = "meshbench.dev/schedule"
)

// Options describe one scheduled benchmark.
type Options struct {
	// Scenario is the loaded, validated scenario. Its output directory is replaced by RunsDir in the copy stored in
	// the ConfigMap; the caller's value is not modified.
	Scenario *scenario.Scenario
	Schedule string // cron expression; "" = DefaultSchedule
	TimeZone string // IANA name for CronJob.spec.timeZone; "" = the controller's
	// Namespace for the CronJob, ServiceAccount and ConfigMap; "" = DefaultNamespace.
	Namespace string
	Image     string // meshbench container image
	// PVC is the name of the PersistentVolumeClaim that keeps the runs (mounted at RunsDir). With PVCSize, the
	// claim is part of the manifests (StorageClass "" = the cluster's default).
	PVC          string
	PVCSize      string
	StorageClass string
	// Push is a Pushgateway URL: the summary of every run is pushed there (report --push).
	Push         string
	PushJob      string
	PushInstance string
	// PushInsecure passes --push-insecure to the report step (no TLS verification of the Pushgateway).
	PushInsecure bool
	// PrometheusSecret names a Secret in Namespace with the Prometheus bearer token (key PrometheusTokenKey) and CA
	// (PrometheusCAKey); required when the scenario sets bearerTokenFile or caFile, since a token must never travel
	// in the ConfigMap or the pod's arguments.
	PrometheusSecret string
	// Baseline is a run directory on the PVC (absolute, or relative to RunsDir) that FailIf gates compare against.
	Baseline string
	FailIf   []string // compare --fail-if expressions, already parsed by the caller
	// Timeout bounds one run (Job activeDeadlineSeconds); 0 = 6h.
	Timeout time.Duration
	// Manifests are the objects of app "manifests" as one YAML stream, rendered by the caller (workloads reads the
	// files and kustomizations). They go into the ConfigMap as ManifestsFile and the scheduled scenario reads them
	// from there. Required with app "manifests", unused otherwise.
	Manifests []byte
}

// withDefaults returns o with empty fields defaulted.
func (o Options) withDefaults() Options {
	if o.Schedule == "" {
		o.Schedule = DefaultSchedule
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Timeout == 0 {
		o.Timeout = 6 * time.Hour
	}
	if o.PushJob == "" {
		o.PushJob = "meshbench"
	}
	return o
}

// validateManifests: a scheduled pod cannot read the files app "manifests" names on the machine the schedule was
// made on, so they travel rendered in the ConfigMap, which must hold them.
func (o Options) validateManifests() []error {
	isManifests := o.Scenario.Spec.Workload.App == scenario.AppManifests
	switch {
	case isManifests && len(o.Manifests) == 0:
		return []error{errors.New("spec.workload.manifests: the scheduled pod cannot read files of this machine and no rendered manifests were given; " +
			"schedule it with `meshbench schedule` (it carries them in the ConfigMap), bake them into the meshbench image, or deploy the app yourself and use app existing")}
	case !isManifests && len(o.Manifests) > 0:
		return []error{fmt.Errorf("rendered manifests given for app %q: they are only used with app manifests", o.Scenario.Spec.Workload.App)}
	case !isManifests:
		return nil
	}
	scenarioYAML, err := scheduledScenario(o)
	if err != nil {
		return []error{err}
	}
	if n := len(scenarioYAML) + len(o.Manifests); n > MaxConfigMapData {
		return []error{fmt.Errorf("spec.workload.manifests: the rendered manifests and the scenario are %d bytes, more than the %d a ConfigMap holds; "+
			"bake the manifests into the meshbench image and point manifests.paths at them, or deploy the app yourself and use app existing", n, MaxConfigMapData)}
	}
	return nil
}

// scheduledScenario is the scenario as the ConfigMap stores it: results on RunsDir, app manifests read from
// ManifestsFile beside it (paths are relative to the scenario file). The caller's scenario is not modified.
func scheduledScenario(o Options) ([]byte, error) {
	sc := *o.Scenario
	sc.Spec.Output.Dir = RunsDir
	// The Prometheus credentials are the mounted Secret's files (Validate requires PrometheusSecret for them).
	if sc.Spec.Prometheus.BearerTokenFile != "" {
		sc.Spec.Prometheus.BearerTokenFile = prometheusSecretDir + "/" + PrometheusTokenKey
	}
	if sc.Spec.Prometheus.CAFile != "" {
		sc.Spec.Prometheus.CAFile = prometheusSecretDir + "/" + PrometheusCAKey
	}
	if m := sc.Spec.Workload.Manifests; m != nil && sc.Spec.Workload.App == scenario.AppManifests {
		cp := *m
		cp.Paths, cp.Kustomization, cp.BaseDir = []string{ManifestsFile}, "", ""
		sc.Spec.Workload.Manifests = &cp
	}
	b, err := yaml.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	return b, nil
}

// Objects builds the manifests in apply order: Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding,
// ConfigMap, PersistentVolumeClaim (with PVCSize), CronJob. They are pure functions of the options.
func Objects(o Options) ([]runtime.Object, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	o = o.withDefaults()
	scenarioYAML, err := scheduledScenario(o)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	data := map[string]string{ScenarioFile: string(scenarioYAML)}
	if len(o.Manifests) > 0 {
		data[ManifestsFile] = string(o.Manifests)
	}
	name := objectName(o.Scenario.Metadata.Name)
	labels := map[string]string{labelPartOf: "meshbench", labelComponent: "schedule", labelSchedule: name}
	meta := func(n, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: ns, Labels: copyMap(labels)}
	}
	objs := []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: meta(o.Namespace, "")},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(serviceAccountName, o.Namespace)},
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: meta(clusterRoleName, ""), Rules: policyRules(RequiredPermissions)},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(clusterRoleName+"-"+o.Namespace, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccountName, Namespace: o.Namespace}}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(name, o.Namespace),
			Data: data},
	}
	if o.PVCSize != "" {
		pvc := &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: meta(o.PVC, o.Namespace),
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(o.PVCSize)}},
			}}
		if o.StorageClass != "" {
			sc := o.StorageClass
			pvc.Spec.StorageClassName = &sc
		}
		objs = append(objs, pvc)
	}
	objs = append(objs, cronJob(o, name, meta(name, o.Namespace), labels))
	return objs, nil
}

// objectName is "meshbench-<scenario>", cut to the 52 characters a CronJob name may have.
func objectName(scenarioName string) string {
	n := "meshbench-" + scenarioName
	if len(n) > 52 {
		n = strings.TrimRight(n[:52], "-")
	}
	return n
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// steps are the meshbench invocations of one scheduled run, in order: run, report (and push), compare (gates).
func steps(o Options) [][]string {
	o = o.withDefaults()
	steps := [][]string{{"run", "-f", scenarioDir + "/" + ScenarioFile}}
	rep := []string{"report", "--latest", RunsDir}
	if o.Push != "" {
		rep = append(rep, "--push", o.Push, "--push-job", o.PushJob)
		if o.PushInstance != "" {
			rep = append(rep, "--push-instance", o.PushInstance)
		}
		if o.PushInsecure {
			rep = append(rep, "--push-insecure")
		}
	}
	steps = append(steps, rep)
	if len(o.FailIf) > 0 {
		base := o.Baseline
		if !strings.HasPrefix(base, "/") {
			base = RunsDir + "/" + base
		}
		cmp := []string{"compare", base, RunsDir, "--latest"}
		for _, g := range o.FailIf {
			cmp = append(cmp, "--fail-if", g)
		}
		steps = append(steps, cmp)
	}
	return steps
}

// cronJob runs Steps(o) in one pod, every step but the last as an init container in order (a failed step stops the
// pod); neither the pod nor the Job is retried.
func cronJob(o Options, name string, meta metav1.ObjectMeta, labels map[string]string) *batchv1.CronJob {
	deadline := int64(o.Timeout / time.Second)
	backoff := int32(0)
	starting := int64(3600)
	success, failed := int32(3), int32(5)
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: meta,
		Spec: batchv1.CronJobSpec{
			Schedule:                   o.Schedule,
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    &starting,
			SuccessfulJobsHistoryLimit: &success,
			FailedJobsHistoryLimit:     &failed,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels)},
				Spec: batchv1.JobSpec{
					BackoffLimit:          &backoff,
					ActiveDeadlineSeconds: &deadline,
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels)},
						Spec:       runPodSpec(o, name),
					},
				},
			},
		},
	}
	if o.TimeZone != "" {
		tz := o.TimeZone
		cj.Spec.TimeZone = &tz
	}
	return cj
}

// runPodSpec is the pod of one scheduled run: non-root, the scenario from ConfigMap name, the runs volume (o.PVC or
// an emptyDir) and, when o.PrometheusSecret is set, that Secret referenced, never copied, so the token stays in it.
func runPodSpec(o Options, name string) corev1.PodSpec {
	runs := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.PVC != "" {
		runs = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.PVC}}
	}
	mounts := []corev1.VolumeMount{
		{Name: "scenario", MountPath: scenarioDir, ReadOnly: true},
		{Name: "runs", MountPath: RunsDir},
		{Name: "tmp", MountPath: "/tmp"},
	}
	if o.PrometheusSecret != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: "prometheus", MountPath: prometheusSecretDir, ReadOnly: true})
	}
	steps := steps(o)
	var inits []corev1.Container
	for _, s := range steps[:len(steps)-1] {
		inits = append(inits, stepContainer(o.Image, s, mounts))
	}
	yes := true
	uid := int64(65532)
	ps := corev1.PodSpec{
		ServiceAccountName: serviceAccountName,
		RestartPolicy:      corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: inits,
		Containers:     []corev1.Container{stepContainer(o.Image, steps[len(steps)-1], mounts)},
		Volumes: []corev1.Volume{
			{Name: "scenario", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
			{Name: "runs", VolumeSource: runs},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	if o.PrometheusSecret != "" {
		mode := int32(0o440)
		ps.Volumes = append(ps.Volumes, corev1.Volume{Name: "prometheus", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: o.PrometheusSecret, DefaultMode: &mode}}})
	}
	return ps
}

// stepContainer runs one step (its first word names the container) of image, unprivileged, read-only root.
func stepContainer(image string, step []string, mounts []corev1.VolumeMount) corev1.Container {
	no, yes := false, true
	return corev1.Container{
		Name:         step[0],
		Image:        image,
		Args:         step,
		Env:          []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}},
		VolumeMounts: mounts,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// YAML renders objects as one multi-document YAML stream, keys sorted, without the null creationTimestamps and the
// status typed objects carry.
func YAML(objs []runtime.Object) ([]byte, error) {
	var b bytes.Buffer
	for i, obj := range objs {
		u, err := kube.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("render manifests: %w", err)
		}
		prune(u.Object)
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("render %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(doc)
	}
	return b.Bytes(), nil
}

// prune removes the null creationTimestamps typed objects carry at every metadata level (empty maps stay: an
// "emptyDir: {}" is meaningful).
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			if k == "creationTimestamp" {
				delete(m, k)
			}
		case map[string]any:
			prune(x)
		case []any:
			for _, it := range x {
				if mm, ok := it.(map[string]any); ok {
					prune(mm)
				}
			}
		}
	}
}
