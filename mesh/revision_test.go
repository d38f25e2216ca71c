package mesh

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/upstreamfixture"
	"github.com/meshbench/meshbench/scenario"
)

// Webhook names and labels as istio/istio renders them (manifests/charts/istio-control/istio-discovery/templates/
// mutatingwebhook.yaml and revision-tags.yaml @1.24.0; revision-tags-mwc.yaml @1.28.0..1.31.0-rc.0): a non-revisioned
// install's MWC istio-sidecar-injector (istio.io/rev=default) and a tag "default" MWC carry the webhook
// namespace.sidecar-injector.istio.io (istio-injection=enabled); a revisioned install's MWC has only the rev.* ones.
func injectorMWC(name, rev, tag string, defaultWebhook bool) admissionregistrationv1.MutatingWebhookConfiguration {
	l := map[string]string{LabelRevision: rev, "app": "sidecar-injector"}
	if tag != "" {
		l[labelIstioTag] = tag
	}
	whs := []admissionregistrationv1.MutatingWebhook{{Name: "rev.namespace.sidecar-injector.istio.io"}, {Name: "rev.object.sidecar-injector.istio.io"}}
	if defaultWebhook {
		whs = append(whs, admissionregistrationv1.MutatingWebhook{Name: "namespace.sidecar-injector.istio.io"}, admissionregistrationv1.MutatingWebhook{Name: "object.sidecar-injector.istio.io"})
	}
	return admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Webhooks: whs}
}

// istiodPod has the labels of istio-discovery templates/deployment.yaml @1.24.0..1.31.0-rc.0: app=istiod and
// istio.io/rev=<revision|default>; istio=pilot without a revision, istio=istiod with one.
func istiodPod(ns, name, rev, image string) *corev1.Pod {
	l := map[string]string{"app": "istiod", LabelRevision: rev, "istio": "pilot"}
	if rev != defaultRevision {
		l["istio"] = "istiod"
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: image}}}}
}

func TestResolveRevision(t *testing.T) {
	t.Parallel()
	one := ControlPlanes{Revisions: []string{"canary"}}
	two := ControlPlanes{Revisions: []string{"1-29", "1-30"}, Tags: map[string]string{"stable": "1-29"}}
	twoDefault := ControlPlanes{Revisions: []string{"1-29", "1-30"}, Tags: map[string]string{"default": "1-30"}, DefaultInjector: "1-30"}
	for _, tc := range []struct {
		name, want string
		cp         ControlPlanes
		rev, src   string
		err        string
	}{
		{name: "no istio", cp: ControlPlanes{}},
		{name: "no istio but asked", want: "canary", cp: ControlPlanes{}, err: "no istiod is installed"},
		{name: "only canary", cp: one, rev: "canary", src: "the only control plane"},
		{name: "only default", cp: ControlPlanes{Revisions: []string{defaultRevision}, DefaultInjector: defaultRevision}, rev: defaultRevision, src: "the only control plane"},
		{name: "two without default refuses to guess", cp: two, err: "2 Istio control planes are installed (revisions 1-29, 1-30; tags stable->1-29) and none is the default: set spec.istio.revision"},
		{name: "two with default tag", cp: twoDefault, rev: "1-30", src: "the default injector (istio-injection=enabled)"},
		{name: "scenario names one", want: "1-29", cp: two, rev: "1-29", src: "spec.istio.revision"},
		{name: "scenario names a tag", want: "stable", cp: two, rev: "1-29", src: "spec.istio.revision (tag stable)"},
		{name: "scenario names a missing one", want: "1-31", cp: two, err: "installed istiod revisions are 1-29, 1-30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := resolveRevision(tc.want, tc.cp)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.Revision != tc.rev || got.Source != tc.src {
				t.Fatalf("got %+v, %v; want %s (%s)", got, err, tc.rev, tc.src)
			}
		})
	}
}

