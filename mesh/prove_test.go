package mesh

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

func TestProve(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	now := metav1.Now()
	base := func() corev1.Pod { return *podIn(scenario.ModeNone, "ns", "web", false) }
	with := func(f func(p *corev1.Pod)) corev1.Pod { p := base(); f(&p); return p }

	classic := *podIn(scenario.ModeSidecar, "ns", "web", false)
	native := *podIn(scenario.ModeSidecar, "ns", "web", true)
	ambient := *podIn(scenario.ModeAmbient, "ns", "web", false)
	pending := with(func(p *corev1.Pod) { p.Annotations[AnnotationRedirection] = redirectionPending })
	sidecarInAmbientNS := with(func(p *corev1.Pod) {
		*p = *podIn(scenario.ModeSidecar, "ns", "web", true)
		p.Annotations[AnnotationRedirection] = RedirectionEnabled // an ambient namespace does not capture sidecar pods
	})
	proxyNotReady := with(func(p *corev1.Pod) {
		*p = *podIn(scenario.ModeSidecar, "ns", "web", true)
		p.Status.InitContainerStatuses[1].Ready = false
	})
	annotationOnly := with(func(p *corev1.Pod) { p.Annotations[AnnotationSidecarStatus] = "{}" })
	proxyInitNotNative := with(func(p *corev1.Pod) {
		p.Annotations[AnnotationSidecarStatus] = "{}"
		p.Spec.InitContainers = []corev1.Container{{Name: ProxyContainer}} // no restartPolicy Always: not a sidecar
	})
	nativeStatusInWrongList := with(func(p *corev1.Pod) {
		p.Annotations[AnnotationSidecarStatus] = "{}"
		p.Spec.InitContainers = []corev1.Container{{Name: ProxyContainer, RestartPolicy: &always}}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ProxyContainer, Ready: true})
	})
	terminating := with(func(p *corev1.Pod) { p.DeletionTimestamp = &now })
	standIn := with(func(p *corev1.Pod) {
		*p = *podIn(scenario.ModeSidecar, "ns", "web", true)
		p.Annotations[StandInAnnotation] = "true"
	})

	for _, tc := range []struct {
		name     string
		mode     scenario.Mode
		pod      corev1.Pod
		proved   bool
		observed string
		problem  string // substring
	}{
		{"none/plain", scenario.ModeNone, base(), true, observedNone, ""},
		{"none/sidecar left", scenario.ModeNone, classic, false, observedSidecar, "still has a sidecar"},
		{"none/native sidecar left", scenario.ModeNone, native, false, observedSidecar, "rollout restart"},
		{"none/still ambient", scenario.ModeNone, ambient, false, observedAmbient, "still captured by ambient"},
		{"none/pending", scenario.ModeNone, pending, false, ObservedAmbientPending, "redirection=pending"},

		{"sidecar/classic", scenario.ModeSidecar, classic, true, observedSidecar, ""},
		{"sidecar/native", scenario.ModeSidecar, native, true, observedSidecar, ""},
		{"sidecar/not injected", scenario.ModeSidecar, base(), false, observedNone, "no sidecar injected"},
		{"sidecar/in ambient namespace wins", scenario.ModeSidecar, sidecarInAmbientNS, true, observedSidecar, ""},
		{"sidecar/proxy not ready", scenario.ModeSidecar, proxyNotReady, false, observedSidecarNotReady, "istio-proxy is not ready on node node1"},
		{"sidecar/annotation without container", scenario.ModeSidecar, annotationOnly, false, observedSidecarNotReady, "no istio-proxy container"},
		{"sidecar/init container not native", scenario.ModeSidecar, proxyInitNotNative, false, observedSidecarNotReady, "no istio-proxy container"},
		{"sidecar/native status read from initContainerStatuses", scenario.ModeSidecar, nativeStatusInWrongList, false, observedSidecarNotReady, "not ready"},
		{"sidecar/ambient pod", scenario.ModeSidecar, ambient, false, observedAmbient, "no sidecar injected"},
		{"sidecar/terminating", scenario.ModeSidecar, terminating, false, observedTerminating, "terminating"},

		{"ambient/enabled", scenario.ModeAmbient, ambient, true, observedAmbient, ""},
		{"ambient/pending", scenario.ModeAmbient, pending, false, ObservedAmbientPending, "partially captured, traffic blocked; is ztunnel running on node node1?"},
		{"ambient/not captured", scenario.ModeAmbient, base(), false, observedNone, "is istio-cni running on node node1"},
		{"ambient/sidecar in ambient namespace", scenario.ModeAmbient, sidecarInAmbientNS, false, observedSidecar, "sidecar, which wins over ambient"},
		{"ambient/native sidecar left", scenario.ModeAmbient, native, false, observedSidecar, "re-created"},

		{"waypoint/enabled", scenario.ModeWaypoint, ambient, true, observedAmbient, ""},
		{"waypoint/pending", scenario.ModeWaypoint, pending, false, ObservedAmbientPending, "ztunnel"},
		{"waypoint/sidecar", scenario.ModeWaypoint, classic, false, observedSidecar, "wins over ambient"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := prove(tc.mode, tc.pod)
			// The verification cache holds slim pods (kube.SlimPod): the proof of a pod with a full spec, slimmed,
			// must be the proof of that pod.
			fat := fatten(tc.pod)
			slim, _ := kube.SlimPod(fat.DeepCopy())
			if a, b := prove(tc.mode, fat), prove(tc.mode, *slim.(*corev1.Pod)); !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a, p) {
				t.Errorf("proof differs on a slim pod:\nfull %+v\nslim %+v\nplain %+v", a, b, p)
			}
			if p.Proved != tc.proved || p.Observed != tc.observed {
				t.Errorf("prove = proved %v observed %q, want %v %q (problem %q)", p.Proved, p.Observed, tc.proved, tc.observed, p.Problem)
			}
			if tc.problem == "" && p.Problem != "" || !strings.Contains(p.Problem, tc.problem) {
				t.Errorf("problem %q, want %q", p.Problem, tc.problem)
			}
			if p.Proved && len(p.Evidence) == 0 && tc.mode != scenario.ModeNone {
				t.Error("a proof needs evidence")
			}
		})
	}
	if p := prove(scenario.ModeSidecar, native); !p.NativeSidecar || !p.Ready {
		t.Errorf("native sidecar not reported: %+v", p)
	}
	if p := prove(scenario.ModeSidecar, standIn); !p.StandIn || !p.Proved {
		t.Errorf("stand-in not reported: %+v", p)
	}
}

