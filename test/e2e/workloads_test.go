//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/cmd/meshbench/app"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// wlClients builds meshbench's clients for the local cluster.
func wlClients(t *testing.T, c *Cluster) *kube.Clients {
	t.Helper()
	cl, err := kube.NewClientsForConfig(c.Config)
	if err != nil {
		t.Fatalf("clients: %v", err)
	}
	return cl
}

// wlChainScenario is a fortio-chain on the local-cluster profile with a unique namespace prefix.
func wlChainScenario(t *testing.T, depth, fanOut, payload int, topo scenario.Topology) *scenario.Scenario {
	t.Helper()
	s := &scenario.Scenario{
		APIVersion: scenario.APIVersion, Kind: scenario.Kind,
		Metadata: scenario.Metadata{Name: "e2e-chain"},
		Spec: scenario.Spec{
			Profile: scenario.ProfileLocalCluster,
			Workload: scenario.Workload{
				App:             scenario.AppFortioChain,
				Chain:           &scenario.Chain{Depth: depth, FanOut: fanOut, PayloadBytes: payload},
				Topologies:      []scenario.Topology{topo},
				NamespacePrefix: "e2e-wl-" + randomSuffix(4) + "-",
			},
			Load: scenario.LoadSpec{Path: "/echo"},
		},
	}
	setDefaults(s)
	if ps := scenario.Validate(s); len(ps) > 0 {
		t.Fatalf("scenario: %v", ps)
	}
	return s
}

// wlDeploy deploys and waits, and tears the app down (checking the namespaces are gone) when the test ends.
func wlDeploy(t *testing.T, d *workloads.Deployer, s *scenario.Scenario) target.Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	target, err := d.Ensure(ctx, s, s.Spec.Workload.Topologies[0])
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, ns := range target.Namespaces {
				cluster.DumpNamespace(t, ns)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		if err := d.Teardown(ctx, target); err != nil {
			t.Errorf("Teardown: %v", err)
		}
		for _, ns := range target.Namespaces {
			if _, err := cluster.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s still exists after Teardown (err %v)", ns, err)
			}
		}
		t.Logf("teardown of %d namespaces: %s", len(target.Namespaces), time.Since(start).Round(time.Millisecond))
	})
	applied := time.Since(start)
	if err := d.WaitReady(ctx, target, 4*time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	t.Logf("%s/%s: applied in %s, %d pods ready after %s", target.App, target.Topology, applied.Round(time.Millisecond),
		target.ExpectedPods(), time.Since(start).Round(time.Millisecond))
	return target
}

// wlGet requests url from inside a pod of the target (with the agent's own curl: the image has no shell) and returns
// the body.
func wlGet(ctx context.Context, t *testing.T, c *Cluster, target target.Target, ns, url string) string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: target.AppSelector})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no app pod in %s to send from: %v", ns, err)
	}
	var last error
	for attempt := 0; attempt < 10; attempt++ {
		out, stderr, err := c.Exec(ctx, ns, pods.Items[0].Name, "app", "/usr/local/bin/meshbench-agent", "curl", "--json", "--fail", "--timeout", "10s", url)
		if err == nil {
			var resp struct {
				Body       string `json:"body"`
				BodyBase64 []byte `json:"bodyBase64"` // a binary body (fortio's ?size= payload)
			}
			if err = json.Unmarshal([]byte(out), &resp); err == nil {
				if resp.BodyBase64 != nil {
					return string(resp.BodyBase64)
				}
				return resp.Body
			}
		}
		last = err
		t.Logf("curl %s from %s/%s: %v %s (retrying)", url, ns, pods.Items[0].Name, err, stderr)
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("curl %s: %v", url, last)
	return ""
}

