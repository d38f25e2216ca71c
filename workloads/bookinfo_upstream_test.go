package workloads

// Bookinfo as meshbench generates it, compared with Bookinfo as istio/istio ships it: tag 1.30.0 (commit
// badd809ed7d57954d4c16e12e75e15a7722a7b96), samples/bookinfo/platform/kube/bookinfo.yaml. Its images are
// registry.istio.io/release/examples-bookinfo-<deployment>:1.20.3 (istio/istio commit 6bdd928edaf "Use
// registry.istio.io", between 1.29.0 and 1.30.0: Docker Hub rate-limits anonymous pulls); 1.27.0 ... 1.29.x ship the
// same 1.20.3 images from docker.io/istio, 1.24.0 ... 1.26.x tag 1.20.2 (the override spec.images.bookinfo.registry:
// docker.io/istio keeps the old registry). Apart from the images, 1.24.0 (commit
// 8825a6b7f8c9a2d66005a5f8b64e98aaee0dda99) and 1.30.0 are the same file (checked with git diff 1.24.0 1.30.0), as is
// 1.31.0-rc.0. Upstream sets no securityContext, resources or probes.
//
// The address variables are read in tag 1.24.0: samples/bookinfo/src/productpage/productpage.py reads
// SERVICES_DOMAIN, DETAILS_HOSTNAME, RATINGS_HOSTNAME, REVIEWS_HOSTNAME (defaults "details", "ratings", "reviews"),
// and samples/bookinfo/src/reviews/reviews-application/src/main/java/application/rest/LibertyRestEndpoint.java
// reads RATINGS_HOSTNAME (default "ratings").
//
// Deliberate differences: meshbench labels on every object, a namespace, automountServiceAccountToken false,
// terminationGracePeriodSeconds 5, Service type ClusterIP with targetPort and appProtocol http spelt out,
// spec.workload.replicas/resources/nodeSelector and spec.images.pullPolicy applied, and in multi topologies the
// hostname variables set to the placed FQDNs.

import (
	"path"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/scenario"
)

type upBookinfoDeployment struct {
	name, app, version, sa, image string
	env                           []corev1.EnvVar
	mounts                        []corev1.VolumeMount
	volumes                       []string // emptyDir volumes, in upstream order
	annotations                   map[string]string
}

// upTmp is the mount path of upstream's tmp emptyDir (reviews and productpage); reviews' LOG_DIR is "logs" in it.
const upTmp = "/tmp"

func upBookinfo() []upBookinfoDeployment {
	img := func(d string) string { return "registry.istio.io/release/examples-bookinfo-" + d + ":1.20.3" }
	reviews := func(v string) upBookinfoDeployment {
		return upBookinfoDeployment{
			name: "reviews-" + v, app: "reviews", version: v, sa: "bookinfo-reviews", image: img("reviews-" + v),
			env:     []corev1.EnvVar{{Name: "LOG_DIR", Value: path.Join(upTmp, "logs")}},
			mounts:  []corev1.VolumeMount{{Name: "tmp", MountPath: upTmp}, {Name: "wlp-output", MountPath: "/opt/ibm/wlp/output"}},
			volumes: []string{"wlp-output", "tmp"},
		}
	}
	return []upBookinfoDeployment{
		{name: "details-v1", app: "details", version: "v1", sa: "bookinfo-details", image: img("details-v1")},
		{name: "ratings-v1", app: "ratings", version: "v1", sa: "bookinfo-ratings", image: img("ratings-v1")},
		reviews("v1"), reviews("v2"), reviews("v3"),
		{
			name: "productpage-v1", app: "productpage", version: "v1", sa: "bookinfo-productpage", image: img("productpage-v1"),
			mounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}, volumes: []string{"tmp"},
			annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9080", "prometheus.io/path": "/metrics"},
		},
	}
}

const bookinfoPlain = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: bookinfo}
spec:
  workload:
    app: bookinfo
    topologies:
    - kind: single
    - kind: multi