func TestProveWaypoint(t *testing.T) {
	t.Parallel()
	ref := WaypointRef{Namespace: "ns", Name: "waypoint"}
	gw := WaypointGateway(ref, testWaypoint, false, "r", "")
	progd := gw.DeepCopy()
	programmed(progd)
	available := readyDeployment("ns", "waypoint", nil)
	unavailable := available.DeepCopy()
	unavailable.Status.AvailableReplicas = 0
	unavailable.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}}
	rejected := gw.DeepCopy()
	rejected.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "InvalidParameters", Message: "bad"}}
	for _, tc := range []struct {
		name    string
		gw      *gwv1.Gateway
		dep     *appsv1.Deployment
		ready   bool
		problem string
	}{
		{"ready", progd, available, true, ""},
		{"missing", nil, nil, false, "Gateway not found"},
		{"no controller", gw, nil, false, "no controller serves GatewayClass istio-waypoint"},
		{"rejected", rejected, nil, false, "not accepted: InvalidParameters: bad"},
		// Programmed=True is set from the Service alone: a waypoint whose proxy cannot run is not ready.
		{"programmed but deployment unavailable", progd, unavailable, false, "not available"},
		{"programmed, no deployment yet", progd, nil, false, "has not created its Deployment"},
	} {
		p := proveWaypoint(ref, tc.gw, tc.dep)
		if p.Ready != tc.ready || !strings.Contains(p.Problem, tc.problem) {
			t.Errorf("%s: ready %v problem %q, want %v %q", tc.name, p.Ready, p.Problem, tc.ready, tc.problem)
		}
	}
}

func TestWaypointGateway(t *testing.T) {
	t.Parallel()
	shared := scenario.Waypoint{Scope: scenario.WaypointShared, Name: "wp", For: "all"}
	gws := WaypointGateways(testTarget, shared, "r", "")
	if len(gws) != 1 || gws[0].Namespace != "ns-a" {
		t.Fatalf("shared scope: one waypoint in the entry namespace, got %d", len(gws))
	}
	gw := gws[0]
	l := gw.Spec.Listeners[0]
	if gw.Spec.GatewayClassName != WaypointClass || l.Name != "mesh" || l.Port != 15008 || l.Protocol != "HBONE" {
		t.Errorf("gateway spec %+v", gw.Spec)
	}
	if l.AllowedRoutes == nil || *l.AllowedRoutes.Namespaces.From != gwv1.NamespacesFromAll {
		t.Error("a shared waypoint must admit all namespaces")
	}
	if gw.Labels[LabelWaypointFor] != "all" {
		t.Errorf("labels %v", gw.Labels)
	}
	lb := NamespaceLabels(scenario.ModeWaypoint, "ns-b", shared, "ns-a", "")
	if *lb[LabelUseWaypoint] != "wp" || *lb[LabelUseWaypointNamespace] != "ns-a" {
		t.Errorf("shared waypoint labels %v", lb)
	}
	if per := WaypointGateways(testTarget, testWaypoint, "r", ""); len(per) != 2 || per[0].Spec.Listeners[0].AllowedRoutes != nil {
		t.Errorf("per-namespace: %d gateways", len(per))
	}
}

