package workloads

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshbench/meshbench/internal/kube"
)

// Bank of Anthos v0.6.10 as its release manifests (kubernetes-manifests/*.yaml at tag v0.6.10) write it. Every field
// is upstream's except the differences listed, with their reasons, in bankofanthos_upstream_test.go
// (deliberateDifferences), which compares each object with the upstream facts field by field.
const (
	boAFrontend           = "frontend"
	boAUserService        = "userservice"
	boAContacts           = "contacts"
	boABalanceReader      = "balancereader"
	boALedgerWriter       = "ledgerwriter"
	boATransactionHistory = "transactionhistory"
	BoAAccountsDB         = "accounts-db"
	BoALedgerDB           = "ledger-db"

	// boAUsername and boAPassword are the demo user the databases are seeded with (demo-data-config).
	boAUsername = "testuser"
	boAPassword = "bankofanthos"

	// boAServiceAccount is the ServiceAccount the six services run as; the databases run as "default".
	boAServiceAccount = "bank-of-anthos"

	boaJWTSecret = "jwt-key"
	boaVersion   = "v0.6.10"
	// boaTokenExpiry is how long a login token stays valid. Upstream uses 3600 s; a benchmark that logs in once
	// and loads /home for hours must not start measuring the login redirect after an hour.
	boaTokenExpiry = "86400"
	// boaHoldProxy makes the sidecar ready before the app starts (upstream's annotation on the six Deployments).
	boaHoldProxy = `{ "holdApplicationUntilProxyStarts": true }`
)

// boaComponents lists the app's services and databases in placement order (the entry service first), the order in
// which multi topologies spread them round-robin.
var boaComponents = []string{
	boAFrontend, boAUserService, boAContacts, boABalanceReader, boALedgerWriter, boATransactionHistory, BoAAccountsDB, BoALedgerDB,
}

// boaTeamTier is each component's upstream team and tier label.
var boaTeamTier = map[string][2]string{
	boAFrontend:           {"frontend", "web"},
	boAUserService:        {"accounts", "backend"},
	boAContacts:           {"accounts", "backend"},
	boABalanceReader:      {"ledger", "backend"},
	boALedgerWriter:       {"ledger", "backend"},
	boATransactionHistory: {"ledger", "backend"},
	BoAAccountsDB:         {"accounts", "db"},
	BoALedgerDB:           {"ledger", "db"},
}

// boaLabels are upstream's labels of a component's Deployment, StatefulSet and Service (application, environment,
// team, tier); withApp adds app=component, as upstream's selectors, pod templates and database ConfigMaps have.
func boaLabels(component string, withApp bool) map[string]string {
	tt := boaTeamTier[component]
	l := map[string]string{"application": "bank-of-anthos", "environment": "development", "team": tt[0], "tier": tt[1]}
	if withApp {
		l["app"] = component
	}
	return l
}

// boaConfigMap is one of the five ConfigMaps every namespace gets; labels names the component whose upstream
// labels it carries ("" = none).
type boaConfigMap struct {
	name, labels string
	data         map[string]string
}