func TestControlPlanesFrom(t *testing.T) {
	t.Parallel()
	pods := []corev1.Pod{*istiodPod("istio-system", "istiod-canary-1", "canary", ""), *istiodPod("istio-system", "istiod-canary-2", "canary", ""),
		*istiodPod("istio-system", "istiod-1", defaultRevision, "")}
	gone := istiodPod("istio-system", "istiod-old", "old", "")
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pods = append(pods, *gone)
	cp := controlPlanesFrom(pods, []admissionregistrationv1.MutatingWebhookConfiguration{
		injectorMWC("istio-sidecar-injector-canary", "canary", "", false),
		injectorMWC("istio-revision-tag-prod", "canary", "prod", false),
	})
	if strings.Join(cp.Revisions, ",") != "canary,default" || cp.Tags["prod"] != "canary" || cp.DefaultInjector != "" {
		t.Errorf("control planes %+v", cp)
	}
	cp = controlPlanesFrom(pods, []admissionregistrationv1.MutatingWebhookConfiguration{injectorMWC("istio-revision-tag-default", "canary", "default", true)})
	if cp.DefaultInjector != "canary" {
		t.Errorf("a tag default names the default injector's revision: %+v", cp)
	}
}

// With two control planes, Detect must take every fact (version, ambient setting, mesh config, injector) from the
// chosen revision only.
func TestDetectDoesNotMixRevisions(t *testing.T) {
	t.Parallel()
	a := istiodPod("istio-system", "istiod-1-29-x", "1-29", "docker.io/istio/pilot:1.29.2")
	b := istiodPod("istio-system", "istiod-1-30-y", "1-30", "docker.io/istio/pilot:1.30.1")
	b.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PILOT_ENABLE_AMBIENT", Value: "true"}}
	objs := []runtime.Object{a, b,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-1-30", Namespace: "istio-system"}, Data: map[string]string{"mesh": "rootNamespace: mesh-root\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-1-29", Namespace: "istio-system"}, Data: map[string]string{"mesh": "rootNamespace: wrong\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-1-30", Namespace: "istio-system"},
			Data: map[string]string{"values": `{"global":{"hub":"docker.io/istio","tag":"1.30.1","proxy":{"image":"proxyv2"}}}`}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-1-29", Namespace: "istio-system"},
			Data: map[string]string{"values": `{"global":{"hub":"docker.io/istio","tag":"1.29.2","proxy":{"image":"proxyv2"}}}`}},
	}
	for _, wh := range []admissionregistrationv1.MutatingWebhookConfiguration{injectorMWC("istio-sidecar-injector-1-29", "1-29", "", false), injectorMWC("istio-sidecar-injector-1-30", "1-30", "", false)} {
		objs = append(objs, &wh)
	}
	c := &kube.Clients{Kube: fake.NewClientset(objs...)}

	info, err := Detect(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	if info.RevisionError == "" || info.Version != "" || len(info.Istiods) != 0 {
		t.Errorf("two control planes and no default: detection must refuse to choose and report no facts: %+v", info)
	}

	info, err = Detect(context.Background(), c, "1-30")
	if err != nil {
		t.Fatal(err)
	}
	if info.Revision != "1-30" || info.Version != "1.30.1" || !info.PilotEnableAmbient || info.RootNamespace != "mesh-root" ||
		info.ProxyImage != "docker.io/istio/proxyv2:1.30.1" || len(info.Istiods) != 1 || info.Istiods[0].Pod != "istiod-1-30-y" {
		t.Errorf("facts of revision 1-30 only: %+v", info)
	}
	if f := info.Facts("ambient"); f.Revision != "1-30" || f.RevisionSource != "spec.istio.revision" || strings.Join(f.Revisions, ",") != "1-29,1-30" {
		t.Errorf("run.json facts %+v", f)
	}
}

