package workloads

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bank of Anthos facts (v0.6.x manifests; shared/reference/istio-modes.md "Bank of Anthos in one table").
const (
	BoAFrontend           = "frontend"
	BoAUserService        = "userservice"
	BoAContacts           = "contacts"
	BoABalanceReader      = "balancereader"
	BoALedgerWriter       = "ledgerwriter"
	BoATransactionHistory = "transactionhistory"
	BoAAccountsDB         = "accounts-db"
	BoALedgerDB           = "ledger-db"

	// BoAUsername and BoAPassword are the demo user the databases are seeded with (demo-data-config).
	BoAUsername = "testuser"
	BoAPassword = "bankofanthos"

	boaJWTSecret = "jwt-key"
	boaVersion   = "v0.6.10"
	// boaTokenExpiry is how long a login token stays valid. Upstream uses 3600 s; a benchmark that logs in once
	// and loads /home for hours must not start measuring the login redirect after an hour.
	boaTokenExpiry = "86400"
)

// BoAComponents lists the app's services and databases in placement order (the entry service first), the order in
// which multi topologies spread them round-robin.
var BoAComponents = []string{
	BoAFrontend, BoAUserService, BoAContacts, BoABalanceReader, BoALedgerWriter, BoATransactionHistory, BoAAccountsDB, BoALedgerDB,
}

// boaConfigMaps are the five ConfigMaps every namespace gets. Addresses are FQDNs when services are spread over
// namespaces.
func (b *builder) boaConfigMaps(p placement) map[string]map[string]string {
	return map[string]map[string]string{
		"environment-config": {
			"LOCAL_ROUTING_NUM": "883745000",
			"PUB_KEY_PATH":      "/tmp/.ssh/publickey",
		},
		"service-api-config": {
			"TRANSACTIONS_API_ADDR": p.addr(BoALedgerWriter, 8080),
			"BALANCES_API_ADDR":     p.addr(BoABalanceReader, 8080),
			"HISTORY_API_ADDR":      p.addr(BoATransactionHistory, 8080),
			"CONTACTS_API_ADDR":     p.addr(BoAContacts, 8080),
			"USERSERVICE_API_ADDR":  p.addr(BoAUserService, 8080),
		},
		"demo-data-config": {
			"USE_DEMO_DATA":       "True",
			"DEMO_LOGIN_USERNAME": BoAUsername,
			"DEMO_LOGIN_PASSWORD": BoAPassword,
		},
		"accounts-db-config": {
			"POSTGRES_DB":       "accounts-db",
			"POSTGRES_USER":     "accounts-admin",
			"POSTGRES_PASSWORD": "accounts-pwd",
			"ACCOUNTS_DB_URI":   "postgresql://accounts-admin:accounts-pwd@" + p.addr(BoAAccountsDB, 5432) + "/accounts-db",
		},
		"ledger-db-config": {
			"POSTGRES_DB":                "postgresdb",
			"POSTGRES_USER":              "admin",
			"POSTGRES_PASSWORD":          "password",
			"SPRING_DATASOURCE_URL":      "jdbc:postgresql://" + p.addr(BoALedgerDB, 5432) + "/postgresdb",
			"SPRING_DATASOURCE_USERNAME": "admin",
			"SPRING_DATASOURCE_PASSWORD": "password",
		},
	}
}