// boaConfigMaps: addresses are FQDNs when services are spread over namespaces.
func boaConfigMaps(p placement) []boaConfigMap {
	return []boaConfigMap{
		{name: "environment-config", data: map[string]string{
			"LOCAL_ROUTING_NUM": "883745000",
			"PUB_KEY_PATH":      "/tmp/.ssh/publickey",
		}},
		{name: "service-api-config", data: map[string]string{
			"TRANSACTIONS_API_ADDR": p.addr(boALedgerWriter, 8080),
			"BALANCES_API_ADDR":     p.addr(boABalanceReader, 8080),
			"HISTORY_API_ADDR":      p.addr(boATransactionHistory, 8080),
			"CONTACTS_API_ADDR":     p.addr(boAContacts, 8080),
			"USERSERVICE_API_ADDR":  p.addr(boAUserService, 8080),
		}},
		{name: "demo-data-config", data: map[string]string{
			"USE_DEMO_DATA":       "True",
			"DEMO_LOGIN_USERNAME": boAUsername,
			"DEMO_LOGIN_PASSWORD": boAPassword,
		}},
		{name: "accounts-db-config", labels: BoAAccountsDB, data: map[string]string{
			"POSTGRES_DB":       "accounts-db",
			"POSTGRES_USER":     "accounts-admin",
			"POSTGRES_PASSWORD": "accounts-pwd",
			"ACCOUNTS_DB_URI":   "postgresql://accounts-admin:accounts-pwd@" + p.addr(BoAAccountsDB, 5432) + "/accounts-db",
		}},
		{name: "ledger-db-config", labels: BoALedgerDB, data: map[string]string{
			"POSTGRES_DB":                "postgresdb",
			"POSTGRES_USER":              "admin",
			"POSTGRES_PASSWORD":          "password",
			"SPRING_DATASOURCE_URL":      "jdbc:postgresql://" + p.addr(BoALedgerDB, 5432) + "/postgresdb",
			"SPRING_DATASOURCE_USERNAME": "admin",
			"SPRING_DATASOURCE_PASSWORD": "password",
		}},
	}
}

func (b *builder) bankOfAnthos(key JWTKey) error {
	p := newPlacement(b.s.Spec.Workload, b.topo, boaComponents)
	b.namespaces(p.namespaces)
	for _, ns := range p.namespaces {
		b.add(&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: boAServiceAccount, Namespace: ns, Labels: b.labels("")},
		})
		for _, cm := range boaConfigMaps(p) {
			l := b.labels("")
			if cm.labels != "" {
				l = kube.MergeLabels(boaLabels(cm.labels, true), l)
			}
			b.add(&corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: cm.name, Namespace: ns, Labels: l},
				Data:       cm.data,
			})
		}
		b.add(jwtSecret(ns, b.labels(""), key))
	}
	for _, c := range boaComponents {
		ns := p.ns(c)
		switch c {
		case boAFrontend:
			b.boaService(ns, c, "http", 80, 8080, "")
			b.boaDeployment(ns, c, b.boaFrontend())
		case boAUserService:
			b.boaService(ns, c, "http", 8080, 8080, "")
			b.boaDeployment(ns, c, b.boaUserService())
		case boAContacts:
			b.boaService(ns, c, "http", 8080, 8080, "")
			b.boaDeployment(ns, c, b.boaContacts())
		case boABalanceReader:
			b.boaService(ns, c, "http", 8080, 8080, "")
			b.boaDeployment(ns, c, b.boaJava(c, []corev1.EnvVar{env("POLL_MS", "100"), env("CACHE_SIZE", "1000000")},
				[]string{"environment-config", "ledger-db-config"}, "/healthy", true))
		case boATransactionHistory:
			b.boaService(ns, c, "http", 8080, 8080, "")
			b.boaDeployment(ns, c, b.boaJava(c, []corev1.EnvVar{
				env("POLL_MS", "100"), env("CACHE_SIZE", "1000"), env("CACHE_MINUTES", "60"), env("HISTORY_LIMIT", "100"),
			}, []string{"environment-config", "ledger-db-config"}, "/healthy", true))
		case boALedgerWriter:
			b.boaService(ns, c, "http", 8080, 8080, "")
			b.boaDeployment(ns, c, b.boaJava(c, nil, []string{"environment-config", "service-api-config", "ledger-db-config"}, "/ready", false))
		case BoAAccountsDB:
			// upstream spells protocol out on accounts-db's port only
			b.boaService(ns, c, "tcp", 5432, 5432, corev1.ProtocolTCP)
			b.boaStatefulSet(ns, c, b.boaPostgres(c, "accounts-db", "100m", "128Mi", "250m", "512Mi", "accounts-db-config"))
		case BoALedgerDB:
			b.boaService(ns, c, "tcp", 5432, 5432, "")
			b.boaStatefulSet(ns, c, b.boaPostgres(c, "postgres", "100m", "512Mi", "250m", "1Gi", "ledger-db-config"))
		}
	}
	b.target.EntryService = boAFrontend
	b.target.EntryNamespace = p.ns(boAFrontend)
	b.target.EntryURL = "http://" + p.fqdn(boAFrontend) + ":80" + b.s.Spec.Load.Path
	return nil
}

