package workloads

// Bank of Anthos as meshbench generates it, compared field by field with Bank of Anthos as upstream ships it.
//
// The upstream facts below are read from GoogleCloudPlatform/bank-of-anthos at tag v0.6.10 (commit
// 62083159b1fd1099abecbb897cc56ee781a372a0), kubernetes-manifests/: config.yaml (environment-config,
// service-api-config, demo-data-config), accounts-db.yaml, ledger-db.yaml, frontend.yaml, userservice.yaml,
// contacts.yaml, balance-reader.yaml, ledger-writer.yaml, transaction-history.yaml, loadgenerator.yaml. Those files
// are kustomize output: each repeats the ServiceAccount bank-of-anthos, the three shared ConfigMaps and the jwt-key
// Secret, and the service files repeat their database's ConfigMap, Service and StatefulSet, identically (checked).
// They are encoded here as Go objects, one per distinct object; the YAML is not copied.
//
// Every difference between the two must be listed in deliberateDifferences with its reason; the test fails on any
// other, and on a listed one that no longer occurs.

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

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

// upstreamImage is an image of the release manifests: upstream's CI registry, tag v0.6.10, pinned by digest.
func upstreamImage(name, digest string) string {
	return "us-central1-docker.pkg.dev/bank-of-anthos-ci/bank-of-anthos/" + name + ":v0.6.10@sha256:" + digest
}

// upLabels: every Service, Deployment and StatefulSet carries application, environment, team and tier; selectors
// and pod templates add app=<name>; so do the two database ConfigMaps.
func upLabels(app, team, tier string) map[string]string {
	l := map[string]string{"application": "bank-of-anthos", "environment": "development", "team": team, "tier": tier}
	if app != "" {
		l["app"] = app
	}
	return l
}

func upService(name, team, tier string, port corev1.ServicePort, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: upLabels("", team, tier)},
		Spec:       corev1.ServiceSpec{Type: typ, Selector: upLabels(name, team, tier), Ports: []corev1.ServicePort{port}},
	}
}

func upDeployment(name, team, tier string, spec corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: upLabels("", team, tier)},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: upLabels(name, team, tier)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      upLabels(name, team, tier),
					Annotations: map[string]string{"proxy.istio.io/config": `{ "holdApplicationUntilProxyStarts": true }`},
				},
				Spec: spec,
			},
		},
	}
}

// upServicePod is what the six services' pods share: serviceAccountName bank-of-anthos, grace period 5 s, pod
// securityContext fsGroup/runAsGroup/runAsUser 1000 + runAsNonRoot (no seccompProfile), container securityContext
// allowPrivilegeEscalation false, capabilities drop [all], privileged false, readOnlyRootFilesystem true, mounts
// tmp at /tmp and the key volume read-only at /tmp/.ssh.
func upServicePod(c corev1.Container, keyVolume string, keyItems ...corev1.KeyToPath) corev1.PodSpec {
	f, t, uid, grace := false, true, int64(1000), int64(5)
	c.SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f, Privileged: &f, ReadOnlyRootFilesystem: &t,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"all"}},
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, {Name: keyVolume, MountPath: "/tmp/.ssh", ReadOnly: true}}
	return corev1.PodSpec{
		ServiceAccountName:            "bank-of-anthos",
		TerminationGracePeriodSeconds: &grace,
		SecurityContext:               &corev1.PodSecurityContext{FSGroup: &uid, RunAsGroup: &uid, RunAsUser: &uid, RunAsNonRoot: &t},
		Containers:                    []corev1.Container{c},
		Volumes: []corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: keyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "jwt-key", Items: keyItems}}},
		},
	}
}

var upPublicKey = corev1.KeyToPath{Key: "jwtRS256.key.pub", Path: "publickey"}

func upEnv(kv ...string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func upCMRef(name, cm, key string, optional bool) corev1.EnvVar {
	e := corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}}
	if optional {
		e.ValueFrom.ConfigMapKeyRef.Optional = &optional
	}
	return e
}

var upNamespaceEnv = corev1.EnvVar{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}

func upEnvFrom(names ...string) []corev1.EnvFromSource {
	out := make([]corev1.EnvFromSource, len(names))
	for i, n := range names {
		out[i] = corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}}
	}
	return out
}

// upProbe is an httpGet probe on port 8080; zero fields are unset in the manifests (API defaults apply).
func upProbe(path string, initialDelay, period, timeout, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
		InitialDelaySeconds: initialDelay, PeriodSeconds: period, TimeoutSeconds: timeout, FailureThreshold: failures,
	}
}

func upResources(cpuReq, memReq, cpuLim, memLim, ephemeral string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
	}
	if ephemeral != "" {
		r.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse(ephemeral)
		r.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse(ephemeral)
	}
	return r
}

