package preflight

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/schedule"
)

// allowAllBut answers SelfSubjectAccessReviews: allowed unless deny says no.
func allowAllBut(kc *fake.Clientset, deny func(*authorizationv1.ResourceAttributes) bool) {
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rev := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		rev.Status.Allowed = !deny(rev.Spec.ResourceAttributes)
		return true, rev, nil
	})
}

func TestPermissionChecks(t *testing.T) {
	t.Parallel()
	kc := fake.NewClientset()
	allowAllBut(kc, func(ra *authorizationv1.ResourceAttributes) bool {
		return ra.Resource == "namespaces" && ra.Verb == "delete" || ra.Subresource == "exec"
	})
	chs := permissionChecks(context.Background(), &kube.Clients{Kube: kc}, []schedule.Permission{
		{Resource: "pods", Verbs: []string{"get", "list"}, Why: "verify pods"},
		{Resource: "pods", Subresource: "exec", Verbs: []string{"create"}, Why: "drive load clients"},
		{Resource: "namespaces", Verbs: []string{"create", "delete"}, Why: "create and delete app namespaces"},
	})
	if len(chs) != 2 {
		t.Fatalf("want 2 failing permissions, got %+v", chs)
	}
	if chs[0].Name != "permission namespaces" || chs[0].Status != StatusFail || !strings.Contains(chs[0].Detail, "denied: delete (needed to create and delete app namespaces)") {
		t.Errorf("%+v", chs[0])
	}
	if chs[1].Name != "permission pods/exec" || !strings.Contains(chs[1].Fix, "grant create on pods/exec") {
		t.Errorf("%+v", chs[1])
	}
	if chs := permissionChecks(context.Background(), &kube.Clients{Kube: kc}, nil); len(chs) != 1 || chs[0].Status != StatusWarn {
		t.Errorf("no list: %+v", chs)
	}
}

// Issue 29: a user (or the scheduled ServiceAccount of an older release) with get but not create on services/proxy
// is refused every Prometheus query through the API server (client_golang POSTs it) and was told OK. Preflight
// checks the verbs the run's requests need (orchestrate's TestPrometheusThroughTheAPIServerIsPermitted derives them
// from the requests themselves).
func TestPermissionChecksServicesProxyCreate(t *testing.T) {
	t.Parallel()
	kc := fake.NewClientset()
	allowAllBut(kc, func(ra *authorizationv1.ResourceAttributes) bool {
		return ra.Resource == "services" && ra.Subresource == "proxy" && ra.Verb != "get"
	})
	chs := permissionChecks(context.Background(), &kube.Clients{Kube: kc}, schedule.RequiredPermissions)
	if len(chs) != 1 || chs[0].Name != "permission services/proxy" || chs[0].Status != StatusFail || !strings.Contains(chs[0].Detail, "denied: create") {
		t.Fatalf("get-only services/proxy: %+v, want one FAIL naming create on services/proxy", chs)
	}
}

// A whole preflight through fake clients: two Ready nodes, no Istio, free namespaces, a Prometheus stand-in with
// cAdvisor series (reached through collectors/prom, the run's client) and the run's whole permission list, all
// granted but one. The table is golden (the CLI prints it; e2e tests match its lines); exit 2 follows Failed.
//
//	go test ./preflight -run TestRunTable -update
func TestRunTable(t *testing.T) {
	t.Parallel()
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"}}}
	}
	kc := fake.NewClientset(node("node-b"), node("node-a"))
	kc.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	allowAllBut(kc, func(ra *authorizationv1.ResourceAttributes) bool { return ra.Resource == "events" })
	promSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"namespace":"a","pod":"p","container":"c"},"value":[1,"1"]},{"metric":{"namespace":"a","pod":"q","container":"c"},"value":[1,"1"]}]}}`))
	}))
	t.Cleanup(promSrv.Close)

	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: pf}
spec:
  workload: {app: fortio-chain, namespacePrefix: pf-}
  modes: [none]
  prometheus: {url: ` + promSrv.URL + `}
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), &kube.Clients{Kube: kc}, s, Options{Permissions: schedule.RequiredPermissions})
	if err != nil {
		t.Fatal(err)
	}
	table := strings.ReplaceAll(rep.Table(), promSrv.URL, "http://PROMETHEUS")
	goldenfile.Check(t, filepath.Join("testdata", "run-none.txt"), []byte(table))
	if !rep.Failed() || rep.KubernetesVersion != "v1.37.2" || rep.Istio == nil || rep.Istio.Installed {
		t.Errorf("report: failed %v, kubernetes %q, istio %+v", rep.Failed(), rep.KubernetesVersion, rep.Istio)
	}
}
