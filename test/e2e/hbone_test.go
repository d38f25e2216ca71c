//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
)

// TestIstioAmbientHBONE is issue 31 item 1's proof on the local cluster: in ambient mode the Go HBONE node proxy (the
// ztunnel stand-in, hack/localistio/cmd/hbone-node) carries every hop of a three-service app across the two nodes
// as HBONE with mTLS: each pod's certificate comes from istiod's CA for its own identity, the node proxies know
// the pods from istiod's workload discovery, the load gets no error and the node proxies count HBONE streams out
// and in; a STRICT PeerAuthentication then refuses plaintext from outside the mesh while the meshed load still
// passes.
//
// Not parallel: the node proxies' counters are per node, and another test's ambient traffic would move them.
func TestIstioAmbientHBONE(t *testing.T) {
	env := RequireIstio(t)
	c := env.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	n0, n1 := twoNodes(ctx, t, c)
	sfx := randomSuffix(4)
	ns, meshed, plain := "mb-e2e-hbone-"+sfx, "mb-e2e-hbonec-"+sfx, "mb-e2e-hbonep-"+sfx
	ambient := map[string]string{mesh.LabelDataplaneMode: "ambient"}
	c.CreateNamespaces(ctx, t, map[string]map[string]string{ns: ambient, meshed: ambient, plain: {}})
	// frontend on one node, backend on the other, store back on the first: every hop crosses nodes.
	chainOnNodes(ctx, t, c, ns, map[string]string{"frontend": n0, "backend": n1, "store": n0})
	client := loadClientPod(ctx, t, c, meshed, "client")
	outsider := loadClientPod(ctx, t, c, plain, "outsider")
	url := fmt.Sprintf("http://frontend.%s:%d/", ns, appPort)

	// 1. Enrolled by the real istio-cni agent, and known to every node proxy as HBONE workloads (a pod runs
	// uncaptured and unannounced for a moment after it starts: hack/localistio/README.md pitfall 8).
	var enrolled []corev1.Pod
	for _, n := range []string{ns, meshed} {
		pods, err := c.Client.CoreV1().Pods(n).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		enrolled = append(enrolled, pods.Items...)
	}
	proxies := nodeProxies(ctx, t, c)
	waitNodeProxiesKnow(ctx, t, c, proxies, enrolled)

	// 2. Each node proxy holds istiod's certificate for the identity of each enrolled pod on its node.
	checkPodCertificates(ctx, t, c, proxies, enrolled)

	// 3. Meshed load: every hop as HBONE, streams counted out and in, no error anywhere.
	hboneOut := map[string]string{"protocol": "hbone", "via": "node", "result": "ok"}
	hboneIn := map[string]string{"protocol": "hbone", "result": "allowed"}
	outErr := map[string]string{"result": "error"}
	before := nodeProxyCounters(ctx, t, c, proxies, hboneOut, hboneIn, outErr)
	// On the wire between the nodes (the local cluster's only inter-node link: the veth whose host end holds node1's
	// IP): HBONE's 15008 carries the load, the app port nothing, and every new 15008 connection starts with a TLS
	// handshake record.
	capture := startCapture(t, netip.MustParseAddr(c.Env["MESHBENCH_NODE1_IP"]), hbonePort, appPort)
	sent := envoyLoad(ctx, t, c, meshed, client, url, 100, 10*time.Second)
	capture.Stop()
	after := nodeProxyCounters(ctx, t, c, proxies, hboneOut, hboneIn, outErr)
	checkWire(t, capture)
	// client -> frontend (4 connections), frontend -> backend, backend -> store: at least one stream per hop.
	if d := after[0] - before[0]; d < 3 {
		t.Errorf("outbound HBONE streams via the destination's node proxy grew by %.0f, want >= 3 (one per hop)", d)
	}
	if d := after[1] - before[1]; d < 3 {
		t.Errorf("inbound HBONE streams allowed grew by %.0f, want >= 3", d)
	}
	if d := after[2] - before[2]; d != 0 {
		t.Errorf("%.0f outbound connections failed during the load", d)
	}
	t.Logf("PERMISSIVE: %d requests; node proxies: %.0f HBONE streams out, %.0f in", sent, after[0]-before[0], after[1]-before[1])

	// 4. STRICT, namespace-wide: istiod sends istio_converted_static_strict, the node proxy refuses plaintext on the
	// pod's 15006, HBONE still passes.
	if out, err := plaintextGet(ctx, c, plain, outsider, url); err != nil {
		t.Fatalf("PERMISSIVE: a plaintext client outside the mesh must get through: %v %s", err, out)
	}
	plainDenied := map[string]string{"protocol": "plaintext", "result": "denied"}
	deniedBefore := nodeProxyCounters(ctx, t, c, proxies, plainDenied)[0]
	applyStrictUntilPlaintextRefused(ctx, t, env, ns, plain, outsider, url)
	if d := nodeProxyCounters(ctx, t, c, proxies, plainDenied)[0] - deniedBefore; d < 1 {
		t.Errorf("STRICT: plaintext refused, but no node proxy counted a denial (%.0f)", d)
	}
	sent = envoyLoad(ctx, t, c, meshed, client, url, 100, 10*time.Second)
	t.Logf("STRICT: plaintext refused by the node proxy, %d meshed requests through every hop", sent)
}