const upJVMOpts = "-XX:+UnlockExperimentalVMOptions -XX:+UseCGroupMemoryLimitForHeap -Xms256m -Xmx512m"

// upDatabase is accounts-db.yaml / ledger-db.yaml's StatefulSet: no securityContext, no probes, no grace period;
// the deprecated serviceAccount: bank-of-anthos next to serviceAccountName: default.
func upDatabase(name, container, team, digest, memReq, memLim, config string) *appsv1.StatefulSet {
	one := int32(1)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: upLabels("", team, "db")},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &one,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: upLabels(name, team, "db")},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: upLabels(name, team, "db")},
				Spec: corev1.PodSpec{
					DeprecatedServiceAccount: "bank-of-anthos",
					ServiceAccountName:       "default",
					Containers: []corev1.Container{{
						Name:      container,
						Image:     upstreamImage(name, digest),
						Ports:     []corev1.ContainerPort{{ContainerPort: 5432}},
						EnvFrom:   upEnvFrom("environment-config", config, "demo-data-config"),
						Resources: upResources("100m", memReq, "250m", memLim, ""),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "postgresdb", MountPath: "/var/lib/postgresql/data", SubPath: "postgres"},
						},
					}},
					Volumes: []corev1.Volume{{Name: "postgresdb", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

func upConfigMap(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       data,
	}
}

// upstreamObjects are the distinct objects of kubernetes-manifests/ at v0.6.10.
func upstreamObjects() []runtime.Object {
	tcp := corev1.ProtocolTCP
	return []runtime.Object{
		// config.yaml (and every service file)
		&corev1.ServiceAccount{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: "bank-of-anthos", Annotations: map[string]string{
				"iam.gke.io/gcp-service-account": "gke-workload-development@bank-of-anthos-ci.iam.gserviceaccount.com"}},
		},
		upConfigMap("environment-config", nil, map[string]string{"LOCAL_ROUTING_NUM": "883745000", "PUB_KEY_PATH": "/tmp/.ssh/publickey"}),
		upConfigMap("service-api-config", nil, map[string]string{
			"TRANSACTIONS_API_ADDR": "ledgerwriter:8080", "BALANCES_API_ADDR": "balancereader:8080",
			"HISTORY_API_ADDR": "transactionhistory:8080", "CONTACTS_API_ADDR": "contacts:8080", "USERSERVICE_API_ADDR": "userservice:8080",
		}),
		upConfigMap("demo-data-config", nil, map[string]string{"USE_DEMO_DATA": "True", "DEMO_LOGIN_USERNAME": "testuser", "DEMO_LOGIN_PASSWORD": "bankofanthos"}),
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "jwt-key"},
			Type:       corev1.SecretTypeOpaque,
			// base64 of a committed demo RSA 4096 key pair (4332 and 1068 characters); the values do not matter here
			Data: map[string][]byte{"jwtRS256.key": []byte("upstream demo private key"), "jwtRS256.key.pub": []byte("upstream demo public key")},
		},

		// accounts-db.yaml
		upConfigMap("accounts-db-config", upLabels("accounts-db", "accounts", "db"), map[string]string{
			"ACCOUNTS_DB_URI": "postgresql://accounts-admin:accounts-pwd@accounts-db:5432/accounts-db",
			"POSTGRES_DB":     "accounts-db", "POSTGRES_PASSWORD": "accounts-pwd", "POSTGRES_USER": "accounts-admin",
		}),
		upService("accounts-db", "accounts", "db", corev1.ServicePort{Name: "tcp", Port: 5432, Protocol: tcp, TargetPort: intstr.FromInt32(5432)}, corev1.ServiceTypeClusterIP),
		upDatabase("accounts-db", "accounts-db", "accounts", "d95c4094c75f69069b915ef3adc99a8f95e43077885140cdeeb90d807ea74eff", "128Mi", "512Mi", "accounts-db-config"),

		// ledger-db.yaml
		upConfigMap("ledger-db-config", upLabels("ledger-db", "ledger", "db"), map[string]string{
			"POSTGRES_DB": "postgresdb", "POSTGRES_PASSWORD": "password", "POSTGRES_USER": "admin",
			"SPRING_DATASOURCE_PASSWORD": "password", "SPRING_DATASOURCE_URL": "jdbc:postgresql://ledger-db:5432/postgresdb",
			"SPRING_DATASOURCE_USERNAME": "admin",
		}),
		upService("ledger-db", "ledger", "db", corev1.ServicePort{Name: "tcp", Port: 5432, TargetPort: intstr.FromInt32(5432)}, corev1.ServiceTypeClusterIP),
		upDatabase("ledger-db", "postgres", "ledger", "891cb7afe34f358ce7ed7002a1923b25e113b30bca44fecb10cc8b116d665a03", "512Mi", "1Gi", "ledger-db-config"),

		// frontend.yaml
		upService("frontend", "frontend", "web", corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}, corev1.ServiceTypeLoadBalancer),
		upDeployment("frontend", "frontend", "web", upServicePod(corev1.Container{
			Name:  "front",
			Image: upstreamImage("frontend", "076294ce717309f711743fa3b72a9809c7f156edf1c4fa58505fd9f436d65345"),
			Env: append(upEnv("VERSION", "v0.6.10", "PORT", "8080", "ENABLE_TRACING", "true", "SCHEME", "http", "LOG_LEVEL", "info"),
				upCMRef("DEFAULT_USERNAME", "demo-data-config", "DEMO_LOGIN_USERNAME", false),
				upCMRef("DEFAULT_PASSWORD", "demo-data-config", "DEMO_LOGIN_PASSWORD", false),
				upCMRef("REGISTERED_OAUTH_CLIENT_ID", "oauth-config", "DEMO_OAUTH_CLIENT_ID", true),
				upCMRef("ALLOWED_OAUTH_REDIRECT_URI", "oauth-config", "DEMO_OAUTH_REDIRECT_URI", true),
			),
			EnvFrom:        upEnvFrom("environment-config", "service-api-config"),
			LivenessProbe:  upProbe("/ready", 60, 15, 30, 0),
			ReadinessProbe: upProbe("/ready", 10, 5, 10, 0),
			Resources:      upResources("100m", "64Mi", "250m", "128Mi", ""),
		}, "publickey", upPublicKey)),

		// userservice.yaml
		upService("userservice", "accounts", "backend", corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}, corev1.ServiceTypeClusterIP),
		upDeployment("userservice", "accounts", "backend", upServicePod(corev1.Container{
			Name:  "userservice",
			Image: upstreamImage("userservice", "d8c4412edc46ab105000f721788b73301651cc43b19cee7e7302739f81882dcc"),
			Env: upEnv("VERSION", "v0.6.10", "PORT", "8080", "ENABLE_TRACING", "true", "TOKEN_EXPIRY_SECONDS", "3600",
				"PRIV_KEY_PATH", "/tmp/.ssh/privatekey", "LOG_LEVEL", "info"),
			EnvFrom:        upEnvFrom("environment-config", "accounts-db-config"),
			Ports:          []corev1.ContainerPort{{ContainerPort: 8080, Name: "http-server"}},
			ReadinessProbe: upProbe("/ready", 10, 5, 10, 0),
			Resources:      upResources("260m", "128Mi", "500m", "256Mi", "0.25Gi"),
		}, "keys", corev1.KeyToPath{Key: "jwtRS256.key", Path: "privatekey"}, upPublicKey)),

		// contacts.yaml
		upService("contacts", "accounts", "backend", corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}, corev1.ServiceTypeClusterIP),
		upDeployment("contacts", "accounts", "backend", upServicePod(corev1.Container{
			Name:           "contacts",
			Image:          upstreamImage("contacts", "90d47594270e64f8dafa6da52c89ff70c2483cca0821dff2cc38b1450ac7a6b9"),
			Env:            upEnv("VERSION", "v0.6.10", "PORT", "8080", "ENABLE_TRACING", "true", "LOG_LEVEL", "info"),
			EnvFrom:        upEnvFrom("environment-config", "accounts-db-config"),
			ReadinessProbe: upProbe("/ready", 10, 5, 10, 0),
			Resources:      upResources("100m", "64Mi", "250m", "128Mi", "0.25Gi"),
		}, "publickey", upPublicKey)),

		// balance-reader.yaml
		upService("balancereader", "ledger", "backend", corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}, corev1.ServiceTypeClusterIP),
		upDeployment("balancereader", "ledger", "backend", upServicePod(corev1.Container{
			Name:  "balancereader",
			Image: upstreamImage("balancereader", "feae443c650786c253bbfa3447d0902dd1689122c13962f97ccc37068d73733b"),
			Env: append(upEnv("VERSION", "v0.6.10", "PORT", "8080", "ENABLE_TRACING", "true", "ENABLE_METRICS", "true",
				"POLL_MS", "100", "CACHE_SIZE", "1000000", "JVM_OPTS", upJVMOpts, "LOG_LEVEL", "info"), upNamespaceEnv),
			EnvFrom:        upEnvFrom("environment-config", "ledger-db-config"),
			LivenessProbe:  upProbe("/healthy", 120, 5, 10, 0),
			ReadinessProbe: upProbe("/ready", 60, 5, 10, 0),
			StartupProbe:   upProbe("/healthy", 0, 10, 0, 30),
			Resources:      upResources("100m", "256Mi", "500m", "512Mi", "0.5Gi"),
		}, "publickey", upPublicKey)),

		// ledger-writer.yaml
		upService("ledgerwriter", "ledger", "backend", corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}, corev1.ServiceTypeClusterIP),
		upDeployment("ledgerwriter", "ledger", "backend", upServicePod(corev1.Container{
			Name:  "ledgerwriter",
			Image: upstreamImage("ledgerwriter", "eae37de0d9b28fec7534c1ea860868c87279b0a85b405f8fd66c3d7734e3e42f"),
			Env: append(upEnv("VERSION", "v0.6.10", "PORT", "8080", "ENABLE_TRACING", "true", "ENABLE_METRICS", "true",
				"JVM_OPTS", upJVMOpts, "LOG_LEVEL", "info"), upNamespaceEnv),
			EnvFrom:        upEnvFrom("environment-config", "service-api-config", "ledger-db-config"),
			ReadinessProbe: upProbe("/ready", 60, 5, 10, 0),
			StartupProbe:   upProbe("/ready", 0, 10, 0, 30),
			Resources:      upResources("100m", "256Mi", "500m", "512Mi", "0.5Gi"),
		}, "publickey", upPublicKey)),

		// transaction-history.yaml
		upService("transactionhistory", "ledger", "backend", corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}, corev1.ServiceTypeClusterIP),
		upDeployment("transactionhistory", "ledger", "backend", upServicePod(corev1.Container{
			Name:  "transactionhistory",
			Image: upstreamImage("transactionhistory", "109cdad9c29a46af2708574ac4635dd73afa30cc020a4fef0266abcde87db744"),
			Env: append(upEnv("VERSION", "v0.6.10", "PORT", "8080", "ENABLE_TRACING", "true", "ENABLE_METRICS", "true",
				"POLL_MS", "100", "CACHE_SIZE", "1000", "CACHE_MINUTES", "60", "HISTORY_LIMIT", "100",
				"JVM_OPTS", upJVMOpts, "LOG_LEVEL", "info"), upNamespaceEnv),
			EnvFrom:        upEnvFrom("environment-config", "ledger-db-config"),
			LivenessProbe:  upProbe("/healthy", 120, 5, 10, 0),
			ReadinessProbe: upProbe("/ready", 60, 5, 10, 0),
			StartupProbe:   upProbe("/healthy", 0, 10, 0, 30),
			Resources:      upResources("100m", "256Mi", "500m", "512Mi", "0.5Gi"),
		}, "publickey", upPublicKey)),

		// loadgenerator.yaml: only its existence matters here (meshbench does not deploy it).
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "loadgenerator"}},
	}
}

