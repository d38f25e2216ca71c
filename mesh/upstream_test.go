package mesh

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/upstreamfixture"
	"github.com/meshbench/meshbench/scenario"
)

// upstreamPods builds, for one Istio minor, the pods its charts render (testdata/upstream/istio.yaml, read from
// istio/istio at the tag the entry names): istiod (optionally of a revision), a ztunnel and an istio-cni pod per node,
// an injected app pod and an ambient app pod.
type upstreamPods struct {
	istiod, ztunnel, cni, injected, ambient corev1.Pod
	daemonSets                              []appsv1.DaemonSet
}

func buildUpstreamPods(t *testing.T, m upstreamfixture.Minor, rev string, native bool) upstreamPods {
	t.Helper()
	vars := upstreamfixture.Vars(m, rev)
	containers := func(names []string) []corev1.Container {
		var out []corev1.Container
		for _, n := range names {
			out = append(out, corev1.Container{Name: n, Image: "registry.example/istio/x:" + m.Tag})
		}
		return out
	}
	var p upstreamPods
	il := upstreamfixture.PodLabels(m.Istiod, vars, rev)
	name := m.Istiod.Deployment
	if rev != defaultRevision {
		name = strings.ReplaceAll(m.Istiod.DeploymentWithRevision, "$REV", rev)
	}
	p.istiod = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-5f7c", Namespace: m.Istiod.Namespace, Labels: il},
		Spec: corev1.PodSpec{Containers: containers(m.Istiod.Containers)}}
	p.istiod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PILOT_ENABLE_AMBIENT", Value: "true"}}
	for _, c := range []struct {
		comp upstreamfixture.Component
		pod  *corev1.Pod
	}{{m.Ztunnel, &p.ztunnel}, {m.IstioCNI, &p.cni}} {
		l := upstreamfixture.PodLabels(c.comp, vars, "")
		*c.pod = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: c.comp.DaemonSet + "-abcde", Namespace: c.comp.Namespace, Labels: l},
			Spec: corev1.PodSpec{NodeName: "node1", Containers: containers(c.comp.Containers)}}
		// The charts put these labels on the pod template; the DaemonSet's own labels are the Helm ones only.
		p.daemonSets = append(p.daemonSets, appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: c.comp.DaemonSet, Namespace: c.comp.Namespace, Labels: upstreamfixture.Expand(c.comp.CommonLabels, vars)},
			Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: c.pod.Spec}},
			Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberReady: 1},
		})
	}

	inj := m.Injected
	p.injected = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "app", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}
	maps.Copy(p.injected.Labels, upstreamfixture.Expand(inj.AddsPodLabels, vars))
	for _, a := range inj.AddsPodAnnotations {
		p.injected.Annotations[a] = "x"
	}
	maps.Copy(p.injected.Annotations, upstreamfixture.Expand(inj.PodAnnotationValues, vars))
	for _, ic := range inj.InitContainers {
		p.injected.Spec.InitContainers = append(p.injected.Spec.InitContainers, corev1.Container{Name: ic})
		p.injected.Status.InitContainerStatuses = append(p.injected.Status.InitContainerStatuses, corev1.ContainerStatus{Name: ic, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}})
	}
	always := corev1.ContainerRestartPolicyAlways
	ready := corev1.ContainerStatus{Name: inj.ProxyContainer, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if native {
		p.injected.Spec.InitContainers = append(p.injected.Spec.InitContainers, corev1.Container{Name: inj.ProxyContainer, RestartPolicy: &always})
		p.injected.Status.InitContainerStatuses = append(p.injected.Status.InitContainerStatuses, ready)
	} else {
		p.injected.Spec.Containers = append(p.injected.Spec.Containers, corev1.Container{Name: inj.ProxyContainer})
		p.injected.Status.ContainerStatuses = append(p.injected.Status.ContainerStatuses, ready)
	}
	p.injected.Status.ContainerStatuses = append(p.injected.Status.ContainerStatuses, corev1.ContainerStatus{Name: "web", Ready: true})
	p.injected.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	p.injected.Status.Phase = corev1.PodRunning

	p.ambient = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "app", Labels: map[string]string{"app": "web"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	return p
}

// TestUpstreamMinors runs detection and per-pod proof over the pods each Istio minor 1.24 ... 1.31 really renders.
func TestUpstreamMinors(t *testing.T) {
	t.Parallel()
	minors, err := upstreamfixture.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range minors {
		t.Run(m.Minor, func(t *testing.T) {
			t.Parallel()
			// The native-sidecar default per minor: off until 1.26, auto (native on kubelets >= 1.33) from 1.27.
			native := m.Injected.NativeSidecarDefault == "auto" || m.Injected.NativeSidecarDefault == "true"
			for _, rev := range []string{defaultRevision, "canary"} {
				p := buildUpstreamPods(t, m, rev, native)
				objs := []runtime.Object{&p.istiod, &p.ztunnel, &p.cni}
				for i := range p.daemonSets {
					objs = append(objs, &p.daemonSets[i])
				}
				info, err := Detect(context.Background(), &kube.Clients{Kube: fake.NewClientset(objs...)}, "")
				if err != nil {
					t.Fatal(err)
				}
				if !info.Installed || info.Revision != rev || len(info.Istiods) != 1 || info.Namespace != m.Istiod.Namespace || !info.PilotEnableAmbient {
					t.Errorf("revision %s: istiod not detected from pod labels %v: %+v", rev, p.istiod.Labels, info)
				}
				if info.Ztunnel == nil || info.Ztunnel.Name != m.Ztunnel.DaemonSet || info.IstioCNI == nil || info.IstioCNI.Name != m.IstioCNI.DaemonSet {
					t.Errorf("revision %s: node agents not found: ztunnel %+v, istio-cni %+v", rev, info.Ztunnel, info.IstioCNI)
				}
				if !info.AmbientCapable {
					t.Errorf("revision %s: ambient capability missing %v", rev, info.AmbientMissing)
				}
			}

			p := buildUpstreamPods(t, m, defaultRevision, native)
			sc := prove(scenario.ModeSidecar, p.injected)
			if !sc.Proved || sc.Observed != observedSidecar || sc.NativeSidecar != native {
				t.Errorf("injected pod (native %v) not proved in sidecar mode: %+v", native, sc)
			}
			if amb := prove(scenario.ModeAmbient, p.injected); amb.Proved {
				t.Errorf("an injected pod is never ambient (sidecar wins): %+v", amb)
			}
			for _, v := range m.Ambient.Values {
				a := p.ambient.DeepCopy()
				a.Annotations = map[string]string{m.Ambient.RedirectionAnnotation: v}
				got := prove(scenario.ModeAmbient, *a)
				want := v == RedirectionEnabled
				if got.Proved != want {
					t.Errorf("ambient pod annotated %s=%s: proved %v, want %v (%+v)", m.Ambient.RedirectionAnnotation, v, got.Proved, want, got)
				}
				if v == redirectionPending && got.Observed != ObservedAmbientPending {
					t.Errorf("pending: observed %s", got.Observed)
				}
			}
			if m.Ambient.RedirectionAnnotation != AnnotationRedirection {
				t.Errorf("redirection annotation %q, meshbench reads %q", m.Ambient.RedirectionAnnotation, AnnotationRedirection)
			}

			// The waypoint pod: selected by gateway-name in every minor (gateway-class-name only from 1.28).
			wl := upstreamfixture.Expand(m.Waypoint.PodLabels, map[string]string{"GATEWAY": "waypoint"})
			if wl[GatewayNameLabel] != "waypoint" {
				t.Errorf("waypoint pods carry %v: no %s", wl, GatewayNameLabel)
			}
			if !slices.Equal(m.Waypoint.Containers, []string{ProxyContainer}) {
				t.Errorf("waypoint containers %v", m.Waypoint.Containers)
			}
			_, hasClass := wl["gateway.networking.k8s.io/gateway-class-name"]
			if minorNum(m.Minor) < 28 && hasClass {
				t.Errorf("%s: fixture says waypoint pods carry gateway-class-name before 1.28", m.Minor)
			}

			if got, want := istiodMinimumsFor(m.Tag), m.GatewayAPI.MinimumBundleVersion; !maps.Equal(got, want) {
				t.Errorf("istiod's minimum CRD versions at %s: meshbench has %v, upstream %v", m.Tag, got, want)
			}
		})
	}
}

func minorNum(v string) int {
	_, minor, _ := parseMajorMinor(v)
	return minor
}

// Issue 29 section 1 item 2: istioctl's Kubernetes minimum changes between patch releases (1.25.1 raised it to 1.29,
// 1.28.2 to 1.30, 1.30.0 to 1.32). Every release tag in testdata/upstream/istio-patches.yaml is checked, and the
// CRD minimums with it (they change per minor only).
func TestPatchLevelFactsMatchUpstream(t *testing.T) {
	t.Parallel()
	tags, err := upstreamfixture.LoadPatches()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tags {
		if got := fmt.Sprintf("1.%d", MinKubernetes(p.Tag)); got != p.MinKubernetes {
			t.Errorf("Istio %s (commit %s): MinKubernetes = %s, istioctl's MinK8SVersion says %s", p.Tag, p.Commit[:10], got, p.MinKubernetes)
		}
		if got := istiodMinimumsFor(p.Tag); !maps.Equal(got, p.MinimumBundleVersion) {
			t.Errorf("Istio %s: CRD minimums %v, upstream %v", p.Tag, got, p.MinimumBundleVersion)
		}
	}
}

// Issue 29 section 1 item 4: Istio 1.27.9, 1.28.6 ... 1.28.10 and 1.29.2 ... 1.29.6 ignore a TLSRoute CRD above a
// maximum bundle-version (pkg/kube/kclient/crdwatcher.go MaximumCRDVersions, inclusive): v1.4.0 at 1.27.9, 1.28.6
// and 1.29.2, v1.4.1 from 1.28.7 and 1.29.3. Every release tag in testdata/upstream/istio-patches.yaml is checked.
func TestCRDMaximumsMatchUpstream(t *testing.T) {
	t.Parallel()
	tags, err := upstreamfixture.LoadPatches()
	if err != nil {
		t.Fatal(err)
	}
	withMax := 0
	for _, p := range tags {
		got := istiodMaximumsFor(p.Tag)
		if len(got) > 0 || len(p.MaximumBundleVersion) > 0 {
			withMax++
			if !maps.Equal(got, p.MaximumBundleVersion) {
				t.Errorf("Istio %s (commit %s): CRD maximums %v, upstream %v", p.Tag, p.Commit[:10], got, p.MaximumBundleVersion)
			}
		}
		// What detection judges: each bound as istiod applies it.
		b := IstiodCRDBounds(p.Tag)
		for crd, maxV := range p.MaximumBundleVersion {
			if why := istiodIgnoresCRD(maxV, b[crd]); why != "" {
				t.Errorf("Istio %s ignores %s at its maximum %s: %s", p.Tag, crd, maxV, why)
			}
			if why := istiodIgnoresCRD("v1.5.0", b[crd]); !strings.Contains(why, "> "+maxV) {
				t.Errorf("Istio %s: %s v1.5.0 above the maximum %s: %q", p.Tag, crd, maxV, why)
			}
			if why := istiodIgnoresCRD("", b[crd]); why == "" {
				t.Errorf("Istio %s accepts %s without a bundle-version, upstream's maximumVersionFilter ignores it", p.Tag, crd)
			}
		}
	}
	if withMax != 11 {
		t.Errorf("%d tags with a maximum, want 11 (1.27.9, 1.28.6-1.28.10, 1.29.2-1.29.6)", withMax)
	}
}