func TestWorkloadsFortioChainSingle(t *testing.T) {
	c := RequireCluster(t)
	s := wlChainScenario(t, 2, 1, 100, scenario.Topology{Kind: scenario.TopologySingle})
	d := &workloads.Deployer{Clients: wlClients(t, c), RunID: c.RunID}
	target := wlDeploy(t, d, s)
	if len(target.Namespaces) != 1 || target.ExpectedPods() != 3 {
		t.Fatalf("target %+v", target)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The entry URL carries ?size=100: chain-0 -> chain-1 -> chain-2 (leaf) returns exactly 100 bytes.
	body := wlGet(ctx, t, c, target, target.EntryNamespace, target.EntryURL)
	if len(body) != 100 {
		t.Fatalf("GET %s through the chain: %d bytes, want 100 (the leaf's ?size=100 payload): %q", target.EntryURL, len(body), body)
	}
	// The chain really forwards: the leaf answers ?size= on its own, chain-1 forwards it.
	direct := wlGet(ctx, t, c, target, target.EntryNamespace, "http://chain-1:8080/echo?size=7")
	if len(direct) != 7 {
		t.Errorf("chain-1 forwarding: %d bytes, want 7", len(direct))
	}
	// Ensure is idempotent: a second apply changes nothing (no new ReplicaSet).
	before, _ := c.Client.AppsV1().ReplicaSets(target.EntryNamespace).List(ctx, metav1.ListOptions{})
	if _, err := d.Ensure(ctx, s, s.Spec.Workload.Topologies[0]); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	after, _ := c.Client.AppsV1().ReplicaSets(target.EntryNamespace).List(ctx, metav1.ListOptions{})
	if len(after.Items) != len(before.Items) {
		t.Errorf("re-applying the same workload created ReplicaSets: %d -> %d", len(before.Items), len(after.Items))
	}
}

func TestWorkloadsFortioChainMulti(t *testing.T) {
	c := RequireCluster(t)
	s := wlChainScenario(t, 2, 2, 50, scenario.Topology{Kind: scenario.TopologyMulti, Namespaces: 3, Replicas: 2})
	d := &workloads.Deployer{Clients: wlClients(t, c), RunID: c.RunID}
	target := wlDeploy(t, d, s)
	if len(target.Namespaces) != 3 || target.ExpectedPods() != 14 {
		t.Fatalf("3 namespaces x (7 services x 2 replicas) expected, got %d namespaces, %d pods", len(target.Namespaces), target.ExpectedPods())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// From a pod in the LAST namespace, through the entry's FQDN: fan-out 2, depth 2 = 4 leaves x 50 bytes.
	body := wlGet(ctx, t, c, target, target.Namespaces[2], target.EntryURL)
	if len(body) != 200 {
		t.Fatalf("GET %s: %d bytes, want 200 (4 leaves x 50 bytes): %q", target.EntryURL, len(body), body)
	}
	for _, ns := range target.Namespaces {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: target.AppSelector})
		if err != nil || len(pods.Items) < 4 {
			t.Errorf("namespace %s: %d app pods (%v), want >= 4", ns, len(pods.Items), err)
		}
	}
}

// The whole Bank of Anthos object set, both topologies, is accepted by the real API server (server-side dry-run:
// validated and admitted, nothing persisted), with a real jwt-key as Ensure would apply it. The images are not
// pullable here, so nothing is run.
func TestWorkloadsBankOfAnthosServerDryRun(t *testing.T) {
	c := RequireCluster(t)
	s := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "e2e-boa"},
		Spec: scenario.Spec{Workload: scenario.Workload{
			App: scenario.AppBankOfAnthos, Replicas: 2, NamespacePrefix: "e2e-boa-" + randomSuffix(4) + "-",
			Topologies: []scenario.Topology{{Kind: scenario.TopologySingle}, {Kind: scenario.TopologyMulti}},
		}}}
	setDefaults(s)
	key, err := workloads.GenerateJWTKey(nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cl := serverDryRun(t, c, s, func(objs []runtime.Object) {
		for _, o := range objs {
			if sec, ok := o.(*corev1.Secret); ok { // the real key, as Ensure would apply it
				sec.StringData = map[string]string{"jwtRS256.key": key.PrivatePEM, "jwtRS256.key.pub": key.PublicPEM}
			}
		}
	})
	// Deployer with DryRun does the same through Ensure once the namespaces exist (serverDryRun's cleanup removes
	// them at the end of the test).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := &workloads.Deployer{Clients: cl, RunID: c.RunID, DryRun: true}
	if _, err := d.Ensure(ctx, s, s.Spec.Workload.Topologies[1]); err != nil {
		t.Errorf("Deployer{DryRun}.Ensure multi: %v", err)
	}
}

