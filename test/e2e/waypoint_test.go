//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
)

// TestIstioWaypointEnvoy is issue 31 item 2's proof on the local cluster: the waypoint istiod renders runs the real
// proxyv2 (pilot-agent + upstream Envoy) and accepts its configuration (lds/cds update_rejected = 0); the Go HBONE
// node proxy sends every hop of a three-service chain across the nodes to it; its Envoy counts the requests the
// load sent at each hop (within 1 %); an L7 AuthorizationPolicy attached to it denies exactly the requests whose
// header matches; and meshbench's own waypoint case records the accepted config, the requests the waypoint served
// and the data plane per component.
//
// Not parallel: the node proxies' counters are per node, and another test's ambient traffic would move them.
func TestIstioWaypointEnvoy(t *testing.T) {
	env := RequireIstio(t)
	c := env.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	n0, n1 := twoNodes(ctx, t, c)
	sfx := randomSuffix(4)
	ns, meshed := "mb-e2e-wp-"+sfx, "mb-e2e-wpc-"+sfx
	c.CreateNamespaces(ctx, t, map[string]map[string]string{ns: {}, meshed: {mesh.LabelDataplaneMode: "ambient"}})
	chainOnNodes(ctx, t, c, ns, map[string]string{"frontend": n0, "backend": n1, "store": n0})
	client := loadClientPod(ctx, t, c, meshed, "client")

	// 1. meshbench's own waypoint case on this app (it switches the namespace to ambient + its waypoint, proves the
	// mode, measures and restores): the waypoint's Envoy accepted its config, served the load's requests, and every
	// component's data plane is named.
	run := envoyRun(ctx, t, env, ns, "waypoint-envoy", "waypoint", 0)
	cs := run.Cases[0]
	if cs.Status != results.StatusOK || cs.Facts["error-rate"] != "0.000%" {
		t.Fatalf("meshbench case %s: %s %s, error rate %q", cs.CaseID, cs.Status, cs.Reason, cs.Facts["error-rate"])
	}
	if got := cs.Facts[results.FactProxyConfig]; !strings.Contains(got, "accepted") {
		t.Errorf("case proxy-config fact %q: the waypoint's config acceptance is not recorded", got)
	}
	if got := cs.Facts[results.FactWaypointRequests]; got == "" {
		t.Errorf("case facts %v: no %s", cs.Facts, results.FactWaypointRequests)
	}
	for comp, want := range map[string]results.DataPlaneKind{string(results.ComponentWaypoint): results.DataPlaneUpstreamEnvoy,
		string(results.ComponentZtunnel): results.DataPlaneStandIn} {
		if got := cs.Facts[results.FactDataPlaneOf(results.Component(comp))]; got != string(want) {
			t.Errorf("case %s data plane %q, want %q", comp, got, want)
		}
	}
	t.Logf("meshbench waypoint case: %s; %s", cs.Facts[results.FactWaypointRequests], cs.Facts[results.FactProxyConfig])

	// 2. The test's own waypoint for the namespace's services (not named like meshbench's, whose deletion may still
	// be under way), and the namespace using it.
	applyYAML(ctx, t, env, fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: e2e-waypoint, namespace: %s, labels: {%s: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
`, ns, mesh.LabelWaypointFor))
	nsObj, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels[mesh.LabelDataplaneMode] = "ambient"
	nsObj.Labels[mesh.LabelUseWaypoint] = "e2e-waypoint"
	if _, err := c.Client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wps, err := c.WaitPodsReady(ctx, ns, mesh.GatewayNameLabel+"=e2e-waypoint", 1)
	if err != nil {
		t.Fatalf("waypoint pod not ready: %v", err)
	}
	wp := wps[0]
	if wp.Annotations[mesh.DataPlaneAnnotation] != mesh.DataPlaneUpstreamEnvoyValue {
		t.Errorf("waypoint pod %s: not the real proxyv2 (annotations %v)", wp.Name, wp.Annotations)
	}
	// Enrolled app pods restart nothing in ambient; wait until every node proxy routes service traffic via the
	// waypoint (workload discovery carries the Service's waypoint).
	var pods []corev1.Pod
	for _, n := range []string{ns, meshed} {
		l, err := c.Client.CoreV1().Pods(n).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			// Waypoints speak HBONE themselves (workload discovery says tunnel NONE: nothing captures them), and a
			// pod on its way out is no longer served.
			if _, gw := p.Labels[mesh.GatewayNameLabel]; !gw && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
	}
	proxies := nodeProxies(ctx, t, c)
	waitNodeProxiesKnow(ctx, t, c, proxies, pods)

	// 3. Envoy accepted the waypoint's listeners and clusters from istiod.
	var st mesh.XDSStats
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if st = envoyXDS(ctx, t, c, ns, wp.Name); st[mesh.LDSSuccess] >= 1 && st[mesh.CDSSuccess] >= 1 {
			break
		}
	}
	if st[mesh.LDSSuccess] < 1 || st[mesh.CDSSuccess] < 1 || st[mesh.LDSRejected] != 0 || st[mesh.CDSRejected] != 0 {
		t.Fatalf("waypoint %s: Envoy's xDS counters %v: want listeners and clusters accepted, none rejected", wp.Name, st)
	}

	// 4. Every hop's request passes through the waypoint: client -> frontend, frontend -> backend, backend -> store.
	viaWaypoint := map[string]string{"protocol": "hbone", "via": "waypoint", "result": "ok"}
	url := fmt.Sprintf("http://frontend.%s:%d/", ns, appPort)
	waypointRequests := func() float64 {
		n, _, ok, err := mesh.ParseWaypointRequests(envoyStats(ctx, t, c, ns, wp.Name))
		if err != nil || !ok {
			t.Fatalf("waypoint %s: no request counter (%v)", wp.Name, err)
		}
		return n
	}
	// The first request after the namespace switched may still go the old way on a node proxy that has not yet
	// seen the Service's waypoint: wait until one request is counted by the waypoint.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Second) {
		before := waypointRequests()
		if _, err := plaintextGet(ctx, c, meshed, client, url); err == nil && waypointRequests() > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s no request from %s/%s to %s reaches the waypoint", meshed, client, url)
		}
	}
	before, hopsBefore := waypointRequests(), nodeProxyCounters(ctx, t, c, proxies, viaWaypoint)[0]
	sent := envoyLoad(ctx, t, c, meshed, client, url, 100, 10*time.Second)
	got, hops := waypointRequests()-before, nodeProxyCounters(ctx, t, c, proxies, viaWaypoint)[0]-hopsBefore
	if want := 3 * float64(sent); math.Abs(got-want) > 0.01*want {
		t.Errorf("the waypoint's Envoy counted %.0f requests; the load sent %d through 3 hops (want %.0f within 1 %%)", got, sent, want)
	}
	if hops < 3 {
		t.Errorf("the node proxies opened %.0f HBONE streams to the waypoint, want >= 3 (one per hop)", hops)
	}
	t.Logf("%d requests sent, the waypoint counted %.0f (3 hops), %.0f HBONE streams to it", sent, got, hops)

	// 5. L7 at the waypoint: a header-match DENY attached to the Gateway refuses exactly the requests that carry it.
	applyYAML(ctx, t, env, fmt.Sprintf(`apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-header, namespace: %s}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: e2e-waypoint}]
  action: DENY
  rules: [{when: [{key: "request.headers[x-meshbench-deny]", values: ["yes"]}]}]
`, ns))
	denied := ""
	for deadline := time.Now().Add(90 * time.Second); denied == "" && time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		out, _, _ := c.Exec(ctx, meshed, client, "app", "/usr/local/bin/meshbench-agent", "curl", "--timeout", "5s", "-H", "x-meshbench-deny: yes", url)
		if strings.Contains(out, "RBAC: access denied") {
			denied = out
		}
	}
	if denied == "" {
		t.Fatalf("a request with x-meshbench-deny: yes still passes the waypoint 90 s after the DENY policy")
	}
	if out, err := plaintextGet(ctx, c, meshed, client, url); err != nil {
		t.Errorf("a request without the header is refused too: %v %s", err, out)
	}
	sent = envoyLoad(ctx, t, c, meshed, client, url, 100, 5*time.Second)
	t.Logf("L7 DENY on the header applies at the waypoint (%q); %d requests without it pass", strings.TrimSpace(denied), sent)
}