// The HBONE port and the app's port (chainOnNodes).
const hbonePort, appPort = 15008, 8080

// checkWire: payload on 15008 between the nodes, none on the app port, new 15008 connections start with a TLS
// handshake record (0x16 0x03) and no 15008 payload carries plaintext HTTP.
func checkWire(t *testing.T, capture *tcpCapture) {
	t.Helper()
	byPort, flows, plainHTTP := capture.result()
	if byPort[hbonePort] == 0 {
		t.Errorf("no TCP payload on port %d between the nodes during the load", hbonePort)
	}
	if byPort[appPort] != 0 {
		t.Errorf("the app port %d carried %d payload bytes between the nodes: plaintext, not HBONE", appPort, byPort[appPort])
	}
	tlsFlows := 0
	for flow, first := range flows {
		switch {
		case first == nil: // opened, no payload seen (yet)
		case len(first) >= 2 && first[0] == 0x16 && first[1] == 0x03:
			tlsFlows++
		default:
			t.Errorf("connection %s -> :%d began with % x, not a TLS handshake record", flow, hbonePort, first)
		}
	}
	if tlsFlows == 0 {
		t.Errorf("no new connection to %d began with a TLS handshake between the nodes (%d opened)", hbonePort, len(flows))
	}
	if plainHTTP != 0 {
		t.Errorf("%d payloads on port %d carry plaintext HTTP", plainHTTP, hbonePort)
	}
	t.Logf("between the nodes: %d bytes on %d, %d on %d; %d new HBONE connections, all TLS", byPort[hbonePort], hbonePort,
		byPort[appPort], appPort, tlsFlows)
}

// chainOnNodes runs frontend -> backend -> store (meshbench-agent serve --forward, Services on appPort), each
// Deployment pinned to the node given.
func chainOnNodes(ctx context.Context, t *testing.T, c *Cluster, ns string, node map[string]string) {
	t.Helper()
	image := c.Image(t, "AGENT")
	next := map[string]string{"frontend": "backend", "backend": "store", "store": ""}
	for _, name := range []string{"frontend", "backend", "store"} {
		args := []string{"serve", "--http-port", fmt.Sprint(appPort)}
		if n := next[name]; n != "" {
			args = append(args, "--forward", fmt.Sprintf("http://%s:%d", n, appPort))
		}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node[name]}, Containers: []corev1.Container{{
						Name: "app", Image: image, Args: args, ImagePullPolicy: corev1.PullIfNotPresent,
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: appPort}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(appPort)}}, PeriodSeconds: 2},
					}}},
				}},
		}
		if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{
				Name: "http", Port: appPort, TargetPort: intstr.FromInt32(appPort), AppProtocol: ptr.To("http")}}}}
		if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"frontend", "backend", "store"} {
		if err := waitDeploymentAvailable(ctx, c, ns, name); err != nil {
			t.Fatal(err)
		}
	}
}

// nodeProxies are the ztunnel DaemonSet's pods (the Go HBONE node proxy) by node.
func nodeProxies(ctx context.Context, t *testing.T, c *Cluster) map[string]corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(istioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("node proxies: %v (%d pods)", err, len(pods.Items))
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.Spec.NodeName] = p
	}
	return out
}

func nodeProxyGet(ctx context.Context, t *testing.T, c *Cluster, p corev1.Pod, path string) []byte {
	t.Helper()
	b, err := kube.ProxyGet(ctx, c.Client, "pods", p.Namespace, p.Name+":15020", path, nil)
	if err != nil {
		t.Fatalf("node proxy %s %s: %v", p.Name, path, err)
	}
	return b
}