func (b *builder) bankOfAnthos(key JWTKey) error {
	p := newPlacement(b.s.Spec.Workload.NamespacePrefix, b.topo, BoAComponents)
	b.namespaces(p.namespaces)
	cms := b.boaConfigMaps(p)
	for _, ns := range p.namespaces {
		for name, data := range cms {
			b.configMap(ns, name, data)
		}
		b.add(jwtSecret(ns, b.labels(""), key))
	}
	for _, c := range BoAComponents {
		ns := p.ns(c)
		b.serviceAccount(ns, c)
		switch c {
		case BoAFrontend:
			b.service(ns, c, httpPort("http", 80, 8080))
			b.deployment(ns, c, b.boaPython(c, "100m", "64Mi", "250m", "128Mi", []corev1.EnvVar{
				env("SCHEME", "http"),
				env("ENV_PLATFORM", "local"),
				{Name: "DEFAULT_USERNAME", ValueFrom: cmKey("demo-data-config", "DEMO_LOGIN_USERNAME")},
				{Name: "DEFAULT_PASSWORD", ValueFrom: cmKey("demo-data-config", "DEMO_LOGIN_PASSWORD")},
			}, []string{"environment-config", "service-api-config"}, false, true))
		case BoAUserService:
			b.service(ns, c, httpPort("http", 8080, 8080))
			b.deployment(ns, c, b.boaPython(c, "260m", "128Mi", "500m", "256Mi", []corev1.EnvVar{
				env("TOKEN_EXPIRY_SECONDS", boaTokenExpiry),
				env("PRIV_KEY_PATH", "/tmp/.ssh/privatekey"),
			}, []string{"environment-config", "accounts-db-config"}, true, false))
		case BoAContacts:
			b.service(ns, c, httpPort("http", 8080, 8080))
			b.deployment(ns, c, b.boaPython(c, "100m", "64Mi", "250m", "128Mi", nil,
				[]string{"environment-config", "accounts-db-config"}, false, false))
		case BoABalanceReader:
			b.service(ns, c, httpPort("http", 8080, 8080))
			b.deployment(ns, c, b.boaJava(c, []corev1.EnvVar{env("POLL_MS", "100"), env("CACHE_SIZE", "1000000")},
				[]string{"environment-config", "ledger-db-config"}, true))
		case BoATransactionHistory:
			b.service(ns, c, httpPort("http", 8080, 8080))
			b.deployment(ns, c, b.boaJava(c, []corev1.EnvVar{
				env("POLL_MS", "100"), env("CACHE_SIZE", "1000"), env("CACHE_MINUTES", "60"), env("HISTORY_LIMIT", "100"),
			}, []string{"environment-config", "ledger-db-config"}, true))
		case BoALedgerWriter:
			b.service(ns, c, httpPort("http", 8080, 8080))
			b.deployment(ns, c, b.boaJava(c, nil, []string{"environment-config", "service-api-config", "ledger-db-config"}, false))
		case BoAAccountsDB:
			b.service(ns, c, tcpPort("tcp", 5432))
			b.statefulSet(ns, c, b.boaPostgres(c, "100m", "128Mi", "250m", "512Mi", "accounts-db-config"))
		case BoALedgerDB:
			b.service(ns, c, tcpPort("tcp", 5432))
			b.statefulSet(ns, c, b.boaPostgres(c, "100m", "512Mi", "250m", "1Gi", "ledger-db-config"))
		}
	}
	b.target.EntryService = BoAFrontend
	b.target.EntryNamespace = p.ns(BoAFrontend)
	b.target.EntryURL = "http://" + FQDN(BoAFrontend, p.ns(BoAFrontend)) + ":80" + b.s.Spec.Load.Path
	return nil
}

func (b *builder) boaImage(name string) string {
	im := b.s.Spec.Images.BankOfAnthos
	return strings.TrimSuffix(im.Registry, "/") + "/" + name + ":" + im.Tag
}

func cmKey(cm, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}
}

// boaKeyVolume mounts the jwt-key Secret at /tmp/.ssh (inside the /tmp emptyDir, as upstream does): the public key
// for every service, the private key too for userservice, which signs tokens.
func boaKeyVolume(private bool) (corev1.Volume, corev1.VolumeMount) {
	items := []corev1.KeyToPath{{Key: "jwtRS256.key.pub", Path: "publickey"}}
	if private {
		items = append([]corev1.KeyToPath{{Key: "jwtRS256.key", Path: "privatekey"}}, items...)
	}
	return corev1.Volume{Name: "keys", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: boaJWTSecret, Items: items}}},
		corev1.VolumeMount{Name: "keys", MountPath: "/tmp/.ssh", ReadOnly: true}
}

func (b *builder) boaCommonEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		env("VERSION", boaVersion),
		env("PORT", "8080"),
		env("ENABLE_TRACING", "false"),
		env("ENABLE_METRICS", "false"),
		env("LOG_LEVEL", "info"),
	}
}