// boaService is a component's ClusterIP Service: one port, upstream's labels and selector plus meshbench's labels.
// (Upstream's frontend is a LoadBalancer: meshbench loads it from inside the cluster.)
func (b *builder) boaService(ns, name, portName string, port, target int32, protocol corev1.Protocol) {
	sp := corev1.ServicePort{Name: portName, Port: port, TargetPort: intstr.FromInt32(target), Protocol: protocol}
	b.addService(&corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: kube.MergeLabels(boaLabels(name, false), b.labels(name))},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: boaLabels(name, true),
			Ports:    []corev1.ServicePort{sp},
		},
	})
}

func (b *builder) boaDeployment(ns, name string, spec corev1.PodSpec) {
	r := b.replicas
	spec.ServiceAccountName = boAServiceAccount
	spec.NodeSelector = copyMap(b.s.Spec.Workload.NodeSelector)
	spec.Tolerations = tolerations(b.s.Spec.Workload.Tolerations)
	grace := int64(5)
	spec.TerminationGracePeriodSeconds = &grace
	b.addDeployment(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: kube.MergeLabels(boaLabels(name, false), b.labels(name))},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: &metav1.LabelSelector{MatchLabels: boaLabels(name, true)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      kube.MergeLabels(boaLabels(name, true), b.labels(name)),
					Annotations: map[string]string{"proxy.istio.io/config": boaHoldProxy},
				},
				Spec: spec,
			},
		},
	})
}

// boaStatefulSet is a database: one replica (emptyDir storage, seeded at start), the namespace's default
// ServiceAccount and grace period, as upstream.
func (b *builder) boaStatefulSet(ns, name string, spec corev1.PodSpec) {
	r := int32(1)
	spec.ServiceAccountName = "default"
	spec.NodeSelector = copyMap(b.s.Spec.Workload.NodeSelector)
	spec.Tolerations = tolerations(b.s.Spec.Workload.Tolerations)
	b.addStatefulSet(&appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: kube.MergeLabels(boaLabels(name, false), b.labels(name))},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &r,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: boaLabels(name, true)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: kube.MergeLabels(boaLabels(name, true), b.labels(name))},
				Spec:       spec,
			},
		},
	})
}

func (b *builder) boaImage(name string) string {
	im := b.s.Spec.Images.BankOfAnthos
	return strings.TrimSuffix(im.Registry, "/") + "/" + name + ":" + im.Tag
}

func cmKey(cm, key string, optional bool) *corev1.EnvVarSource {
	s := &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}
	if optional {
		s.ConfigMapKeyRef.Optional = &optional
	}
	return s
}

// boaKeyVolume mounts the jwt-key Secret at /tmp/.ssh (inside the /tmp emptyDir, as upstream does): the public key
// as volume "publickey", or, for userservice, which signs tokens, both keys as volume "keys".
func boaKeyVolume(private bool) (corev1.Volume, corev1.VolumeMount) {
	name, items := "publickey", []corev1.KeyToPath{{Key: "jwtRS256.key.pub", Path: "publickey"}}
	if private {
		name, items = "keys", append([]corev1.KeyToPath{{Key: "jwtRS256.key", Path: "privatekey"}}, items...)
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: boaJWTSecret, Items: items}}},
		corev1.VolumeMount{Name: name, MountPath: "/tmp/.ssh", ReadOnly: true}
}

// boaEnv starts every service's env as upstream does (VERSION, PORT, ENABLE_TRACING, then ENABLE_METRICS for the
// Java services). The exporters write to Google Cloud Trace and Monitoring: off outside GCP.
func boaEnv(metrics bool) []corev1.EnvVar {
	e := []corev1.EnvVar{env("VERSION", boaVersion), env("PORT", "8080"), env("ENABLE_TRACING", "false")}
	if metrics {
		e = append(e, env("ENABLE_METRICS", "false"))
	}
	return e
}