`

func TestBookinfoMatchesUpstream(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, bookinfoPlain)
	objs, _, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	deps, svcs, sas := map[string]*appsv1.Deployment{}, map[string]*corev1.Service{}, map[string]*corev1.ServiceAccount{}
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			deps[v.Name] = v
		case *corev1.Service:
			svcs[v.Name] = v
		case *corev1.ServiceAccount:
			sas[v.Name] = v
		}
	}
	// Upstream: four Services, each labelled app and service, one port 9080 named http, selector app=<name>.
	for _, name := range []string{"details", "ratings", "reviews", "productpage"} {
		svc := svcs[name]
		if svc == nil {
			t.Errorf("Service %s missing", name)
			continue
		}
		if svc.Labels["app"] != name || svc.Labels["service"] != name || svc.Spec.Selector["app"] != name {
			t.Errorf("Service %s: labels %v selector %v", name, svc.Labels, svc.Spec.Selector)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9080 || svc.Spec.Ports[0].Name != "http" {
			t.Errorf("Service %s: ports %+v, upstream has one port 9080 named http", name, svc.Spec.Ports)
		}
		// Upstream: ServiceAccount bookinfo-<name> labelled account=<name>.
		if sa := sas["bookinfo-"+name]; sa == nil || sa.Labels["account"] != name {
			t.Errorf("ServiceAccount bookinfo-%s missing or without label account=%s", name, name)
		}
	}
	if len(svcs) != 4 || len(sas) != 4 || len(deps) != 6 {
		t.Errorf("%d Services, %d ServiceAccounts, %d Deployments; upstream has 4, 4, 6", len(svcs), len(sas), len(deps))
	}
	for _, u := range upBookinfo() {
		d := deps[u.name]
		if d == nil {
			t.Errorf("Deployment %s missing", u.name)
			continue
		}
		want := map[string]string{"app": u.app, "version": u.version}
		for k, v := range want {
			if d.Labels[k] != v || d.Spec.Selector.MatchLabels[k] != v || d.Spec.Template.Labels[k] != v {
				t.Errorf("%s: label %s=%s missing on object, selector or pod template", u.name, k, v)
			}
		}
		ps := d.Spec.Template.Spec
		if ps.ServiceAccountName != u.sa {
			t.Errorf("%s: serviceAccountName %q, upstream %q", u.name, ps.ServiceAccountName, u.sa)
		}
		if ps.SecurityContext != nil {
			t.Errorf("%s: pod securityContext set; upstream has none", u.name)
		}
		for k, v := range u.annotations {
			if d.Spec.Template.Annotations[k] != v {
				t.Errorf("%s: pod annotation %s=%q, upstream %q", u.name, k, d.Spec.Template.Annotations[k], v)
			}
		}
		var vols []string
		for _, v := range ps.Volumes {
			if v.EmptyDir == nil {
				t.Errorf("%s: volume %s is not an emptyDir", u.name, v.Name)
			}
			vols = append(vols, v.Name)
		}
		if !slices.Equal(vols, u.volumes) {
			t.Errorf("%s: volumes %v, upstream %v", u.name, vols, u.volumes)
		}
		if len(ps.Containers) != 1 {
			t.Fatalf("%s: %d containers, upstream 1", u.name, len(ps.Containers))
		}
		c := ps.Containers[0]
		if c.Name != u.app || c.Image != u.image || c.ImagePullPolicy != corev1.PullIfNotPresent || c.SecurityContext != nil {
			t.Errorf("%s: container %s image %s pull %s sc %v; upstream %s %s IfNotPresent, no securityContext", u.name, c.Name, c.Image, c.ImagePullPolicy, c.SecurityContext, u.app, u.image)
		}
		if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9080 {
			t.Errorf("%s: container ports %+v, upstream containerPort 9080", u.name, c.Ports)
		}
		if !reflect.DeepEqual(c.Env, u.env) || !reflect.DeepEqual(c.VolumeMounts, u.mounts) {
			t.Errorf("%s: env %v mounts %v; upstream env %v mounts %v (single topology adds nothing)", u.name, c.Env, c.VolumeMounts, u.env, u.mounts)
		}
	}
}

func envOf(objs []runtime.Object, deployment string) map[string]string {
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == deployment {
			m := map[string]string{}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				m[e.Name] = e.Value
			}
			return m
		}
	}
	return nil
}

func TestBookinfoTarget(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, bookinfoPlain)
	for _, tc := range []struct {
		topo       int
		namespaces []string
		entry      string
		hosts      map[string]string // productpage's env in the multi topology
	}{
		{0, []string{"mb-single"}, "http://productpage.mb-single.svc.cluster.local:9080/productpage", map[string]string{}},
		{1, []string{"mb-multi-0", "mb-multi-1", "mb-multi-2", "mb-multi-3"}, "http://productpage.mb-multi-0.svc.cluster.local:9080/productpage", map[string]string{
			"DETAILS_HOSTNAME": "details.mb-multi-1.svc.cluster.local",
			"REVIEWS_HOSTNAME": "reviews.mb-multi-2.svc.cluster.local",
			"RATINGS_HOSTNAME": "ratings.mb-multi-3.svc.cluster.local",
		}},
	} {
		objs, target, err := Objects(s, s.Spec.Workload.Topologies[tc.topo], "r1")
		if err != nil {
			t.Fatal(err)
		}
		if target.App != scenario.AppBookinfo || target.EntryService != "productpage" || target.EntryNamespace != tc.namespaces[0] || target.EntryURL != tc.entry {
			t.Errorf("topology %d: target %+v, want entry productpage in %s at %s", tc.topo, target, tc.namespaces[0], tc.entry)
		}
		if !slices.Equal(target.Namespaces, tc.namespaces) {
			t.Errorf("topology %d: namespaces %v, want %v", tc.topo, target.Namespaces, tc.namespaces)
		}
		if !slices.Equal(target.Services, []string{"productpage", "details", "reviews", "ratings"}) {
			t.Errorf("topology %d: services %v", tc.topo, target.Services)
		}
		var names []string
		for _, w := range target.Workloads {
			names = append(names, w.Name)
			if w.Kind != "Deployment" || w.Replicas != 1 {
				t.Errorf("topology %d: workload %+v, want a Deployment with 1 replica", tc.topo, w)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"details-v1", "productpage-v1", "ratings-v1", "reviews-v1", "reviews-v2", "reviews-v3"}) {
			t.Errorf("topology %d: workloads %v", tc.topo, names)
		}
		pp := envOf(objs, "productpage-v1")
		for k, v := range tc.hosts {
			if pp[k] != v {
				t.Errorf("topology %d: productpage %s=%q, want %q", tc.topo, k, pp[k], v)
			}
		}
		if tc.topo == 1 {
			for _, r := range []string{"reviews-v1", "reviews-v2", "reviews-v3"} {
				if got := envOf(objs, r)["RATINGS_HOSTNAME"]; got != tc.hosts["RATINGS_HOSTNAME"] {
					t.Errorf("%s: RATINGS_HOSTNAME %q, want %q", r, got, tc.hosts["RATINGS_HOSTNAME"])
				}
			}
		}
	}
}

// Issue 29 section 1 item 5: the default registry is upstream's since 1.30.0; spec.images.bookinfo.registry
// docker.io/istio (what 1.27.0 ... 1.29.x ship) gives Docker Hub's copies of the same tag.
func TestBookinfoRegistryOverride(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, bookinfoPlain+"  images:\n    bookinfo: {registry: docker.io/istio}\n")
	objs, _, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			n++
			if img := d.Spec.Template.Spec.Containers[0].Image; img != "docker.io/istio/examples-bookinfo-"+d.Name+":1.20.3" {
				t.Errorf("%s: image %s, want docker.io/istio/examples-bookinfo-%s:1.20.3", d.Name, img, d.Name)
			}
		}
	}
	if n != 6 {
		t.Errorf("%d Deployments, want Bookinfo's six", n)
	}
}