// Labels for a revision-only install (istio/istio templates/mutatingwebhook.yaml @1.24.0..1.31.0-rc.0): sidecar mode
// needs istio.io/rev=<rev> and NO istio-injection (the canary webhooks require istio-injection DoesNotExist); ambient and
// waypoint carry no istio.io/rev (istio-cni and ztunnel ignore revisions; the label would make the revision inject
// sidecars into new pods, istio/istio#60313).
func TestNamespaceLabelsForRevision(t *testing.T) {
	t.Parallel()
	sc := NamespaceLabels(scenario.ModeSidecar, "ns", testWaypoint, "ns", "canary")
	if v := sc[LabelRevision]; v == nil || *v != "canary" {
		t.Errorf("sidecar: istio.io/rev=canary wanted: %v", sc)
	}
	if v, ok := sc[labelInjection]; !ok || v != nil {
		t.Errorf("sidecar with a revision must remove istio-injection: %v", sc)
	}
	for _, m := range []scenario.Mode{scenario.ModeAmbient, scenario.ModeWaypoint, scenario.ModeNone} {
		if v, ok := NamespaceLabels(m, "ns", testWaypoint, "ns", "canary")[LabelRevision]; !ok || v != nil {
			t.Errorf("%s must remove istio.io/rev", m)
		}
	}
}

func pa(ns, name string, age time.Duration, mode securityv1beta1.PeerAuthentication_MutualTLS_Mode, selector map[string]string) *securityv1.PeerAuthentication {
	p := &securityv1.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		CreationTimestamp: metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age)}}}
	p.Spec.Mtls = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: mode}
	if selector != nil {
		p.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: selector}
	}
	return p
}

// Precedence as istio/istio composes it (pilot/pkg/security/authn/policy_applier.go ComposePeerAuthentication, and
// pilot/pkg/serviceregistry/kube/controller/ambient convertedSelectorPeerAuthentications, 1.24.0..1.31.0-rc.0).
func TestEffectiveMTLS(t *testing.T) {
	t.Parallel()
	const (
		strict     = securityv1beta1.PeerAuthentication_MutualTLS_STRICT
		permissive = securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE
		unset      = securityv1beta1.PeerAuthentication_MutualTLS_UNSET
		disable    = securityv1beta1.PeerAuthentication_MutualTLS_DISABLE
	)
	for _, tc := range []struct {
		name string
		pas  []*securityv1.PeerAuthentication
		want string
	}{
		{"none: permissive", nil, "PERMISSIVE (no PeerAuthentication (Istio's default))"},
		{"mesh-wide strict", []*securityv1.PeerAuthentication{pa("istio-system", "default", 0, strict, nil)}, "STRICT (PeerAuthentication istio-system/default (mesh-wide))"},
		{"namespace over mesh", []*securityv1.PeerAuthentication{pa("istio-system", "default", 0, strict, nil), pa("app", "relax", 0, permissive, nil)},
			"PERMISSIVE (PeerAuthentication app/relax (namespace-wide))"},
		{"unset inherits", []*securityv1.PeerAuthentication{pa("istio-system", "default", 0, strict, nil), pa("app", "empty", 0, unset, nil)},
			"STRICT (PeerAuthentication istio-system/default (mesh-wide))"},
		{"oldest wins", []*securityv1.PeerAuthentication{pa("app", "young", time.Hour, disable, nil), pa("app", "old", 2*time.Hour, strict, nil)},
			"STRICT (PeerAuthentication app/old (namespace-wide))"},
		{"root selector ignored, workload counted", []*securityv1.PeerAuthentication{pa("istio-system", "sel", 0, strict, map[string]string{"a": "b"}),
			pa("app", "w", 0, strict, map[string]string{"app": "x"})}, "PERMISSIVE (no PeerAuthentication (Istio's default); 1 workload-level PeerAuthentication(s) not evaluated)"},
		{"other namespace irrelevant", []*securityv1.PeerAuthentication{pa("other", "default", 0, strict, nil)}, "PERMISSIVE (no PeerAuthentication (Istio's default))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := effectiveMTLS(tc.pas, "istio-system", "app", MTLSView{Revision: defaultRevision, Version: "1.30.1"}).String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if got := SummarizeMTLS([]MTLS{{Namespace: "a", Mode: mtlsStrict, Source: "x"}, {Namespace: "b", Mode: mtlsPermissive, Source: "y"}}); got != "a: STRICT (x); b: PERMISSIVE (y)" {
		t.Errorf("summary %q", got)
	}
}

// TestDetectMTLSListsOnce: the modes of many namespaces come from one cluster-wide list of PeerAuthentications
// (before: one list per namespace, 61 requests at 60 namespaces after every switch); where that list is forbidden
// (a namespaced Role), the root namespace and each namespace are listed, with the same answer.
func TestDetectMTLSListsOnce(t *testing.T) {
	t.Parallel()
	const strict, permissive = securityv1beta1.PeerAuthentication_MutualTLS_STRICT, securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE
	objs := []runtime.Object{pa("istio-system", "default", 0, strict, nil), pa("ns-a", "relax", 0, permissive, nil), pa("elsewhere", "x", 0, permissive, nil)}
	want := "ns-a: PERMISSIVE (PeerAuthentication ns-a/relax (namespace-wide)); ns-b: STRICT (PeerAuthentication istio-system/default (mesh-wide))"
	for _, forbid := range []bool{false, true} {
		ic := istiofake.NewSimpleClientset(objs...)
		if forbid {
			ic.PrependReactor("list", "peerauthentications", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == metav1.NamespaceAll {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "security.istio.io", Resource: "peerauthentications"}, "", errors.New("namespaced Role"))
				}
				return false, nil, nil
			})
		}
		ms, err := DetectMTLS(context.Background(), ic, "istio-system", []string{"ns-a", "ns-b"}, MTLSView{Revision: defaultRevision, Version: "1.30.1"})
		if err != nil {
			t.Fatal(err)
		}
		if got := SummarizeMTLS(ms); got != want {
			t.Errorf("forbidden %v: got  %s\nwant %s", forbid, got, want)
		}
		lists := 0
		for _, a := range ic.Actions() {
			if a.GetVerb() == "list" {
				lists++
			}
		}
		if wantLists := map[bool]int{false: 1, true: 4}[forbid]; lists != wantLists {
			t.Errorf("forbidden %v: %d lists, want %d", forbid, lists, wantLists)
		}
	}
}