// cmpCtx is what a deliberate difference's check may consult: the scenario and target meshbench built, and the
// object and path at hand.
type cmpCtx struct {
	s                    *scenario.Scenario
	t                    target.Target
	runID                string
	kind, name, ns, path string
	multi                bool // the topology spreads the components over namespaces
}

// workloadNS is the namespace meshbench placed component name in ("" if it is not a component).
func (c cmpCtx) workloadNS(name string) string {
	for _, w := range c.t.Workloads {
		if w.Name == name {
			return w.Namespace
		}
	}
	return ""
}

// deviation is one documented difference: objects of kind (regexp) named name (regexp) differ at path (regexp on
// the flattened path; objectPath for an object only one side has). check gets both values as flattened JSON (nil =
// absent) and says whether meshbench's is the intended one.
type deviation struct {
	kind, name, path string
	reason           string
	check            func(c cmpCtx, up, mb *string) error
}

const objectPath = "(object)"

// deliberateDifferences are the ways meshbench's Bank of Anthos differs from upstream's, each with its reason.
var deliberateDifferences = []deviation{
	{kind: "Namespace", name: ".*", path: objectPath,
		reason: "meshbench creates the app's namespaces (labelled with the run, deleted by cleanup); upstream deploys into the current namespace",
		check:  onlyMeshbench},
	{kind: "Deployment", name: "loadgenerator", path: objectPath,
		reason: "meshbench drives and measures the load with its own fortio clients; upstream's Locust loadgenerator would add unmeasured load",
		check:  onlyUpstream},
	{kind: ".*", name: ".*", path: `metadata\.namespace`,
		reason: "every object goes into the namespace meshbench placed it in (multi topologies spread the components over several)",
		check: func(c cmpCtx, up, mb *string) error {
			want := c.workloadNS(c.name)
			if c.kind == "ConfigMap" || c.kind == "Secret" || c.kind == "ServiceAccount" {
				want = c.ns // one copy per namespace
				if !slices.Contains(c.t.Namespaces, c.ns) {
					return fmt.Errorf("namespace %q is not one of the tg's %v", c.ns, c.t.Namespaces)
				}
			}
			return wantMeshbench(up, mb, want)
		}},
	{kind: ".*", name: ".*", path: `(metadata|spec\.template\.metadata)\.labels\["(app\.kubernetes\.io/managed-by|meshbench\.dev/(run|app|component))"\]`,
		reason: "meshbench's labels: cleanup finds leftovers by managed-by and run, the collectors select the app's pods by them, mesh switches restart one component by meshbench.dev/component",
		check: func(c cmpCtx, up, mb *string) error {
			key := strings.TrimSuffix(c.path[strings.LastIndex(c.path, `["`)+2:], `"]`)
			want := map[string]string{kube.ManagedByLabel: kube.ManagedByValue, kube.RunLabel: c.runID, appLabel: string(scenario.AppBankOfAnthos)}[key]
			if key == ComponentLabel {
				if c.kind != "Service" && c.kind != "Deployment" && c.kind != "StatefulSet" {
					return fmt.Errorf("%s is only for a component's Service and workload", ComponentLabel)
				}
				want = c.name
			}
			return wantMeshbench(up, mb, want)
		}},
	{kind: "Deployment", name: ".*", path: `spec\.replicas`,
		reason: "replicas per service come from spec.workload.replicas or the topology's replicas (upstream: unset, one pod); the databases stay at upstream's one",
		check: func(c cmpCtx, up, mb *string) error {
			for _, w := range c.t.Workloads {
				if w.Name == c.name {
					return wantMeshbenchJSON(up, mb, fmt.Sprint(w.Replicas))
				}
			}
			return fmt.Errorf("no workload %s in the target", c.name)
		}},
	{kind: "Deployment|StatefulSet", name: ".*", path: `spec\.template\.spec\.containers\[name=[^\]]+\]\.image`,
		reason: "images come from spec.images.bankOfAnthos (<registry>/<name>:<tag>; default: upstream's registry and tag v0.6.10) so that a mirror works; upstream pins its CI registry's digests, which a mirror's would not match",
		check: func(c cmpCtx, up, mb *string) error {
			if up == nil {
				return fmt.Errorf("upstream has no image")
			}
			var u string
			_ = json.Unmarshal([]byte(*up), &u)
			repo, _, _ := strings.Cut(u, ":")
			im := c.s.Spec.Images.BankOfAnthos
			return wantMeshbenchChanged(up, mb, strings.TrimSuffix(im.Registry, "/")+"/"+path.Base(repo)+":"+im.Tag)
		}},
	{kind: "Deployment|StatefulSet", name: ".*", path: `spec\.template\.spec\.containers\[name=[^\]]+\]\.imagePullPolicy`,
		reason: "spec.images.pullPolicy, default IfNotPresent (the API's default for a tagged image, as upstream gets)",
		check:  func(c cmpCtx, up, mb *string) error { return wantMeshbench(up, mb, c.s.Spec.Images.PullPolicy) }},
	{kind: "Deployment", name: ".*", path: `spec\.template\.spec\.containers\[name=[^\]]+\]\.env\[name=ENABLE_(TRACING|METRICS)\]\.value`,
		reason: "the exporters send traces and metrics to Google Cloud Trace / Cloud Monitoring: unreachable and unauthenticated off GCP, and extra work on every measured request",
		check:  func(c cmpCtx, up, mb *string) error { return wantMeshbenchChanged(up, mb, "false") }},
	{kind: "Deployment", name: "userservice", path: `spec\.template\.spec\.containers\[name=userservice\]\.env\[name=TOKEN_EXPIRY_SECONDS\]\.value`,
		reason: "meshbench logs in once and loads /home for hours; upstream's 3600 s tokens would turn the measured page into the login redirect after an hour",
		check:  func(c cmpCtx, up, mb *string) error { return wantMeshbenchChanged(up, mb, boaTokenExpiry) }},
	{kind: "Deployment|StatefulSet", name: ".*", path: `spec\.template\.spec\.nodeSelector(\.|\[).*`,
		reason: "spec.workload.nodeSelector places the app's pods (e.g. away from the load clients' node)",
		check: func(c cmpCtx, up, mb *string) error {
			key := strings.TrimPrefix(strings.TrimPrefix(c.path, "spec.template.spec.nodeSelector"), ".")
			key = strings.TrimSuffix(strings.TrimPrefix(key, `["`), `"]`)
			want, ok := c.s.Spec.Workload.NodeSelector[key]
			if !ok {
				return fmt.Errorf("node selector key %q is not in spec.workload.nodeSelector", key)
			}
			return wantMeshbench(up, mb, want)
		}},
	{kind: "Deployment|StatefulSet", name: ".*", path: `spec\.template\.spec\.containers\[name=[^\]]+\]\.resources\.(requests|limits)\.(cpu|memory)`,
		reason: "spec.workload.resources overrides cpu and memory requests/limits of every app container (small clusters); unset fields keep upstream's values",
		check: func(c cmpCtx, up, mb *string) error {
			o := c.s.Spec.Workload.Resources
			if o == nil {
				return fmt.Errorf("spec.workload.resources is not set")
			}
			field := c.path[strings.LastIndex(c.path, "resources.")+len("resources."):]
			want := map[string]string{"requests.cpu": o.CPURequest, "requests.memory": o.MemoryRequest, "limits.cpu": o.CPULimit, "limits.memory": o.MemoryLimit}[field]
			if want == "" {
				return fmt.Errorf("spec.workload.resources does not override %s", field)
			}
			q := resource.MustParse(want)
			return wantMeshbenchChanged(up, mb, q.String())
		}},
	{kind: "Service", name: "frontend", path: `spec\.type`,
		reason: "the load comes from inside the cluster (frontend.<ns>.svc); a LoadBalancer would wait for, and on clouds pay for, an external address nothing uses",
		check: func(c cmpCtx, up, mb *string) error {
			return wantMeshbenchChanged(up, mb, string(corev1.ServiceTypeClusterIP))
		}},
	{kind: "ConfigMap", name: "service-api-config|accounts-db-config|ledger-db-config", path: `data\.[A-Z_]+`,
		reason: "with the services spread over namespaces short names do not resolve: addresses become <service>.<namespace>.svc.cluster.local (a single namespace keeps upstream's short names)",
		check: func(c cmpCtx, up, mb *string) error {
			if up == nil || mb == nil {
				return fmt.Errorf("key missing on one side")
			}
			if !c.multi {
				return fmt.Errorf("a single namespace keeps upstream's addresses")
			}
			var u string
			_ = json.Unmarshal([]byte(*up), &u)
			for _, comp := range boaComponents {
				u = regexp.MustCompile(`\b`+regexp.QuoteMeta(comp)+`:(\d+)`).ReplaceAllString(u, fqdn(comp, c.workloadNS(comp), domainOf(c.s.Spec.Workload))+":$1")
			}
			return wantMeshbenchChanged(up, mb, u)
		}},
	{kind: "ServiceAccount", name: "bank-of-anthos", path: `metadata\.annotations\["iam\.gke\.io/gcp-service-account"\]`,
		reason: "a GKE Workload Identity binding to a Google service account of upstream's CI project (bank-of-anthos-ci): meaningless elsewhere, and the exporters that would use it are off",
		check:  onlyUpstream},
	{kind: "StatefulSet", name: ".*", path: `spec\.template\.spec\.serviceAccount`,
		reason: "the deprecated alias of serviceAccountName: the API server overwrites it with serviceAccountName (default) on every write, so upstream's databases run as default too; meshbench writes serviceAccountName only",
		check: func(c cmpCtx, up, mb *string) error {
			if err := onlyUpstream(c, up, mb); err != nil {
				return err
			}
			if *up != `"bank-of-anthos"` {
				return fmt.Errorf("upstream value %s", *up)
			}
			return nil
		}},
	{kind: "Secret", name: "jwt-key", path: `(data|stringData)\["jwtRS256\.key(\.pub)?"\]`,
		reason: "upstream ships a committed demo key pair; meshbench generates a fresh RSA 4096 pair per run at deploy time (Objects renders a placeholder) and writes it as stringData",
		check: func(c cmpCtx, up, mb *string) error {
			if strings.HasPrefix(c.path, "data") {
				return onlyUpstream(c, up, mb)
			}
			return onlyMeshbench(c, up, mb)
		}},
}