// boaResources are the catalog's requests and limits (cpu and memory overridable by spec.workload.resources) plus
// upstream's ephemeral-storage request = limit where it sets one.
func (b *builder) boaResources(cpuReq, memReq, cpuLim, memLim, ephemeral string) corev1.ResourceRequirements {
	r := b.resources(cpuReq, memReq, cpuLim, memLim)
	if ephemeral != "" {
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse(ephemeral)
		r.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse(ephemeral)
	}
	return r
}

// boaPodSecurity is upstream's pod security context of the six services (no seccomp profile).
func boaPodSecurity() *corev1.PodSecurityContext {
	uid, t := int64(1000), true
	return &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: &t}
}

// boaContainerSecurity is upstream's container security context of the six services (capability "all" in upstream's
// spelling: container runtimes compare it case-insensitively).
func boaContainerSecurity() *corev1.SecurityContext {
	f, t := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f,
		Privileged:               &f,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"all"}},
		ReadOnlyRootFilesystem:   &t,
	}
}

// boaServicePod is what the six services share: the /tmp emptyDir and the key volume, upstream's security contexts.
func boaServicePod(c corev1.Container, privateKey bool) corev1.PodSpec {
	tmp, tmpMount := tmpVolume()
	keys, keysMount := boaKeyVolume(privateKey)
	c.SecurityContext = boaContainerSecurity()
	c.VolumeMounts = []corev1.VolumeMount{tmpMount, keysMount}
	return corev1.PodSpec{
		SecurityContext: boaPodSecurity(),
		Containers:      []corev1.Container{c},
		Volumes:         []corev1.Volume{tmp, keys},
	}
}

// boaFrontend: container "front", readiness and liveness on /ready; the OAuth settings come from an optional
// ConfigMap that only upstream's Apigee extra creates.
func (b *builder) boaFrontend() corev1.PodSpec {
	e := append(boaEnv(false),
		env("SCHEME", "http"),
		env("LOG_LEVEL", "info"),
		corev1.EnvVar{Name: "DEFAULT_USERNAME", ValueFrom: cmKey("demo-data-config", "DEMO_LOGIN_USERNAME", false)},
		corev1.EnvVar{Name: "DEFAULT_PASSWORD", ValueFrom: cmKey("demo-data-config", "DEMO_LOGIN_PASSWORD", false)},
		corev1.EnvVar{Name: "REGISTERED_OAUTH_CLIENT_ID", ValueFrom: cmKey("oauth-config", "DEMO_OAUTH_CLIENT_ID", true)},
		corev1.EnvVar{Name: "ALLOWED_OAUTH_REDIRECT_URI", ValueFrom: cmKey("oauth-config", "DEMO_OAUTH_REDIRECT_URI", true)},
	)
	return boaServicePod(corev1.Container{
		Name:            "front",
		Image:           b.boaImage(boAFrontend),
		ImagePullPolicy: b.pullPolicy(),
		Env:             e,
		EnvFrom:         envFromConfigMaps("environment-config", "service-api-config"),
		ReadinessProbe:  httpProbe("/ready", 8080, 10, 5, 10, 0),
		LivenessProbe:   httpProbe("/ready", 8080, 60, 15, 30, 0),
		Resources:       b.boaResources("100m", "64Mi", "250m", "128Mi", ""),
	}, false)
}

