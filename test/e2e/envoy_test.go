//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
)

// Envoy's inbound HTTP connection manager of a sidecar has the stat prefix "inbound_<ip>_<port>" (istio/istio
// pilot/pkg/networking/core/listener_inbound.go inboundChainConfig.StatPrefix, at the hack/localistio pin), which
// Istio's default stats matcher does not keep (pkg/bootstrap/config.go requiredEnvoyStatsMatcherInclusionPrefixes):
// the test's pods ask for it with the proxy.istio.io/config annotation (ProxyConfig.proxyStatsMatcher), so Envoy's
// own count of the requests it received can be read.
const inboundStatsConfig = `{"proxyStatsMatcher":{"inclusionPrefixes":["http.inbound_"]}}`

// TestEnvoySidecar is issue 30's proof that the local test bed's sidecar is a real pilot-agent + upstream Envoy on
// the path: every app pod's Envoy accepted its configuration from istiod (lds/cds update_rejected = 0), the
// requests meshbench's load client sends are counted by the server's inbound Envoy (within 1 %), a STRICT
// PeerAuthentication is enforced end to end (meshed load succeeds, a plaintext client outside the mesh is refused)
// and meshbench's own run records STRICT and the accepted config; then an EnvoyFilter that Envoy refuses makes
// meshbench fail the case naming the pod and the counter instead of measuring.
func TestEnvoySidecar(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	// The app, the meshed load client (a namespace of its own: meshbench counts every pod of an existing app's
	// namespace as the app's) and a plaintext client outside the mesh.
	sfx := randomSuffix(4)
	ns, meshed, plain := "mb-e2e-envoy-"+sfx, "mb-e2e-envoyc-"+sfx, "mb-e2e-plain-"+sfx
	c.CreateNamespaces(ctx, t, map[string]map[string]string{ns: {"istio-injection": "enabled"}, meshed: {"istio-injection": "enabled"},
		plain: {"istio-injection": "disabled"}})
	userAppWith(ctx, t, c, ns, map[string]string{"proxy.istio.io/config": inboundStatsConfig})
	client := loadClientPod(ctx, t, c, meshed, "client")
	outsider := loadClientPod(ctx, t, c, plain, "outsider")

	// 1. Every app pod's Envoy took its config from istiod (real xDS, real SDS certificates).
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app in (frontend,backend,store)"})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("app pods: %d (%v), want 3", len(pods.Items), err)
	}
	for _, p := range pods.Items {
		if p.Annotations[mesh.DataPlaneAnnotation] != mesh.DataPlaneUpstreamEnvoyValue {
			t.Errorf("pod %s: not injected with the real sidecar (annotations %v)", p.Name, p.Annotations)
		}
		st := envoyXDS(ctx, t, c, ns, p.Name)
		if st[mesh.LDSSuccess] < 1 || st[mesh.CDSSuccess] < 1 || st[mesh.LDSRejected] != 0 || st[mesh.CDSRejected] != 0 {
			t.Errorf("pod %s: Envoy's xDS counters %v: want listeners and clusters accepted, none rejected", p.Name, st)
		}
	}

	// 2. Every request the load client sends passes through each hop's inbound Envoy.
	sent := inboundDeltas(ctx, t, c, ns, pods.Items, func() int64 {
		return envoyLoad(ctx, t, c, meshed, client, "http://frontend."+ns+":8080/", 100, 10*time.Second)
	})
	t.Logf("PERMISSIVE: %d requests sent through frontend -> backend -> store", sent)

	// 3. STRICT, namespace-wide: plaintext from outside the mesh was accepted before, is refused now; the meshed load
	// still succeeds (mTLS between the sidecars, with istiod's certificates).
	url := fmt.Sprintf("http://frontend.%s:8080/", ns)
	if out, err := plaintextGet(ctx, c, plain, outsider, url); err != nil {
		t.Fatalf("PERMISSIVE: a plaintext client outside the mesh must get through: %v %s", err, out)
	}
	applyStrictUntilPlaintextRefused(ctx, t, env, ns, plain, outsider, url)
	sent = inboundDeltas(ctx, t, c, ns, pods.Items, func() int64 {
		return envoyLoad(ctx, t, c, meshed, client, "http://frontend."+ns+":8080/", 100, 10*time.Second)
	})
	t.Logf("STRICT: plaintext refused, %d meshed requests through every hop", sent)

	// 4. meshbench itself, on this app (already in sidecar mode): the case records STRICT, the accepted config and
	// the real sidecar.
	run := envoyRun(ctx, t, env, ns, "envoy-strict", "sidecar", 0)
	cs := run.Cases[0]
	if cs.Status != results.StatusOK || cs.Facts["error-rate"] != "0.000%" {
		t.Fatalf("meshbench case %s: %s %s, error rate %q", cs.CaseID, cs.Status, cs.Reason, cs.Facts["error-rate"])
	}
	if !strings.HasPrefix(cs.Facts["mtls"], "STRICT") {
		t.Errorf("case mtls fact %q, want STRICT", cs.Facts["mtls"])
	}
	if !strings.HasPrefix(cs.Facts[results.FactProxyConfig], "3 of 3 sampled proxies accepted") {
		t.Errorf("case proxy-config fact %q", cs.Facts[results.FactProxyConfig])
	}
	if got := cs.Facts[results.FactDataPlaneOf(results.ComponentSidecar)]; got != string(results.DataPlaneUpstreamEnvoy) {
		t.Errorf("case sidecar data plane %q, want %q", got, results.DataPlaneUpstreamEnvoy)
	}

	// 5. An EnvoyFilter gone wrong: Istio's own peer-metadata filter, which this Envoy does not have, inserted into
	// backend's inbound HTTP chain. Envoy refuses the listener update; meshbench must refuse to measure.
	applyYAML(ctx, t, env, fmt.Sprintf(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: unknown-filter, namespace: %s}
spec:
  workloadSelector: {labels: {app: backend}}
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: SIDECAR_INBOUND
      listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}
    patch:
      operation: INSERT_BEFORE
      value:
        name: istio.metadata_exchange
        typed_config:
          "@type": type.googleapis.com/udpa.type.v1.TypedStruct
          type_url: type.googleapis.com/io.istio.http.peer_metadata.Config
          value: {}