// Namespace safety and cleanup: an existing namespace meshbench did not create is refused unless allowed; when
// allowed it is never labelled for the run or deleted; the mode labels meshbench changes are recorded before the
// change and restored by `meshbench cleanup`, which deletes everything labelled and leaves no labelled object.
func TestWorkloadsNamespaceSafetyAndCleanup(t *testing.T) {
	c := RequireCluster(t)
	cl := wlClients(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	runID := "e2e-clean-" + randomSuffix(5)

	// A foreign namespace: someone's team namespace with revision-based injection.
	s := wlChainScenario(t, 1, 1, 10, scenario.Topology{Kind: scenario.TopologySingle})
	foreignNS := s.Spec.Workload.NamespacePrefix + "single"
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreignNS, Labels: map[string]string{"team": "payments", mesh.LabelRevision: "canary"}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = c.DeleteNamespace(ctx, foreignNS)
	})

	d := &workloads.Deployer{Clients: cl, RunID: runID}
	if _, err := d.Ensure(ctx, s, s.Spec.Workload.Topologies[0]); err == nil || !strings.Contains(err.Error(), "--allow-existing-namespaces") {
		t.Fatalf("a foreign namespace must be refused with the fix, got %v", err)
	}
	d.AllowExisting = true
	target, err := d.Ensure(ctx, s, s.Spec.Workload.Topologies[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx, target, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// A second app in a namespace meshbench creates, same run.
	s2 := wlChainScenario(t, 1, 1, 10, scenario.Topology{Kind: scenario.TopologySingle})
	own, err := d.Ensure(ctx, s2, s2.Spec.Workload.Topologies[0])
	if err != nil {
		t.Fatal(err)
	}

	ns, _ := c.Client.CoreV1().Namespaces().Get(ctx, foreignNS, metav1.GetOptions{})
	if ns.Labels[kube.RunLabel] != "" || ns.Labels[kube.ManagedByLabel] != "" {
		t.Errorf("the foreign namespace got meshbench's labels: %v", ns.Labels)
	}

	// Switch the foreign namespace to ambient: its labels are recorded first (works with or without Istio).
	runDir := filepath.Join(t.TempDir(), runID)
	rec, err := mesh.OpenLabelRecord(filepath.Join(runDir, mesh.LabelRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	sw := &mesh.Switcher{Clients: cl, RunID: runID, Record: rec, Timeout: 2 * time.Minute}
	if _, err := sw.Apply(ctx, target, scenario.ModeAmbient, s.Spec.Waypoint); err != nil {
		t.Fatal(err)
	}
	ns, _ = c.Client.CoreV1().Namespaces().Get(ctx, foreignNS, metav1.GetOptions{})
	if ns.Labels[mesh.LabelDataplaneMode] != "ambient" || ns.Labels[mesh.LabelRevision] != "" {
		t.Fatalf("foreign namespace not switched: %v", ns.Labels)
	}
	file, err := os.ReadFile(filepath.Join(runDir, mesh.LabelRecordFile))
	if err != nil || !strings.Contains(string(file), `"istio.io/rev": "canary"`) || !strings.Contains(string(file), `"istio.io/dataplane-mode": null`) {
		t.Fatalf("namespace-labels.json: %s (%v)", file, err)
	}

	// meshbench cleanup --run ID --run-dir DIR, through the CLI.
	var out, errOut bytes.Buffer
	code := app.Execute(ctx, app.Streams{Out: &out, ErrOut: &errOut}, []string{
		"cleanup", "--run", runID, "--run-dir", runDir, "--kubeconfig", c.Kubeconfig, "-o", "json", "--timeout", "3m",
	})
	t.Logf("meshbench cleanup: exit %d\n%s%s", code, out.String(), errOut.String())
	if code != 0 {
		t.Fatalf("cleanup exit %d", code)
	}
	ns, err = c.Client.CoreV1().Namespaces().Get(ctx, foreignNS, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the foreign namespace must survive cleanup: %v", err)
	}
	if want := map[string]string{"team": "payments", mesh.LabelRevision: "canary", "kubernetes.io/metadata.name": foreignNS}; !wlEqualMaps(ns.Labels, want) {
		t.Errorf("labels after cleanup %v, want %v", ns.Labels, want)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, own.Namespaces[0], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("meshbench's own namespace %s must be gone after cleanup (err %v)", own.Namespaces[0], err)
	}
	// No labelled object of the run is left anywhere.
	sel := kube.RunSelector(runID)
	left := 0
	for _, list := range []func() (int, error){
		func() (int, error) {
			l, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: sel})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: sel})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.Client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: sel})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.Client.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{LabelSelector: sel})
			return len(l.Items), err
		},
	} {
		n, err := list()
		if err != nil {
			t.Fatal(err)
		}
		left += n
	}
	if left != 0 {
		t.Errorf("%d labelled objects of run %s left after cleanup", left, runID)
	}
	// Pods of the deleted Deployments in the foreign namespace go too (garbage collection).
	if err := wlWaitNoPods(ctx, c, foreignNS, target.AppSelector); err != nil {
		t.Error(err)
	}
}

func wlWaitNoPods(ctx context.Context, c *Cluster, ns, selector string) error {
	for {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func wlEqualMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
