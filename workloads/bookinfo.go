package workloads

import (
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kube"
)

// Bookinfo is Istio's sample app as istio/istio ships it in samples/bookinfo/platform/kube/bookinfo.yaml (tag
// 1.24.0; bookinfo_upstream_test.go pins it). Every service listens on 9080.
const bookinfoPort = 9080

// bookinfoServices are the four Services, in placement order: the entry first, so that it gets the first namespace.
var bookinfoServices = []string{"productpage", "details", "reviews", "ratings"}

// bookinfoDeployment is one upstream Deployment: <service>-<version>.
type bookinfoDeployment struct{ service, version string }

func (d bookinfoDeployment) name() string { return d.service + "-" + d.version }

// bookinfoDeployments are upstream's six Deployments; the three reviews versions share the Service reviews.
var bookinfoDeployments = []bookinfoDeployment{
	{"details", "v1"}, {"ratings", "v1"}, {"reviews", "v1"}, {"reviews", "v2"}, {"reviews", "v3"}, {"productpage", "v1"},
}

func (b *builder) bookinfo() error {
	p := newPlacement(b.s.Spec.Workload, b.topo, bookinfoServices)
	b.namespaces(p.namespaces)
	for _, svc := range bookinfoServices {
		ns := p.ns(svc)
		f := false
		b.add(&corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   metav1.ObjectMeta{Name: "bookinfo-" + svc, Namespace: ns, Labels: kube.MergeLabels(b.labels(svc), map[string]string{"account": svc})},
			AutomountServiceAccountToken: &f, // no Bookinfo service talks to the API server
		})
		b.addService(&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns, Labels: kube.MergeLabels(b.labels(svc), map[string]string{"app": svc, "service": svc})},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: map[string]string{"app": svc, appLabel: string(b.app)},
				Ports:    []corev1.ServicePort{httpPort("http", bookinfoPort, bookinfoPort)},
			},
		})
	}
	for _, d := range bookinfoDeployments {
		b.bookinfoDeployment(p, d)
	}
	b.target.EntryService = "productpage"
	b.target.EntryNamespace = p.ns("productpage")
	path := b.s.Spec.Load.Path
	if path == "" {
		path = "/productpage"
	}
	b.target.EntryURL = "http://" + p.fqdn("productpage") + ":" + strconv.Itoa(bookinfoPort) + path
	return nil
}

func (b *builder) bookinfoDeployment(p placement, d bookinfoDeployment) {
	name, ns := d.name(), p.ns(d.service)
	c := corev1.Container{
		Name:            d.service,
		Image:           b.bookinfoImage(name),
		ImagePullPolicy: b.pullPolicy(),
		Ports:           []corev1.ContainerPort{{ContainerPort: bookinfoPort, Protocol: corev1.ProtocolTCP}},
		Resources:       b.resources("", "", "", ""), // upstream sets none; spec.workload.resources may
	}
	tmp, tmpMount := tmpVolume()
	var volumes []corev1.Volume
	var annotations map[string]string
	switch d.service {
	case "reviews":
		// The hostnames are read by reviews' LibertyRestEndpoint.java (RATINGS_HOSTNAME, default "ratings").
		// upstream's LOG_DIR is the logs directory inside the tmp emptyDir
		c.Env = []corev1.EnvVar{env("LOG_DIR", path.Join(tmpMount.MountPath, "logs"))}
		if p.multi {
			c.Env = append(c.Env, env("RATINGS_HOSTNAME", p.host("ratings")))
		}
		c.VolumeMounts = []corev1.VolumeMount{tmpMount, {Name: "wlp-output", MountPath: "/opt/ibm/wlp/output"}}
		volumes = []corev1.Volume{{Name: "wlp-output", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, tmp}
	case "productpage":
		// productpage.py reads DETAILS_HOSTNAME, REVIEWS_HOSTNAME and RATINGS_HOSTNAME (defaults the short names):
		// across namespaces the short names do not resolve.
		if p.multi {
			c.Env = []corev1.EnvVar{
				env("DETAILS_HOSTNAME", p.host("details")),
				env("RATINGS_HOSTNAME", p.host("ratings")),
				env("REVIEWS_HOSTNAME", p.host("reviews")),
			}
		}
		c.VolumeMounts = []corev1.VolumeMount{tmpMount}
		volumes = []corev1.Volume{tmp}
		annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9080", "prometheus.io/path": "/metrics"}
	}
	spec := b.podSpec("bookinfo-"+d.service, corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: volumes})
	r := b.replicas
	upstream := map[string]string{"app": d.service, "version": d.version}
	b.addDeployment(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: kube.MergeLabels(b.labels(name), upstream)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.service, "version": d.version, appLabel: string(b.app)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Annotations: annotations,
					Labels: kube.MergeLabels(b.labels(name), map[string]string{
						"app": d.service, "version": d.version,
						"app.kubernetes.io/name": d.service, "app.kubernetes.io/version": d.version, "app.kubernetes.io/part-of": string(b.app),
					}),
				},
				Spec: spec,
			},
		},
	})
}

// bookinfoImage is <registry>/examples-bookinfo-<deployment>:<tag>, upstream's naming.
func (b *builder) bookinfoImage(deployment string) string {
	im := b.s.Spec.Images.Bookinfo
	return strings.TrimSuffix(im.Registry, "/") + "/examples-bookinfo-" + deployment + ":" + im.Tag
}
