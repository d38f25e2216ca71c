package preflight

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
)

func TestExistingChanges(t *testing.T) {
	t.Parallel()
	tg := target.Target{App: scenario.AppExisting, Namespaces: []string{"shop", "db"}}
	wp := scenario.Waypoint{Scope: scenario.WaypointPerNamespace, Name: "waypoint", For: "service"}
	web := target.WorkloadRef{Kind: target.KindDeployment, Namespace: "shop", Name: "web"}
	pg := target.WorkloadRef{Kind: target.KindStatefulSet, Namespace: "db", Name: "pg"}
	plainNS := []existingNamespace{{Name: "shop", Labels: map[string]string{"team": "a"}}, {Name: "db"}}
	for _, tc := range []struct {
		name          string
		switches      []scenario.Mode
		revision      string
		nss           []existingNamespace
		ws            []existingWorkload
		want          []string
		wantRestarted []string
	}{
		{
			name:     "un-meshed app into sidecar then ambient",
			switches: []scenario.Mode{scenario.ModeSidecar, scenario.ModeAmbient},
			nss:      plainNS,
			ws:       []existingWorkload{{Ref: web, Plain: 2}, {Ref: pg, Plain: 1}},
			want: []string{
				"mode sidecar: labels shop: istio-injection=enabled; db: istio-injection=enabled; restarts Deployment shop/web, StatefulSet db/pg",
				"mode ambient: labels shop: -istio-injection, istio.io/dataplane-mode=ambient; db: -istio-injection, istio.io/dataplane-mode=ambient; restarts Deployment shop/web, StatefulSet db/pg",
				"plan: 2 mode switches, 2 of them restart workloads (4 restarts in all: their pods are recreated)",
				"at the end (and by meshbench cleanup): the namespace labels are restored from namespace-labels.json, then the restart annotation of 2 workloads (Deployment shop/web, StatefulSet db/pg): they roll out once more, into the original mode",
			},
			wantRestarted: []string{"Deployment shop/web", "StatefulSet db/pg"},
		},
		{
			// Already in sidecar (revision canary): the first mode changes nothing; ambient needs no restart out of
			// none; a workload scaled to zero is never restarted.
			name:     "sidecar app, revision, none then ambient",
			switches: []scenario.Mode{scenario.ModeSidecar, scenario.ModeNone, scenario.ModeAmbient},
			revision: "canary",
			nss:      []existingNamespace{{Name: "shop", Labels: map[string]string{mesh.LabelRevision: "canary"}}, {Name: "db", Labels: map[string]string{mesh.LabelRevision: "canary"}}},
			ws:       []existingWorkload{{Ref: web, Sidecar: 1}, {Ref: pg}},
			want: []string{
				"mode sidecar: labels shop: (none); db: (none); restarts none (every pod already matches the mode)",
				"mode none: labels shop: -istio.io/rev; db: -istio.io/rev; restarts Deployment shop/web",
				"mode ambient: labels shop: istio.io/dataplane-mode=ambient; db: istio.io/dataplane-mode=ambient; restarts none (every pod already matches the mode)",
				"plan: 3 mode switches, 1 of them restart workloads (1 restarts in all: their pods are recreated)",
				"at the end (and by meshbench cleanup): the namespace labels are restored from namespace-labels.json, then the restart annotation of 1 workloads (Deployment shop/web): they roll out once more, into the original mode",
			},
			wantRestarted: []string{"Deployment shop/web"},
		},
		{
			// Interleaved: modes come back; each is listed once (its first switch), the totals count every switch.
			name:     "interleaved repetitions",
			switches: []scenario.Mode{scenario.ModeNone, scenario.ModeSidecar, scenario.ModeNone, scenario.ModeSidecar},
			nss:      plainNS[1:],
			ws:       []existingWorkload{{Ref: pg, Plain: 1, Sidecar: 1}},
			want: []string{
				"mode none: labels db: (none); restarts StatefulSet db/pg",
				"mode sidecar: labels db: istio-injection=enabled; restarts StatefulSet db/pg",
				"plan: 4 mode switches, 4 of them restart workloads (4 restarts in all: their pods are recreated)",
				"at the end (and by meshbench cleanup): the namespace labels are restored from namespace-labels.json, then the restart annotation of 1 workloads (StatefulSet db/pg): they roll out once more, into the original mode",
			},
			wantRestarted: []string{"StatefulSet db/pg"},
		},
		{
			name:     "ambient app into waypoint: labels only",
			switches: []scenario.Mode{scenario.ModeWaypoint},
			nss:      []existingNamespace{{Name: "shop", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}},
			ws:       []existingWorkload{{Ref: web, Plain: 3}},
			want: []string{
				"mode waypoint: labels shop: istio.io/use-waypoint=waypoint; restarts none (every pod already matches the mode)",
				"plan: 1 mode switches, 0 of them restart workloads (0 restarts in all: their pods are recreated)",
				"at the end (and by meshbench cleanup): the namespace labels are restored from namespace-labels.json",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			orig := map[string]string{}
			for k, v := range tc.nss[0].Labels {
				orig[k] = v
			}
			got, restarted := existingChanges(tc.switches, tg, wp, tc.revision, tc.nss, tc.ws)
			if !slices.Equal(got, tc.want) {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if !slices.Equal(restarted, tc.wantRestarted) {
				t.Errorf("restarted %v, want %v", restarted, tc.wantRestarted)
			}
			for k, v := range orig {
				if tc.nss[0].Labels[k] != v || len(tc.nss[0].Labels) != len(orig) {
					t.Errorf("existingChanges changed its input labels: %v, was %v", tc.nss[0].Labels, orig)
				}
			}
		})
	}
}

// A whole preflight of app existing through fake clients: an un-meshed app of one Deployment with a sidecar-less
// pod, modes none and sidecar. The check lists the change and WARNs about the restart; nothing is written to the
// cluster. The table is golden:
//
//	go test ./preflight -run TestRunExistingTable -update
func TestRunExistingTable(t *testing.T) {
	t.Parallel()
	one := int32(1)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"}}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	kc := fake.NewClientset(node,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "shop"}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: sel}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}},
	)
	kc.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	writes := 0
	kc.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			writes++
		}
		return false, nil, nil
	})
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: pf-existing}
spec:
  workload:
    app: existing
    existing: {namespaces: [shop]}
  load:
    targets: [{service: web}]
  modes: [none, sidecar]
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), &kube.Clients{Kube: kc}, s, Options{SkipPrometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, filepath.Join("testdata", "run-existing.txt"), []byte(rep.Table()))
	var ch *Check
	for i := range rep.Checks {
		if rep.Checks[i].Name == "existing app changes" {
			ch = &rep.Checks[i]
		}
		if rep.Checks[i].Name == "namespaces" {
			t.Errorf("app existing must not get the namespaces check (its namespaces are the user's): %+v", rep.Checks[i])
		}
	}
	if ch == nil || ch.Status != StatusWarn || !strings.Contains(ch.Detail, "mode sidecar: labels shop: istio-injection=enabled; restarts Deployment shop/web") {
		t.Errorf("existing app check %+v", ch)
	}
	if writes != 0 {
		t.Errorf("preflight wrote %d times to the cluster", writes)
	}
}