`, ns))
	var backend string
	for _, p := range pods.Items {
		if p.Labels["app"] == "backend" {
			backend = p.Name
		}
	}
	rejected := false
	for deadline := time.Now().Add(60 * time.Second); !rejected && time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		rejected = envoyXDS(ctx, t, c, ns, backend)[mesh.LDSRejected] > 0
	}
	if !rejected {
		t.Fatalf("backend's Envoy did not reject the listener with an unknown filter within 60 s")
	}
	run = envoyRun(ctx, t, env, ns, "envoy-rejected", "sidecar", 1)
	cs = run.Cases[0]
	for _, want := range []string{"rejected configuration", "pod " + ns + "/" + backend, string(mesh.LDSRejected) + "=", "EnvoyFilter"} {
		if cs.Status != results.StatusFailed || !strings.Contains(cs.Reason, want) {
			t.Errorf("case with a rejecting proxy: %s, reason lacks %q:\n%s", cs.Status, want, cs.Reason)
		}
	}
	if _, ok := cs.Timings["load"]; ok {
		t.Errorf("a case whose proxy rejected config was measured (timings %v)", cs.Timings)
	}
}

// loadClientPod starts a meshbench-agent pod that holds (as meshbench's load clients do) and returns its name once
// it is Ready: meshed in a namespace with injection, plaintext in one without.
func loadClientPod(ctx context.Context, t *testing.T, c *Cluster, ns, name string) string {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](5), Containers: []corev1.Container{{Name: "app", Image: c.Image(t, "AGENT"),
			Args: []string{"load", "--hold"}, ImagePullPolicy: corev1.PullIfNotPresent}}}}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitPodsReady(ctx, ns, "app="+name, 1); err != nil {
		t.Fatalf("pod %s/%s not ready: %v", ns, name, err)
	}
	return name
}

// envoyStats reads a pod's Envoy stats (Prometheus text, :15090 through the pods/proxy subresource).
func envoyStats(ctx context.Context, t *testing.T, c *Cluster, ns, pod string) []byte {
	t.Helper()
	b, err := kube.ProxyGet(ctx, c.Client, "pods", ns, fmt.Sprintf("%s:%d", pod, mesh.EnvoyStatsPort), "/stats/prometheus", nil)
	if err != nil {
		t.Fatalf("stats of %s/%s: %v", ns, pod, err)
	}
	return b
}

func envoyXDS(ctx context.Context, t *testing.T, c *Cluster, ns, pod string) mesh.XDSStats {
	t.Helper()
	st, err := mesh.ParseXDSStats(envoyStats(ctx, t, c, ns, pod))
	if err != nil {
		t.Fatalf("%s/%s: %v", ns, pod, err)
	}
	return st
}

// inboundRequests is the sum of envoy_http_downstream_rq_total over the pod's inbound HTTP connection managers
// (Istio's bootstrap tags the prefix as http_conn_manager_prefix).
func inboundRequests(ctx context.Context, t *testing.T, c *Cluster, ns, pod string) float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(envoyStats(ctx, t, c, ns, pod)))
	if err != nil {
		t.Fatalf("parse stats of %s/%s: %v", ns, pod, err)
	}
	f, ok := fams["envoy_http_downstream_rq_total"]
	if !ok {
		t.Fatalf("%s/%s: no envoy_http_downstream_rq_total (is %s applied?)", ns, pod, inboundStatsConfig)
	}
	sum, seen := 0.0, false
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "http_conn_manager_prefix" && strings.HasPrefix(l.GetValue(), "inbound_") {
				sum, seen = sum+m.GetCounter().GetValue(), true
			}
		}
	}
	if !seen {
		t.Fatalf("%s/%s: no inbound HTTP connection manager among envoy_http_downstream_rq_total %v", ns, pod, f.GetMetric())
	}
	return sum
}

// inboundDeltas runs load and checks that every app pod's inbound Envoy counted the requests it sent, within 1 %.
func inboundDeltas(ctx context.Context, t *testing.T, c *Cluster, ns string, pods []corev1.Pod, load func() int64) int64 {
	t.Helper()
	before := map[string]float64{}
	for _, p := range pods {
		before[p.Name] = inboundRequests(ctx, t, c, ns, p.Name)
	}
	sent := load()
	for _, p := range pods {
		got := inboundRequests(ctx, t, c, ns, p.Name) - before[p.Name]
		if sent == 0 || math.Abs(got-float64(sent)) > 0.01*float64(sent) {
			t.Errorf("%s's inbound Envoy counted %.0f requests, the load sent %d (want within 1 %%)", p.Labels["app"], got, sent)
		}
	}
	return sent
}

// envoyLoad runs meshbench's load client (the agent's fortio) in pod for d at qps and returns the requests it sent:
// those of every phase, plus the one request per connection fortio sends before each run and counts in none
// (fortio/fortio v1.75.3 fhttp/httprunner.go RunHTTPTest, the parallel warm-up: `if o.Exactly <= 0 &&
// !o.SequentialWarmup`, one StreamFetch per thread). Any error fails the test.
func envoyLoad(ctx context.Context, t *testing.T, c *Cluster, ns, pod, url string, qps int, d time.Duration) int64 {
	t.Helper()
	out, stderr, err := c.Exec(ctx, ns, pod, "app", "/usr/local/bin/meshbench-agent", "load", "--json", "--url", url,
		"--qps", fmt.Sprint(qps), "--connections", "4", "--duration", d.String(), "--warmup", "2s")
	if err != nil {
		t.Fatalf("load: %v %s", err, stderr)
	}
	var rep loadgen.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("load report: %v\n%s", err, out)
	}
	var n int64
	for _, ph := range rep.Phases {
		n += ph.Requests + int64(rep.Measured.Connections)
		if ph.Errors != 0 {
			t.Errorf("load phase %s: %d errors of %d requests (codes %v)", ph.Name, ph.Errors, ph.Requests, rep.Measured.Codes)
		}
	}
	return n
}