// boaPython is frontend, userservice or contacts (gunicorn on 8080, readiness /ready; frontend also liveness).
func (b *builder) boaPython(name, cpuReq, memReq, cpuLim, memLim string, extra []corev1.EnvVar, envFrom []string, privateKey, liveness bool) corev1.PodSpec {
	tmp, tmpMount := tmpVolume()
	keys, keysMount := boaKeyVolume(privateKey)
	c := corev1.Container{
		Name:            name,
		Image:           b.boaImage(name),
		ImagePullPolicy: b.pullPolicy(),
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Env:             append(b.boaCommonEnv(), extra...),
		EnvFrom:         envFromConfigMaps(envFrom...),
		ReadinessProbe:  httpProbe("/ready", 8080, 10, 5, 10, 3),
		Resources:       b.resources(cpuReq, memReq, cpuLim, memLim),
		SecurityContext: containerSecurity(true),
		VolumeMounts:    []corev1.VolumeMount{tmpMount, keysMount},
	}
	if liveness {
		c.LivenessProbe = httpProbe("/ready", 8080, 60, 15, 30, 3)
	}
	return corev1.PodSpec{
		SecurityContext: podSecurity(1000),
		Containers:      []corev1.Container{c},
		Volumes:         []corev1.Volume{tmp, keys},
	}
}

// boaJava is balancereader, transactionhistory or ledgerwriter (Spring Boot on 8080). The two ledger readers poll
// ledger-db every 100 ms and load their cache at start: a startup probe on /healthy allows 30 x 10 s.
func (b *builder) boaJava(name string, extra []corev1.EnvVar, envFrom []string, startup bool) corev1.PodSpec {
	tmp, tmpMount := tmpVolume()
	keys, keysMount := boaKeyVolume(false)
	e := append(b.boaCommonEnv(),
		env("JVM_OPTS", "-XX:+UnlockExperimentalVMOptions -XX:+UseCGroupMemoryLimitForHeap -Xms256m -Xmx512m"),
		corev1.EnvVar{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	)
	c := corev1.Container{
		Name:            name,
		Image:           b.boaImage(name),
		ImagePullPolicy: b.pullPolicy(),
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Env:             append(e, extra...),
		EnvFrom:         envFromConfigMaps(envFrom...),
		ReadinessProbe:  httpProbe("/ready", 8080, 0, 5, 10, 3),
		Resources:       b.resources("100m", "256Mi", "500m", "512Mi"),
		SecurityContext: containerSecurity(true),
		VolumeMounts:    []corev1.VolumeMount{tmpMount, keysMount},
	}
	if startup {
		c.StartupProbe = httpProbe("/healthy", 8080, 0, 10, 10, 30)
		c.LivenessProbe = httpProbe("/healthy", 8080, 0, 5, 10, 3)
	} else {
		c.ReadinessProbe.InitialDelaySeconds = 20
	}
	return corev1.PodSpec{
		SecurityContext: podSecurity(1000),
		Containers:      []corev1.Container{c},
		Volumes:         []corev1.Volume{tmp, keys},
	}
}

// boaPostgres is accounts-db or ledger-db: Postgres seeded from demo data at start into an emptyDir (so a restart
// re-seeds). The Postgres entrypoint writes outside /tmp, so the root filesystem stays writable; it runs as uid 1000
// with the data directory owned through fsGroup.
func (b *builder) boaPostgres(name, cpuReq, memReq, cpuLim, memLim, config string) corev1.PodSpec {
	data := corev1.Volume{Name: "postgresdb", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	return corev1.PodSpec{
		SecurityContext: podSecurity(1000),
		Containers: []corev1.Container{{
			Name:            name,
			Image:           b.boaImage(name),
			ImagePullPolicy: b.pullPolicy(),
			Ports:           []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432, Protocol: corev1.ProtocolTCP}},
			EnvFrom:         envFromConfigMaps("environment-config", config, "demo-data-config"),
			Resources:       b.resources(cpuReq, memReq, cpuLim, memLim),
			SecurityContext: containerSecurity(false),
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