func onlyMeshbench(_ cmpCtx, up, mb *string) error {
	if up != nil || mb == nil {
		return fmt.Errorf("expected only meshbench to have it (upstream %v, meshbench %v)", show(up), show(mb))
	}
	return nil
}

func onlyUpstream(_ cmpCtx, up, mb *string) error {
	if up == nil || mb != nil {
		return fmt.Errorf("expected only upstream to have it (upstream %v, meshbench %v)", show(up), show(mb))
	}
	return nil
}

// wantMeshbench: upstream has no value, meshbench's is the string want.
func wantMeshbench(up, mb *string, want string) error {
	b, _ := json.Marshal(want)
	return wantMeshbenchJSON(up, mb, string(b))
}

func wantMeshbenchJSON(up, mb *string, want string) error {
	if up != nil {
		return fmt.Errorf("upstream sets it (%s): the difference is not an addition", *up)
	}
	if mb == nil || *mb != want {
		return fmt.Errorf("meshbench has %s, want %s", show(mb), want)
	}
	return nil
}

// wantMeshbenchChanged: both have a value, meshbench's is the string want.
func wantMeshbenchChanged(up, mb *string, want string) error {
	b, _ := json.Marshal(want)
	if up == nil {
		return fmt.Errorf("upstream has no value: the difference is not a change")
	}
	if mb == nil || *mb != string(b) {
		return fmt.Errorf("meshbench has %s, want %s", show(mb), b)
	}
	return nil
}