// A revision-only install takes only Gateways labelled istio.io/rev=<revision> (istio/istio
// pilot/pkg/config/kube/gateway/deploymentcontroller.go @1.24.0, pkg/revisions/tag_watcher.go IsMine @1.30.3): the
// waypoint must carry it, or it is never Programmed. And istiod copies the Gateway's labels onto the Deployment, pods,
// Service and ServiceAccount it creates unless spec.infrastructure.labels is set (extractInfrastructureLabels, 1.24.0 to
// 1.31.0-rc.0): meshbench's run labels must not reach istiod-owned objects, so infrastructure.labels holds only
// waypointRunLabel.
func TestWaypointGatewayRevisionAndInfrastructureLabels(t *testing.T) {
	t.Parallel()
	ref := WaypointRef{Namespace: "ns-a", Name: "waypoint"}
	canary := WaypointGateway(ref, testWaypoint, false, "r1", "canary")
	if canary.Labels[LabelRevision] != "canary" {
		t.Errorf("revisioned waypoint labels %v: want istio.io/rev=canary", canary.Labels)
	}
	for _, rev := range []string{"", defaultRevision} {
		if gw := WaypointGateway(ref, testWaypoint, false, "r1", rev); gw.Labels[LabelRevision] != "" {
			t.Errorf("revision %q: a default install needs no istio.io/rev label: %v", rev, gw.Labels)
		}
	}
	infra := canary.Spec.Infrastructure
	if infra == nil || len(infra.Labels) != 1 || infra.Labels[waypointRunLabel] != "r1" {
		t.Fatalf("spec.infrastructure.labels %+v: want only %s=r1", infra, waypointRunLabel)
	}
	for k := range infra.Labels {
		if k == "app.kubernetes.io/managed-by" || k == "meshbench.dev/run" {
			t.Errorf("run label %s would be copied onto istiod-owned objects", k)
		}
	}
}

func TestNamespaceLabelsAndModeOfLabels(t *testing.T) {
	t.Parallel()
	for _, m := range scenario.AllModes {
		l := map[string]string{}
		for k, v := range NamespaceLabels(m, "ns", testWaypoint, "ns", "") {
			if v != nil {
				l[k] = *v
			}
		}
		if got := modeOfLabels(l); got != m {
			t.Errorf("ModeOfLabels(NamespaceLabels(%s)) = %s", m, got)
		}
	}
	rev := NamespaceLabels(scenario.ModeSidecar, "ns", testWaypoint, "ns", "1-31")
	if rev[LabelRevision] == nil || *rev[LabelRevision] != "1-31" || rev[labelInjection] != nil {
		t.Errorf("revisioned sidecar labels %v", rev)
	}
	if _, touched := NamespaceLabels(scenario.ModeSidecar, "ns", testWaypoint, "ns", "")[LabelRevision]; touched {
		t.Error("sidecar mode without a revision must leave istio.io/rev alone")
	}
}

// fatten gives every container of p what an injected pod's spec carries and no proof reads (kube.SlimPod drops
// it): command, args, env, mounts, probes, resources, and the pod's volumes.
func fatten(p corev1.Pod) corev1.Pod {
	p = *p.DeepCopy()
	fill := func(c *corev1.Container) {
		c.Command, c.Args = []string{"/usr/local/bin/pilot-agent"}, []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"}
		c.Env = []corev1.EnvVar{{Name: "PILOT_CERT_PROVIDER", Value: "istiod"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "istio-token", MountPath: "/var/run/secrets/tokens"}}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready"}}}
		c.StartupProbe = c.ReadinessProbe
		c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	}
	for i := range p.Spec.InitContainers {
		fill(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		fill(&p.Spec.Containers[i])
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
	return p
}