// withRev labels a PeerAuthentication istio.io/rev=rev.
func withRev(p *securityv1.PeerAuthentication, rev string) *securityv1.PeerAuthentication {
	p.Labels = map[string]string{LabelRevision: rev}
	return p
}

// Issue 29 section 1 item 6. In the ambient modes ztunnel applies only STRICT or not: the ambient index keeps
// isEffectiveStrictPolicy (istio/istio pilot/pkg/serviceregistry/ambient/authorization.go
// convertedSelectorPeerAuthentications at 1.31.0-rc.0, kube/controller/ambient/authorization.go at 1.24.0), so a
// DISABLE policy is PERMISSIVE there (meshed traffic is HBONE, mutual TLS between the node proxies) and was recorded
// as DISABLE, read as "no mTLS". And istiod reads only the PeerAuthentications without istio.io/rev or with its own
// revision (pkg/config/model.go LabelsInRevision via crdclient inRevision; the ambient index's configFilter from
// 1.25.4, 1.26.3 and 1.27.0): another revision's STRICT policy decided the recorded mode before.
func TestEffectiveMTLSAmbientAndRevisions(t *testing.T) {
	t.Parallel()
	const (
		strict  = securityv1beta1.PeerAuthentication_MutualTLS_STRICT
		disable = securityv1beta1.PeerAuthentication_MutualTLS_DISABLE
	)
	sidecar := MTLSView{Revision: "1-30", Version: "1.30.1"}
	ambient := MTLSView{Revision: "1-30", Version: "1.30.1", Ambient: true}
	for _, tc := range []struct {
		name string
		pas  []*securityv1.PeerAuthentication
		v    MTLSView
		want string
	}{
		{"sidecar disable", []*securityv1.PeerAuthentication{pa("app", "off", 0, disable, nil)}, sidecar,
			"DISABLE (PeerAuthentication app/off (namespace-wide))"},
		{"ambient disable is not strict", []*securityv1.PeerAuthentication{pa("app", "off", 0, disable, nil)}, ambient,
			"PERMISSIVE (PeerAuthentication app/off (namespace-wide) says DISABLE; ztunnel applies only STRICT or not: HBONE between the node proxies is mutual TLS, plaintext is accepted)"},
		{"ambient strict", []*securityv1.PeerAuthentication{pa("istio-system", "default", 0, strict, nil)}, ambient,
			"STRICT (PeerAuthentication istio-system/default (mesh-wide))"},
		{"another revision ignored", []*securityv1.PeerAuthentication{withRev(pa("istio-system", "canary", 0, strict, nil), "1-31"),
			withRev(pa("app", "mine", 0, disable, nil), "1-30")}, sidecar,
			"DISABLE (PeerAuthentication app/mine (namespace-wide); 1 PeerAuthentication(s) of another istio.io/rev ignored)"},
		{"a tag name is another revision", []*securityv1.PeerAuthentication{withRev(pa("app", "tagged", 0, strict, nil), "prod")}, sidecar,
			"PERMISSIVE (no PeerAuthentication (Istio's default); 1 PeerAuthentication(s) of another istio.io/rev ignored)"},
		{"default revision", []*securityv1.PeerAuthentication{withRev(pa("app", "canary", 0, strict, nil), "1-31")}, MTLSView{Revision: defaultRevision, Version: "1.29.0"},
			"PERMISSIVE (no PeerAuthentication (Istio's default); 1 PeerAuthentication(s) of another istio.io/rev ignored)"},
		{"ambient 1.26.2 reads every revision", []*securityv1.PeerAuthentication{withRev(pa("app", "canary", 0, strict, nil), "1-31")},
			MTLSView{Revision: "1-26", Version: "1.26.2", Ambient: true}, "STRICT (PeerAuthentication app/canary (namespace-wide))"},
		{"ambient 1.26.3 filters", []*securityv1.PeerAuthentication{withRev(pa("app", "canary", 0, strict, nil), "1-31")},
			MTLSView{Revision: "1-26", Version: "1.26.3", Ambient: true},
			"PERMISSIVE (no PeerAuthentication (Istio's default); 1 PeerAuthentication(s) of another istio.io/rev ignored)"},
		{"sidecar 1.24 filters", []*securityv1.PeerAuthentication{withRev(pa("app", "canary", 0, strict, nil), "1-31")},
			MTLSView{Revision: "1-24", Version: "1.24.3"},
			"PERMISSIVE (no PeerAuthentication (Istio's default); 1 PeerAuthentication(s) of another istio.io/rev ignored)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := effectiveMTLS(tc.pas, "istio-system", "app", tc.v).String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// The ambient index's revision filter per release tag, against testdata/upstream/istio-patches.yaml.
func TestAmbientRevisionFilterMatchesUpstream(t *testing.T) {
	t.Parallel()
	tags, err := upstreamfixture.LoadPatches()
	if err != nil {
		t.Fatal(err)
	}
	other := withRev(pa("app", "canary", 0, securityv1beta1.PeerAuthentication_MutualTLS_STRICT, nil), "other")
	for _, p := range tags {
		counted := MTLSView{Revision: "mine", Version: p.Tag, Ambient: true}.countsPeerAuthentication(other)
		if counted == p.AmbientPeerAuthenticationsByRevision {
			t.Errorf("Istio %s: ambient counts another revision's PeerAuthentication %v, upstream filters by revision %v", p.Tag, counted, p.AmbientPeerAuthenticationsByRevision)
		}
		if (MTLSView{Revision: "mine", Version: p.Tag}).countsPeerAuthentication(other) {
			t.Errorf("Istio %s: sidecars count another revision's PeerAuthentication; crdclient filters it", p.Tag)
		}
	}
}