func show(v *string) string {
	if v == nil {
		return "(absent)"
	}
	return *v
}

// flatten turns an object into leaf path -> JSON value. Lists of maps keyed by "name" (containers, env, volumes,
// ports...), "key" (Secret items) or "containerPort" are indexed by that key, with their order as an extra leaf
// "[#order]"; other lists by position. Empty maps and lists are leaves ("{}" for emptyDir: {}).
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			out[prefix] = "{}"
			return
		}
		for k, val := range t {
			seg := "." + k
			if strings.ContainsAny(k, "./") {
				seg = `["` + k + `"]`
			}
			flatten(strings.TrimPrefix(prefix+seg, "."), val, out)
		}
	case []any:
		if len(t) == 0 {
			out[prefix] = "[]"
			return
		}
		field := listKey(t)
		var order []string
		for i, e := range t {
			seg := fmt.Sprintf("[%d]", i)
			if field != "" {
				k := fmt.Sprint(e.(map[string]any)[field])
				seg = "[" + field + "=" + k + "]"
				order = append(order, k)
			}
			flatten(prefix+seg, e, out)
		}
		if field != "" {
			b, _ := json.Marshal(strings.Join(order, ","))
			out[prefix+"[#order]"] = string(b)
		}
	default:
		b, _ := json.Marshal(t)
		out[prefix] = string(b)
	}
}

