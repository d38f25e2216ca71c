package workloads

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

func existingCluster() []runtime.Object {
	one := int32(2)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	return []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: sel}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "db"}, Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "db"}},
	}
}

func existingScenario(ns []string, refs []string, lt scenario.LoadTarget) *scenario.Scenario {
	s := &scenario.Scenario{}
	s.Spec.Workload.App = scenario.AppExisting
	s.Spec.Workload.Existing = &scenario.Existing{Namespaces: ns, Workloads: refs}
	s.Spec.Workload.Topologies = []scenario.Topology{{Name: "single", Kind: scenario.TopologySingle}}
	s.Spec.Load.Targets = []scenario.LoadTarget{lt}
	return s
}

func TestDiscover(t *testing.T) {
	web := scenario.LoadTarget{Service: "web", Port: 8080, Path: "/"}
	for _, tc := range []struct {
		name      string
		ns, refs  []string
		lt        scenario.LoadTarget
		want      []string // WorkloadRef.String()
		wantErr   string
		wantEntry string
	}{
		{name: "all workloads", ns: []string{"shop", "db"}, lt: web,
			want: []string{"Deployment shop/cart", "Deployment shop/web", "StatefulSet db/pg"}, wantEntry: "http://web.shop.svc.cluster.local:8080/"},
		{name: "refs of every form", ns: []string{"shop", "db"}, refs: []string{"web", "StatefulSet/pg", "shop/Deployment/cart"}, lt: web,
			want: []string{"Deployment shop/cart", "Deployment shop/web", "StatefulSet db/pg"}, wantEntry: "http://web.shop.svc.cluster.local:8080/"},
		{name: "narrowed", ns: []string{"shop", "db"}, refs: []string{"Deployment/web"}, lt: web,
			want: []string{"Deployment shop/web"}, wantEntry: "http://web.shop.svc.cluster.local:8080/"},
		{name: "pinned namespace", ns: []string{"shop", "db"}, lt: scenario.LoadTarget{Service: "pg", Namespace: "db", Port: 5432, Path: "/"},
			want: []string{"Deployment shop/cart", "Deployment shop/web", "StatefulSet db/pg"}, wantEntry: "http://pg.db.svc.cluster.local:5432/"},
		{name: "url target", ns: []string{"shop"}, lt: scenario.LoadTarget{URL: "http://example:9/x"},
			want: []string{"Deployment shop/cart", "Deployment shop/web"}, wantEntry: "http://example:9/x"},
		{name: "ref matches nothing", ns: []string{"shop"}, refs: []string{"Deployment/nope"}, lt: web, wantErr: `"Deployment/nope"`},
		{name: "wrong namespace in ref", ns: []string{"shop", "db"}, refs: []string{"db/Deployment/web"}, lt: web, wantErr: `"db/Deployment/web"`},
		{name: "missing namespace", ns: []string{"shop", "gone"}, lt: web, wantErr: `"gone"`},
		{name: "service nowhere", ns: []string{"db"}, lt: web, wantErr: `service "web"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := fake.NewClientset(existingCluster()...)
			got, err := Discover(context.Background(), kc, existingScenario(tc.ns, tc.refs, tc.lt))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, w := range got.Workloads {
				names = append(names, w.String())
				if w.Selector == "" {
					t.Errorf("%s: no selector", w)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("workloads = %v, want %v", names, tc.want)
			}
			if got.EntryURL != tc.wantEntry || got.App != scenario.AppExisting || got.Topology != "single" || got.AppSelector != ExistingAppSelector {
				t.Errorf("target = %+v", got)
			}
		})
	}
	// The selector and replicas come from the spec.
	got, err := Discover(context.Background(), fake.NewClientset(existingCluster()...), existingScenario([]string{"shop"}, []string{"web"}, web))
	if err != nil {
		t.Fatal(err)
	}
	if w := got.Workloads[0]; w.Selector != "app=web" || w.Replicas != 2 {
		t.Errorf("web = %+v, want selector app=web, 2 replicas", w)
	}
}

func TestEnsureExistingAppliesNothing(t *testing.T) {
	s := existingScenario([]string{"shop"}, nil, scenario.LoadTarget{Service: "web", Port: 80, Path: "/"})
	kc := fake.NewClientset(existingCluster()...)
	d := &Deployer{Clients: &kube.Clients{Kube: kc}, RunID: "r1"}
	if _, err := d.Ensure(context.Background(), s, s.Spec.Workload.Topologies[0]); !errors.Is(err, ErrExistingNeedsFlag) {
		t.Fatalf("without AllowExisting: err = %v, want ErrExistingNeedsFlag", err)
	}
	d.AllowExisting = true
	tg, err := d.Ensure(context.Background(), s, s.Spec.Workload.Topologies[0])
	if err != nil || len(tg.Workloads) != 2 {
		t.Fatalf("Ensure = %+v, %v", tg, err)
	}
	if err := d.Teardown(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("existing app: unexpected %s %s", v, a.GetResource().Resource)
		}
	}
}

// TestObjectsExisting: app existing is a case of the builder: meshbench applies none of its objects (so no image is
// wanted for it), and the target holds the scenario's namespaces and the selector of the user's pods.
func TestObjectsExisting(t *testing.T) {
	t.Parallel()
	s := existingScenario([]string{"shop", "db"}, nil, scenario.LoadTarget{Service: "web", Port: 8080, Path: "/"})
	objs, tg, err := new(Renderer).Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 0 || strings.Join(tg.Namespaces, ",") != "shop,db" || tg.AppSelector != ExistingAppSelector || tg.App != scenario.AppExisting {
		t.Errorf("objects %d, target %+v", len(objs), tg)
	}
	s.Spec.Workload.Existing = nil
	if _, _, err := new(Renderer).Objects(s, s.Spec.Workload.Topologies[0], "r1"); err == nil || !strings.Contains(err.Error(), "spec.workload.existing.namespaces") {
		t.Errorf("no namespaces: %v", err)
	}
}