// plaintextGet GETs url from a pod without a sidecar (the agent's curl), once.
func plaintextGet(ctx context.Context, c *Cluster, ns, pod, url string) (string, error) {
	out, stderr, err := c.Exec(ctx, ns, pod, "app", "/usr/local/bin/meshbench-agent", "curl", "--fail", "--timeout", "5s", url)
	if err != nil {
		return out + stderr, err
	}
	return out, nil
}

// applyYAML creates one object from YAML with the dynamic client (deleted with its namespace).
func applyYAML(ctx context.Context, t *testing.T, env *IstioEnv, doc string) {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	m, err := env.Clients.Mapper.RESTMapping(gv.WithKind(u.GetKind()).GroupKind(), gv.Version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clients.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// envoyRun runs `meshbench run` in one mode on the existing app in ns and returns the run; the exit code must be
// want.
func envoyRun(ctx context.Context, t *testing.T, env *IstioEnv, ns, name, mode string, want int) *results.Run {
	t.Helper()
	c := env.Cluster
	path := writeScenarioFile(t, name, fmt.Sprintf(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: %s}
spec:
  profile: localcluster
  workload:
    app: existing
    existing: {namespaces: [%s]}
  modes: [%s]
  load:
    qps: [50]
    connections: 2
    targets:
    - {service: frontend, port: 8080, path: /}
  windows: {idle: 10s, load: 15s, repetitions: 1, settle: 2s, attempts: 1}
  prometheus: {url: %s}
  output: {dir: runs}
`, name, ns, mode, c.PrometheusURL))
	work := t.TempDir()
	stdout, stderr, code := runCLI(ctx, t, c, work, "run", "-f", path, "--allow-existing-namespaces", "--output-dir", "runs")
	t.Logf("%s: stderr (tail):\n%s", name, tail(stderr, 3000))
	if code != want {
		t.Fatalf("%s exited %d, want %d\nstdout:\n%s", name, code, want, stdout)
	}
	run, err := results.Read(onlyRunDir(t, filepath.Join(work, "runs")))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cases) != 1 {
		t.Fatalf("%s: %d cases, want 1", name, len(run.Cases))
	}
	return run
}

// applyStrictUntilPlaintextRefused applies a STRICT PeerAuthentication to ns and waits (up to 90 s) until a plaintext
// GET from pod outsider of namespace plain to url fails; it fails the test if it never does.
func applyStrictUntilPlaintextRefused(ctx context.Context, t *testing.T, env *IstioEnv, ns, plain, outsider, url string) {
	t.Helper()
	applyYAML(ctx, t, env, fmt.Sprintf(`apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: strict, namespace: %s}
spec: {mtls: {mode: STRICT}}
`, ns))
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if _, err := plaintextGet(ctx, env.Cluster, plain, outsider, url); err != nil {
			return
		}
	}
	t.Fatalf("STRICT: a plaintext client outside the mesh still gets through after 90 s")
}

// twoNodes returns the names of the cluster's first two nodes; the test fails unless there are two (its hops must
// cross nodes).
func twoNodes(ctx context.Context, t *testing.T, c *Cluster) (string, string) {
	t.Helper()
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) < 2 {
		t.Fatalf("nodes: %d (%v), want 2: the hops must cross nodes", len(nodes.Items), err)
	}
	return nodes.Items[0].Name, nodes.Items[1].Name
}