func listKey(l []any) string {
	for _, field := range []string{"name", "key", "containerPort"} {
		seen := map[string]bool{}
		ok := true
		for _, e := range l {
			m, isMap := e.(map[string]any)
			v, has := m[field]
			if !isMap || !has || seen[fmt.Sprint(v)] {
				ok = false
				break
			}
			seen[fmt.Sprint(v)] = true
		}
		if ok {
			return field
		}
	}
	return ""
}

type flatObject struct {
	kind, name, ns string
	leaves         map[string]string
}

func flattenObjects(t *testing.T, objs []runtime.Object) []flatObject {
	t.Helper()
	out := make([]flatObject, 0, len(objs))
	for _, o := range objs {
		u, err := kube.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		leaves := map[string]string{}
		flatten("", u.Object, leaves)
		out = append(out, flatObject{kind: u.GetKind(), name: u.GetName(), ns: u.GetNamespace(), leaves: leaves})
	}
	return out
}

func anchored(re string) *regexp.Regexp { return regexp.MustCompile("^(?:" + re + ")$") }

// compareWithUpstream compares meshbench's objects with upstream's: every difference must be a deliberate one whose
// check passes. It returns the problems and counts how often each deviation was used.
func compareWithUpstream(t *testing.T, s *scenario.Scenario, topo scenario.Topology, tg target.Target, runID string, mbObjs []runtime.Object, used map[int]int) []string {
	t.Helper()
	up := map[string]flatObject{}
	for _, o := range flattenObjects(t, upstreamObjects()) {
		up[o.kind+"/"+o.name] = o
	}
	var problems []string
	match := func(c cmpCtx, upV, mbV *string) {
		for i, d := range deliberateDifferences {
			pathOK := d.path == c.path || (d.path != objectPath && anchored(d.path).MatchString(c.path))
			if pathOK && anchored(d.kind).MatchString(c.kind) && anchored(d.name).MatchString(c.name) {
				used[i]++
				if err := d.check(c, upV, mbV); err != nil {
					problems = append(problems, fmt.Sprintf("%s %s/%s %s: documented difference (%s) does not hold: %v", c.kind, c.ns, c.name, c.path, d.reason, err))
				}
				return
			}
		}
		problems = append(problems, fmt.Sprintf("%s %s/%s %s: upstream %s, meshbench %s: undocumented difference from upstream v0.6.10 (fix it, or add it with its reason to deliberateDifferences)",
			c.kind, c.ns, c.name, c.path, show(upV), show(mbV)))
	}
	present := "present"
	seen := map[string]bool{}
	for _, m := range flattenObjects(t, mbObjs) {
		c := cmpCtx{s: s, t: tg, runID: runID, kind: m.kind, name: m.name, ns: m.ns, multi: topo.Kind == scenario.TopologyMulti}
		u, ok := up[m.kind+"/"+m.name]
		if !ok {
			c.path = objectPath
			match(c, nil, &present)
			continue
		}
		seen[m.kind+"/"+m.name] = true
		paths := map[string]bool{}
		for p := range u.leaves {
			paths[p] = true
		}
		for p := range m.leaves {
			paths[p] = true
		}
		for _, p := range sortedKeys(paths) {
			uv, uok := u.leaves[p]
			mv, mok := m.leaves[p]
			if uok && mok && uv == mv {
				continue
			}
			c.path = p
			var upV, mbV *string
			if uok {
				upV = &uv
			}
			if mok {
				mbV = &mv
			}
			match(c, upV, mbV)
		}
	}
	for _, k := range sortedKeys(up) {
		if !seen[k] {
			u := up[k]
			match(cmpCtx{s: s, t: tg, runID: runID, kind: u.kind, name: u.name, path: objectPath}, &present, nil)
		}
	}
	return problems
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// upstreamScenarios exercise every deliberate difference: upstream's defaults in one namespace, and every override
// meshbench offers over a namespace per component.
var upstreamScenarios = []struct{ name, yaml string }{
	{"single-defaults", `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: boa}
spec:
  workload:
    app: bank-of-anthos
    topologies:
    - kind: single
`},
	{"multi-overrides", `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: boa}
spec:
  images:
    bankOfAnthos: {registry: registry.example.com/mirror/boa/, tag: v0.6.10-mirror}
    pullPolicy: Always
  workload:
    app: bank-of-anthos
    replicas: 2
    nodeSelector: {meshbench.dev/pool: apps}
    resources: {cpuRequest: 50m, memoryLimit: 2Gi}
    topologies:
    - kind: multi
`},
}

func TestBankOfAnthosMatchesUpstream(t *testing.T) {
	t.Parallel()
	used := map[int]int{}
	for _, sc := range upstreamScenarios {
		s := mustScenario(t, sc.yaml)
		objs, tg, err := Objects(s, s.Spec.Workload.Topologies[0], "upstream-run")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range compareWithUpstream(t, s, s.Spec.Workload.Topologies[0], tg, "upstream-run", objs, used) {
			t.Errorf("%s: %s", sc.name, p)
		}
	}
	for i, d := range deliberateDifferences {
		if used[i] == 0 {
			t.Errorf("deliberate difference %s %s %s (%s) never occurs: remove it from the list", d.kind, d.name, d.path, d.reason)
		}
	}
}

// TestUpstreamComparisonCatchesChanges proves the comparison fails on undocumented changes, among them the
// databases' old securityContext (uid 1000, non-root: initdb could not use the root-owned subPath).
func TestUpstreamComparisonCatchesChanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		mutate     func(objs []runtime.Object)
	}{
		{"database runs as uid 1000", `StatefulSet mb-single/accounts-db spec.template.spec.securityContext.runAsUser: upstream (absent), meshbench 1000: undocumented`,
			func(objs []runtime.Object) {
				uid := int64(1000)
				find[*appsv1.StatefulSet](objs, BoAAccountsDB).Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
			}},
		{"probe changed", `Deployment mb-single/balancereader spec.template.spec.containers[name=balancereader].readinessProbe.initialDelaySeconds: upstream 60, meshbench 20: undocumented`,
			func(objs []runtime.Object) {
				find[*appsv1.Deployment](objs, boABalanceReader).Spec.Template.Spec.Containers[0].ReadinessProbe.InitialDelaySeconds = 20
			}},
		{"annotation dropped", `Deployment mb-single/frontend spec.template.metadata.annotations["proxy.istio.io/config"]: upstream "{ \"holdApplicationUntilProxyStarts\": true }", meshbench (absent): undocumented`,
			func(objs []runtime.Object) {
				find[*appsv1.Deployment](objs, boAFrontend).Spec.Template.Annotations = nil
			}},
		{"env order", `Deployment mb-single/contacts spec.template.spec.containers[name=contacts].env[#order]: upstream "VERSION,PORT,ENABLE_TRACING,LOG_LEVEL", meshbench "LOG_LEVEL,VERSION,PORT,ENABLE_TRACING": undocumented`,
			func(objs []runtime.Object) {
				c := &find[*appsv1.Deployment](objs, boAContacts).Spec.Template.Spec.Containers[0]
				c.Env = append(c.Env[len(c.Env)-1:], c.Env[:len(c.Env)-1]...)
			}},
		{"documented difference with the wrong value", `Deployment mb-single/ledgerwriter spec.template.spec.containers[name=ledgerwriter].env[name=ENABLE_METRICS].value: documented difference`,
			func(objs []runtime.Object) {
				find[*appsv1.Deployment](objs, boALedgerWriter).Spec.Template.Spec.Containers[0].Env[3].Value = "maybe"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustScenario(t, upstreamScenarios[0].yaml)
			objs, tg, err := Objects(s, s.Spec.Workload.Topologies[0], "upstream-run")
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(objs)
			problems := compareWithUpstream(t, s, s.Spec.Workload.Topologies[0], tg, "upstream-run", objs, map[int]int{})
			if len(problems) != 1 || !strings.Contains(problems[0], tc.want) {
				t.Errorf("problems = %q\nwant exactly one containing %q", problems, tc.want)
			}
		})
	}
}

func find[T interface {
	runtime.Object
	GetName() string
}](objs []runtime.Object, name string) T {
	for _, o := range objs {
		if v, ok := o.(T); ok && v.GetName() == name {
			return v
		}
	}
	panic("no object " + name)
}