// waitNodeProxiesKnow waits until every node proxy's workload discovery lists every pod as an HBONE workload.
func waitNodeProxiesKnow(ctx context.Context, t *testing.T, c *Cluster, proxies map[string]corev1.Pod, pods []corev1.Pod) {
	t.Helper()
	var missing []string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		missing = nil
		for _, proxy := range proxies {
			var wds struct {
				Workloads []struct{ Namespace, Name, Tunnel string }
			}
			if err := json.Unmarshal(nodeProxyGet(ctx, t, c, proxy, "/debug/wds"), &wds); err != nil {
				t.Fatalf("node proxy %s /debug/wds: %v", proxy.Name, err)
			}
			tunnel := map[string]string{}
			for _, w := range wds.Workloads {
				tunnel[w.Namespace+"/"+w.Name] = w.Tunnel
			}
			for _, p := range pods {
				if tunnel[p.Namespace+"/"+p.Name] != "HBONE" {
					missing = append(missing, fmt.Sprintf("%s: %s/%s tunnel %q", proxy.Spec.NodeName, p.Namespace, p.Name, tunnel[p.Namespace+"/"+p.Name]))
				}
			}
		}
		if len(missing) == 0 {
			return
		}
	}
	t.Fatalf("after 90 s the node proxies do not know these pods as HBONE workloads:\n  %s", strings.Join(missing, "\n  "))
}

// checkPodCertificates: the node proxy of each pod's node holds a certificate whose only URI SAN is the pod's
// SPIFFE identity, chaining to the mesh root istiod publishes (ConfigMap istio-ca-root-cert).
func checkPodCertificates(ctx context.Context, t *testing.T, c *Cluster, proxies map[string]corev1.Pod, pods []corev1.Pod) {
	t.Helper()
	roots := x509.NewCertPool()
	cm, err := c.Client.CoreV1().ConfigMaps(pods[0].Namespace).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
	if err != nil || !roots.AppendCertsFromPEM([]byte(cm.Data["root-cert.pem"])) {
		t.Fatalf("istio-ca-root-cert: %v", err)
	}
	for _, p := range pods {
		sa := p.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		id := fmt.Sprintf("spiffe://cluster.local/ns/%s/sa/%s", p.Namespace, sa)
		var certs []struct {
			Identity string
			Chain    []string
		}
		proxy := proxies[p.Spec.NodeName]
		if err := json.Unmarshal(nodeProxyGet(ctx, t, c, proxy, "/debug/certs"), &certs); err != nil {
			t.Fatalf("node proxy %s /debug/certs: %v", proxy.Name, err)
		}
		found := false
		for _, cert := range certs {
			if cert.Identity != id {
				continue
			}
			found = true
			var chain []*x509.Certificate
			for _, s := range cert.Chain {
				b, _ := pem.Decode([]byte(s))
				if b == nil {
					t.Fatalf("%s: chain element is not PEM", id)
				}
				x, err := x509.ParseCertificate(b.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				chain = append(chain, x)
			}
			inter := x509.NewCertPool()
			for _, x := range chain[1:] {
				inter.AddCert(x)
			}
			if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("%s's certificate on %s does not chain to istio-ca-root-cert: %v", id, p.Spec.NodeName, err)
			}
			if len(chain[0].URIs) != 1 || chain[0].URIs[0].String() != id {
				t.Errorf("%s's certificate names %v", id, chain[0].URIs)
			}
		}
		if !found {
			t.Errorf("node proxy %s holds no certificate for %s (pod %s/%s)", proxy.Name, id, p.Namespace, p.Name)
		}
	}
}

// nodeProxyCounters sums, over every node proxy, the hbone_node_*_connections_total series whose labels include
// each filter: outbound when the filter has "via" or no "protocol" (result only), inbound otherwise.
func nodeProxyCounters(ctx context.Context, t *testing.T, c *Cluster, proxies map[string]corev1.Pod, filters ...map[string]string) []float64 {
	t.Helper()
	sums := make([]float64, len(filters))
	for _, proxy := range proxies {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(nodeProxyGet(ctx, t, c, proxy, "/metrics")))
		if err != nil {
			t.Fatalf("node proxy %s metrics: %v", proxy.Name, err)
		}
		if _, ok := fams["hbone_node_info"]; !ok {
			t.Fatalf("node proxy %s has no hbone_node_info: not the Go HBONE node proxy", proxy.Name)
		}
		for i, f := range filters {
			name := "hbone_node_inbound_connections_total"
			if _, via := f["via"]; via || f["protocol"] == "" {
				name = "hbone_node_outbound_connections_total"
			}
			for _, m := range fams[name].GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				match := true
				for k, v := range f {
					match = match && labels[k] == v
				}
				if match {
					sums[i] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sums
}
