//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshbench/meshbench/cmd/meshbench/app"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/preflight"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/schedule"
	"github.com/meshbench/meshbench/workloads"
)

// gatewayAPIVersion is the sigs.k8s.io/gateway-api version in go.mod: its own CRD files are what we install.
const gatewayAPIVersion = "v1.6.3"

// meshIstioPresent reports whether an istiod pod exists (the local cluster may or may not run `make istio-up`).
func meshIstioPresent(ctx context.Context, t *testing.T, c *Cluster) bool {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "app=istiod"})
	if err != nil {
		t.Fatalf("list istiod pods: %v", err)
	}
	return len(pods.Items) > 0
}

// The Gateway API standard CRDs from the gateway-api module's own files (they have no leading "---": each file is
// decoded on its own) go in by server-side apply from Go. When the cluster already has them (make istio-up installs
// the version Istio's go.mod uses) the apply is a server-side dry-run, so a shared cluster is left as it is.
func TestMeshGatewayAPICRDs(t *testing.T) {
	c := RequireCluster(t)
	cl := wlClients(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "gateway-api@"+gatewayAPIVersion, "config", "crd", "standard")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRD files in %s (go mod download sigs.k8s.io/gateway-api@%s): %v", dir, gatewayAPIVersion, err)
	}
	sort.Strings(files)
	objs, err := mesh.ReadManifests(files...)
	if err != nil {
		t.Fatal(err)
	}
	crds := 0
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
		}
	}
	if crds != 10 || len(objs) != 12 {
		t.Fatalf("%d files gave %d objects (%d CRDs); want 10 CRDs + the safe-upgrades ValidatingAdmissionPolicy and binding", len(files), len(objs), crds)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err = cl.Dynamic.Resource(crdGVR).Get(ctx, "gateways.gateway.networking.k8s.io", metav1.GetOptions{})
	installed := err == nil
	ap := kube.Applier{Dynamic: cl.Dynamic, Mapper: cl.Mapper, DryRun: installed}
	for _, o := range objs {
		if _, err := ap.Apply(ctx, o); err != nil {
			t.Errorf("apply %s %s (dryRun=%v): %v", o.GetKind(), o.GetName(), installed, err)
		}
	}
	t.Logf("%d objects from %d files applied (dryRun=%v: CRDs already installed=%v)", len(objs), len(files), installed, installed)
	if !installed {
		// Wait until the Gateway CRD is established, then it can be used by the next tests.
		deadline := time.Now().Add(time.Minute)
		for {
			u, err := cl.Dynamic.Resource(crdGVR).Get(ctx, "gateways.gateway.networking.k8s.io", metav1.GetOptions{})
			if err == nil && meshCRDEstablished(u) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Gateway CRD not established after 1m: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		cl.Mapper.Reset()
	}
}

func meshCRDEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// The waypoint Gateways meshbench creates (per-namespace and shared) are valid: the Gateway CRD's schema and CEL
// rules accept them (server-side dry-run, so this holds with or without Istio), and reject a broken one.
func TestMeshWaypointGatewayIsValid(t *testing.T) {
	c := RequireCluster(t)
	cl := wlClients(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.Gateway.GatewayV1().Gateways("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Skipf("Gateway API CRDs not served (TestMeshGatewayAPICRDs installs them): %v", err)
	}
	ns1, ns2 := c.CreateNamespace(t, "e2e-wp"), c.CreateNamespace(t, "e2e-wp")
	target := target.Target{Namespaces: []string{ns1, ns2}, EntryNamespace: ns1}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: mesh.FieldManager}
	for _, wp := range []scenario.Waypoint{
		{Scope: scenario.WaypointPerNamespace, Name: "waypoint", For: "service"},
		{Scope: scenario.WaypointShared, Name: "shared-wp", For: "all"},
	} {
		for _, gw := range mesh.WaypointGateways(target, wp, c.RunID, "") {
			if _, err := cl.Gateway.GatewayV1().Gateways(gw.Namespace).Create(ctx, gw, dry); err != nil {
				t.Errorf("%s waypoint %s/%s rejected: %v", wp.Scope, gw.Namespace, gw.Name, err)
			}
		}
	}
	bad := mesh.WaypointGateway(mesh.WaypointRef{Namespace: ns1, Name: "bad"}, scenario.Waypoint{}, false, c.RunID, "")
	bad.Spec.Listeners = append(bad.Spec.Listeners, gwv1.Listener{Name: "mesh", Port: 15008, Protocol: "HBONE"}) // duplicate listener name
	if _, err := cl.Gateway.GatewayV1().Gateways(ns1).Create(ctx, bad, dry); err == nil {
		t.Error("a Gateway with duplicate listener names was accepted: is the CRD validating at all?")
	}
}

// Preflight reports the cluster as it is: with Istio, the version from istiod's /version; without, a FAIL that
// blocks a sidecar scenario (exit 2 from the CLI).
func TestMeshPreflight(t *testing.T) {
	c := RequireCluster(t)
	cl := wlClients(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "e2e-preflight"},
		Spec: scenario.Spec{
			Profile:    scenario.ProfileLocalCluster,
			Workload:   scenario.Workload{App: scenario.AppFortioChain, NamespacePrefix: "e2e-pf-" + randomSuffix(4) + "-"},
			Modes:      []scenario.Mode{scenario.ModeNone, scenario.ModeSidecar},
			Prometheus: scenario.Prometheus{URL: c.PrometheusURL},
		}}
	setDefaults(s)
	start := time.Now()
	rep, err := preflight.Run(ctx, cl, s, preflight.Options{Permissions: []schedule.Permission{
		{Resource: "pods", Verbs: []string{"get", "list", "watch"}, Why: "verify"},
		{Resource: "namespaces", Verbs: []string{"create", "patch"}, Why: "label"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("preflight in %s:\n%s", time.Since(start).Round(time.Millisecond), rep.Table())
	checks := map[string]preflight.Check{}
	for _, ch := range rep.Checks {
		checks[ch.Name] = ch
	}
	if ch := checks["kubernetes"]; ch.Status != preflight.StatusOK || !strings.Contains(ch.Detail, "v1.37") {
		t.Errorf("kubernetes check %+v", ch)
	}
	if ch := checks["permissions"]; ch.Status != preflight.StatusOK {
		t.Errorf("admin must pass the permission check: %+v", ch)
	}
	if ch := checks["prometheus"]; ch.Status == preflight.StatusFail {
		t.Logf("prometheus check failed (harness Prometheus down?): %+v", ch)
	}
	istio := meshIstioPresent(ctx, t, c)
	ich := checks["istio"]
	if istio {
		if ich.Status != preflight.StatusOK || rep.Istio == nil || rep.Istio.Version == "" || rep.Istio.VersionSource != "istiod /version" {
			t.Errorf("Istio is installed: want its version from istiod /version, got %+v %+v", ich, rep.Istio)
		}
	} else if ich.Status != preflight.StatusFail || !strings.Contains(ich.Detail, "no Istio control plane") || !rep.Failed() {
		t.Errorf("no Istio and mode sidecar requested: want a blocking FAIL, got %+v", ich)
	}

	// The CLI: exit 2 exactly when a FAIL blocks the modes.
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	meshWriteFile(t, file, fmt.Sprintf(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: e2e-preflight}
spec:
  profile: localcluster
  workload: {app: fortio-chain, namespacePrefix: %s}
  modes: [none, sidecar]
`, s.Spec.Workload.NamespacePrefix))
	var out, errOut bytes.Buffer
	code := app.Execute(ctx, app.Streams{Out: &out, ErrOut: &errOut}, []string{"preflight", "-f", file, "--kubeconfig", c.Kubeconfig, "--prometheus-url", c.PrometheusURL})
	t.Logf("meshbench preflight: exit %d\n%s%s", code, out.String(), errOut.String())
	want := 0
	if rep.Failed() {
		want = 2
	}
	if code != want {
		t.Errorf("preflight exit %d, want %d", code, want)
	}
}

// Without Istio, a sidecar case must fail verification with a message that says so, instead of measuring an
// un-meshed app. (With Istio installed the per-pod proofs are exercised by TestIstioModeSwitches and TestMeshSharedWaypointIstio.)
func TestMeshSidecarWithoutIstioFailsVerification(t *testing.T) {
	c := RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if meshIstioPresent(ctx, t, c) {
		t.Skip("Istio is installed on the local cluster: the no-Istio path is covered by mesh unit tests (TestVerifySidecarWithoutIstio)")
	}
	cl := wlClients(t, c)
	s := wlChainScenario(t, 1, 1, 10, scenario.Topology{Kind: scenario.TopologySingle})
	d := &workloads.Deployer{Clients: cl, RunID: c.RunID}
	target := wlDeploy(t, d, s)
	sw := &mesh.Switcher{Clients: cl, RunID: c.RunID, Timeout: 2 * time.Minute}
	tr, err := sw.Apply(ctx, target, scenario.ModeSidecar, s.Spec.Waypoint)
	if err != nil {
		t.Fatalf("Apply sidecar: %v", err)
	}
	t.Logf("transition %s -> %s: %v", tr.From, tr.To, tr.Timings(nil))
	_, err = sw.Verify(ctx, target, scenario.ModeSidecar, s.Spec.Waypoint, 20*time.Second)
	if err == nil && meshIstioPresent(ctx, t, c) {
		t.Skip("Istio was installed while the test ran (shared cluster): the pods were injected for real")
	}
	var ve *mesh.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *mesh.VerifyError, got %v", err)
	}
	for _, want := range []string{"mode sidecar not in effect", "no Istio control plane found", "no sidecar injected"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("verification error lacks %q:\n%v", want, err)
		}
	}
	t.Logf("verification failed as it must:\n%v", err)
}

// With the local Istio (make istio-up: real istiod and istio-cni, stand-in proxies), a SHARED waypoint: one Gateway in
// the entry namespace admits routes from all namespaces, and every app namespace is labelled istio.io/use-waypoint
// plus istio.io/use-waypoint-namespace. (All 12 per-namespace transitions are TestIstioModeSwitches.)
func TestMeshSharedWaypointIstio(t *testing.T) {
	e := RequireIstio(t)
	c := e.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := wlChainScenario(t, 2, 1, 64, scenario.Topology{Kind: scenario.TopologyMulti, Namespaces: 3})
	s.Spec.Waypoint = scenario.Waypoint{Scope: scenario.WaypointShared, Name: "shared-waypoint", For: "service"}
	d := &workloads.Deployer{Clients: e.Clients, RunID: c.RunID}
	target := wlDeploy(t, d, s)
	sw := &mesh.Switcher{Clients: e.Clients, RunID: c.RunID, Timeout: 4 * time.Minute}
	walk := []scenario.Mode{scenario.ModeNone, scenario.ModeWaypoint, scenario.ModeSidecar, scenario.ModeWaypoint, scenario.ModeAmbient, scenario.ModeNone}
	var rows []string
	for i := 1; i < len(walk); i++ {
		from, to := walk[i-1], walk[i]
		tr, err := sw.Apply(ctx, target, to, s.Spec.Waypoint)
		if err != nil {
			t.Fatalf("%s -> %s: Apply: %v", from, to, err)
		}
		if tr.From != from {
			t.Errorf("%s -> %s: transition inferred from %s", from, to, tr.From)
		}
		v, err := sw.Verify(ctx, target, to, s.Spec.Waypoint, 3*time.Minute)
		if err != nil {
			t.Fatalf("%s -> %s: Verify: %v", from, to, err)
		}
		if to == scenario.ModeWaypoint {
			if len(v.Waypoints) != 1 || v.Waypoints[0].Namespace != target.EntryNamespace || !v.Waypoints[0].Ready {
				t.Errorf("shared waypoint proofs %+v", v.Waypoints)
			}
			for _, ns := range target.Namespaces {
				got, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Labels[mesh.LabelUseWaypoint] != "shared-waypoint" || got.Labels[mesh.LabelUseWaypointNamespace] != target.EntryNamespace {
					t.Errorf("namespace %s labels %v", ns, got.Labels)
				}
			}
		}
		body := wlGet(ctx, t, c, target, target.Namespaces[2], target.EntryURL)
		if len(body) != 64 {
			t.Errorf("%s -> %s: traffic through the chain returned %d bytes, want 64", from, to, len(body))
		}
		tm := tr.Timings(&v)
		rows = append(rows, fmt.Sprintf("%-8s -> %-8s restarted=%d steps=%v switch=%s label-to-verified=%s verify=%s pods=%d standIn=%v",
			from, to, len(tr.Restarted), meshStepNames(tr), tm["mode-switch"], tm["label-to-verified"], v.Elapsed.Round(time.Millisecond), len(v.Pods), v.StandIn))
	}
	t.Logf("shared waypoint over %v:\n  %s", target.Namespaces, strings.Join(rows, "\n  "))
	for _, ns := range target.Namespaces {
		gws, err := e.Clients.Gateway.GatewayV1().Gateways(ns).List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if err == nil && len(gws.Items) != 0 {
			t.Errorf("%d Gateways left in %s after leaving waypoint mode", len(gws.Items), ns)
		}
	}
}

func meshStepNames(tr mesh.Transition) []string {
	out := make([]string, len(tr.Steps))
	for i, s := range tr.Steps {
		out[i] = s.Name
	}
	return out
}

func meshWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