// boaUserService signs the login tokens (private key) and is the only service upstream declares a port for.
func (b *builder) boaUserService() corev1.PodSpec {
	return boaServicePod(corev1.Container{
		Name:            boAUserService,
		Image:           b.boaImage(boAUserService),
		ImagePullPolicy: b.pullPolicy(),
		Ports:           []corev1.ContainerPort{{Name: "http-server", ContainerPort: 8080}},
		Env: append(boaEnv(false),
			env("TOKEN_EXPIRY_SECONDS", boaTokenExpiry),
			env("PRIV_KEY_PATH", "/tmp/.ssh/privatekey"),
			env("LOG_LEVEL", "info"),
		),
		EnvFrom:        envFromConfigMaps("environment-config", "accounts-db-config"),
		ReadinessProbe: httpProbe("/ready", 8080, 10, 5, 10, 0),
		Resources:      b.boaResources("260m", "128Mi", "500m", "256Mi", "0.25Gi"),
	}, true)
}

func (b *builder) boaContacts() corev1.PodSpec {
	return boaServicePod(corev1.Container{
		Name:            boAContacts,
		Image:           b.boaImage(boAContacts),
		ImagePullPolicy: b.pullPolicy(),
		Env:             append(boaEnv(false), env("LOG_LEVEL", "info")),
		EnvFrom:         envFromConfigMaps("environment-config", "accounts-db-config"),
		ReadinessProbe:  httpProbe("/ready", 8080, 10, 5, 10, 0),
		Resources:       b.boaResources("100m", "64Mi", "250m", "128Mi", "0.25Gi"),
	}, false)
}

// boaJava is balancereader, transactionhistory or ledgerwriter (Spring Boot on 8080): readiness /ready after 60 s,
// a startup probe (30 x 10 s) on startupPath; the two ledger readers, which poll ledger-db every 100 ms and load
// their cache at start, also have liveness /healthy after 120 s.
func (b *builder) boaJava(name string, extra []corev1.EnvVar, envFrom []string, startupPath string, liveness bool) corev1.PodSpec {
	e := append(boaEnv(true), extra...)
	e = append(e,
		env("JVM_OPTS", "-XX:+UnlockExperimentalVMOptions -XX:+UseCGroupMemoryLimitForHeap -Xms256m -Xmx512m"),
		env("LOG_LEVEL", "info"),
		corev1.EnvVar{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	)
	c := corev1.Container{
		Name:            name,
		Image:           b.boaImage(name),
		ImagePullPolicy: b.pullPolicy(),
		Env:             e,
		EnvFrom:         envFromConfigMaps(envFrom...),
		ReadinessProbe:  httpProbe("/ready", 8080, 60, 5, 10, 0),
		StartupProbe:    httpProbe(startupPath, 8080, 0, 10, 0, 30),
		Resources:       b.boaResources("100m", "256Mi", "500m", "512Mi", "0.5Gi"),
	}
	if liveness {
		c.LivenessProbe = httpProbe("/healthy", 8080, 120, 5, 10, 0)
	}
	return boaServicePod(c, false)
}

// boaPostgres is accounts-db or ledger-db: upstream's postgres image seeding the demo data into an emptyDir. No
// securityContext, as upstream: its entrypoint must start as root to chown PGDATA (docs/apps.md).
func (b *builder) boaPostgres(name, container, cpuReq, memReq, cpuLim, memLim, config string) corev1.PodSpec {
	data := corev1.Volume{Name: "postgresdb", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:            container,
			Image:           b.boaImage(name),
			ImagePullPolicy: b.pullPolicy(),
			Ports:           []corev1.ContainerPort{{ContainerPort: 5432}},
			EnvFrom:         envFromConfigMaps("environment-config", config, "demo-data-config"),
			Resources:       b.boaResources(cpuReq, memReq, cpuLim, memLim, ""),
			VolumeMounts:    []corev1.VolumeMount{{Name: "postgresdb", MountPath: "/var/lib/postgresql/data", SubPath: "postgres"}},
		}},
		Volumes: []corev1.Volume{data},
	}
}

// jwtSecret is the jwt-key Secret (keys jwtRS256.key and jwtRS256.key.pub, PEM).
func jwtSecret(ns string, labels map[string]string, key JWTKey) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: boaJWTSecret, Namespace: ns, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"jwtRS256.key": key.PrivatePEM, "jwtRS256.key.pub": key.PublicPEM},
	}
}
