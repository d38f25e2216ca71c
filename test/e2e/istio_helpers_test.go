//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// The local Istio of hack/localistio (make istio-up): real istiod and istio-cni agents, real sidecars, the Go HBONE
// node proxy in ztunnel's place and a stand-in waypoint.
const (
	istioNamespace    = "istio-system"
	standInMarkerName = "meshbench-test-standin"
	// cniFieldManager is the field manager the REAL istio-cni node agent (install-cni) writes pod annotations with.
	cniFieldManager = "install-cni"
)

// IstioEnv is the local Istio as the tests see it.
type IstioEnv struct {
	*Cluster
	Clients *kube.Clients
	Version string // istiod's version per the stand-in marker (1.31-dev)
	// ProxyImage is what istiod's injector must put into sidecar pods: the harness's REAL proxyv2 (pilot-agent +
	// upstream Envoy) as the marker records it (<registry>/istio/proxyv2:<tag>-distroless); WaypointImage is the
	// proxyv2 stand-in the istio-waypoint GatewayClass overlay selects for waypoints.
	ProxyImage, WaypointImage string
	// EnvoyVersion is the upstream Envoy the sidecars run (marker envoy.version, e.g. 1.40.0).
	EnvoyVersion string
	// Revision is the installed istiod revision ("default", or e.g. "canary" with no default: ISTIO_CP_REVISION).
	Revision string
}

// RequireIstio returns the cluster with Istio, or skips the test when the local Istio is not up (make istio-up).
// A missing or broken Istio is a failure instead when MESHBENCH_E2E_ISTIO=1 (make e2e-istio), or when istio-up
// succeeded on this very cluster ($MESHBENCH_CLUSTER_DIR/istio/istio.env newer than the cluster's CA: what CI's
// `make cluster-up ISTIO=1` leaves behind).
func RequireIstio(t *testing.T) *IstioEnv {
	t.Helper()
	e := requireIstio(t)
	if e.Revision != "default" {
		t.Skipf("the local Istio is installed as revision %q with no default: this test needs the default install (make istio-up)", e.Revision)
	}
	return e
}

// RequireIstioRevision is RequireIstio for an istiod installed as a named revision with no default
// (make istio-up ISTIO_CP_REVISION=canary); with MESHBENCH_E2E_ISTIO_REVISION set, anything else fails the test.
func RequireIstioRevision(t *testing.T) *IstioEnv {
	t.Helper()
	want := os.Getenv("MESHBENCH_E2E_ISTIO_REVISION")
	if want == "" && localIstioRevision() == "default" {
		t.Skip("needs the local Istio installed as a revision without default: make istio-up ISTIO_CP_REVISION=canary (CI phase 3 sets MESHBENCH_E2E_ISTIO_REVISION)")
	}
	e := requireIstio(t)
	if want != "" && e.Revision != want {
		t.Fatalf("MESHBENCH_E2E_ISTIO_REVISION=%s but the local Istio is revision %q", want, e.Revision)
	}
	return e
}

// localIstioRevision is MESHBENCH_ISTIO_REVISION from istio.env ("default" when absent).
func localIstioRevision() string {
	dir := os.Getenv("MESHBENCH_CLUSTER_DIR")
	if dir == "" {
		dir = DefaultClusterDir
	}
	env, err := readEnvFile(filepath.Join(dir, "istio", "istio.env"))
	if err != nil || env["MESHBENCH_ISTIO_REVISION"] == "" {
		return "default"
	}
	return env["MESHBENCH_ISTIO_REVISION"]
}

func requireIstio(t *testing.T) *IstioEnv {
	t.Helper()
	strict, why := istioExpected()
	if strict && clusterErr != nil {
		t.Fatalf("Istio expected (%s) but the local cluster is not available: %v", why, clusterErr)
	}
	c := RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if missing := istioMissing(ctx, c); missing != "" {
		msg := "local Istio not available (start it with `make istio-up`, or `make cluster-up ISTIO=1`): " + missing
		if strict {
			t.Fatalf("%s [Istio expected: %s]", msg, why)
		}
		t.Skip(msg)
	}
	cl, err := kube.NewClientsForConfig(c.Config)
	if err != nil {
		t.Fatalf("clients: %v", err)
	}
	cm, _ := c.Client.CoreV1().ConfigMaps(istioNamespace).Get(ctx, standInMarkerName, metav1.GetOptions{})
	if cm.Data["proxyv2.image"] == "" || cm.Data["waypoint.image"] == "" || cm.Data["envoy.version"] == "" {
		t.Fatalf("the test bed's marker ConfigMap names no proxyv2.image, waypoint.image or envoy.version (an istio-up older than the real sidecar? run make istio-up): %v", cm.Data)
	}
	return &IstioEnv{Cluster: c, Clients: cl, Version: cm.Data["istio.version"], Revision: localIstioRevision(), ProxyImage: cm.Data["proxyv2.image"],
		WaypointImage: cm.Data["waypoint.image"], EnvoyVersion: cm.Data["envoy.version"]}
}

// istioExpected reports whether a missing Istio must fail the tests, and why.
func istioExpected() (bool, string) {
	if os.Getenv("MESHBENCH_E2E_ISTIO") == "1" {
		return true, "MESHBENCH_E2E_ISTIO=1"
	}
	dir := os.Getenv("MESHBENCH_CLUSTER_DIR")
	if dir == "" {
		dir = DefaultClusterDir
	}
	env, err := os.Stat(filepath.Join(dir, "istio", "istio.env"))
	if err != nil {
		return false, ""
	}
	ca, err := os.Stat(filepath.Join(dir, "pki", "ca.crt"))
	if err == nil && env.ModTime().After(ca.ModTime()) {
		return true, "make istio-up ran on this cluster (" + filepath.Join(dir, "istio", "istio.env") + ")"
	}
	return false, ""
}

// istioMissing says what of the local Istio is not there ("" when istiod, the ztunnel stand-in and the marker are).
func istioMissing(ctx context.Context, c *Cluster) string {
	name := "istiod"
	if rev := localIstioRevision(); rev != "default" {
		name += "-" + rev
	}
	d, err := c.Client.AppsV1().Deployments(istioNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "deployment istio-system/" + name + ": " + err.Error()
	}
	if d.Status.AvailableReplicas < 1 {
		return "istiod has no available replica"
	}
	ds, err := c.Client.AppsV1().DaemonSets(istioNamespace).Get(ctx, "ztunnel", metav1.GetOptions{})
	if err != nil {
		return "daemonset istio-system/ztunnel: " + err.Error()
	}
	if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
		return fmt.Sprintf("ztunnel stand-in %d/%d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	cm, err := c.Client.CoreV1().ConfigMaps(istioNamespace).Get(ctx, standInMarkerName, metav1.GetOptions{})
	if err != nil {
		return "stand-in marker ConfigMap: " + err.Error()
	}
	if cm.Annotations[mesh.StandInAnnotation] != "true" {
		return "stand-in marker ConfigMap lacks annotation " + mesh.StandInAnnotation
	}
	return ""
}

// chainScenario is a fortio-chain of three services in series (chain-0 -> chain-1 -> chain-2) on the local-cluster
// profile, in one namespace or spread over three.
func chainScenario(prefix string, multi bool) (*scenario.Scenario, scenario.Topology) {
	topo := scenario.Topology{Name: "single", Kind: scenario.TopologySingle}
	if multi {
		topo = scenario.Topology{Name: "multi3", Kind: scenario.TopologyMulti, Namespaces: 3}
	}
	s := &scenario.Scenario{
		APIVersion: "meshbench.dev/v1alpha1",
		Kind:       "Scenario",
		Metadata:   scenario.Metadata{Name: prefix},
		Spec: scenario.Spec{
			Profile: scenario.ProfileLocalCluster,
			Workload: scenario.Workload{
				App:             scenario.AppFortioChain,
				Chain:           &scenario.Chain{Depth: 2, FanOut: 1, Serial: true},
				Topologies:      []scenario.Topology{topo},
				Replicas:        1,
				NamespacePrefix: prefix,
			},
		},
	}
	setDefaults(s)
	return s, s.Spec.Workload.Topologies[0]
}

// deployChain deploys the chain with meshbench's own workloads.Deployer and waits until it is ready; the app is
// torn down when the test ends.
func (e *IstioEnv) deployChain(t *testing.T, prefix string, multi bool) (*scenario.Scenario, target.Target) {
	t.Helper()
	s, topo := chainScenario(prefix, multi)
	d := &workloads.Deployer{Clients: e.Clients, RunID: e.RunID}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	target, err := d.Ensure(ctx, s, topo)
	if err != nil {
		t.Fatalf("deploy fortio-chain: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, ns := range target.Namespaces {
				e.DumpNamespace(t, ns)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := d.Teardown(ctx, target); err != nil {
			t.Logf("teardown: %v", err)
		}
	})
	if err := d.WaitReady(ctx, target, 3*time.Minute); err != nil {
		t.Fatalf("fortio-chain not ready: %v", err)
	}
	return s, target
}

// realIstioEvidence checks, beyond mesh.Prove, that the REAL Istio components did the work for mode: istiod's
// injector (its injectedAnnotations, the proxyv2 image, native sidecar, status annotation naming istio-proxy), the
// istio-cni node agent (the redirection annotation written by field manager install-cni), istiod's waypoint
// controller (Deployment labelled gateway.istio.io/managed, owned by the Gateway).
func (e *IstioEnv) realIstioEvidence(ctx context.Context, target target.Target, mode scenario.Mode) error {
	var problems []string
	for _, ns := range target.Namespaces {
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: target.AppSelector})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if err := e.podEvidence(p, mode); err != nil {
				problems = append(problems, fmt.Sprintf("pod %s/%s: %v", p.Namespace, p.Name, err))
			}
		}
		if mode == scenario.ModeWaypoint {
			dep, err := e.Client.AppsV1().Deployments(ns).Get(ctx, "waypoint", metav1.GetOptions{})
			if err != nil {
				problems = append(problems, fmt.Sprintf("waypoint deployment in %s: %v", ns, err))
				continue
			}
			if err := e.waypointEvidence(dep); err != nil {
				problems = append(problems, fmt.Sprintf("waypoint %s/%s: %v", ns, dep.Name, err))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n  "))
	}
	return nil
}

func (e *IstioEnv) podEvidence(p corev1.Pod, mode scenario.Mode) error {
	status, hasStatus := p.Annotations[mesh.AnnotationSidecarStatus]
	redirection, hasRedirection := p.Annotations[mesh.AnnotationRedirection]
	switch mode {
	case scenario.ModeSidecar:
		var st struct {
			InitContainers []string `json:"initContainers"`
		}
		if err := json.Unmarshal([]byte(status), &st); err != nil || !hasStatus {
			return fmt.Errorf("annotation %s=%q is not the injector's JSON", mesh.AnnotationSidecarStatus, status)
		}
		if !contains(st.InitContainers, mesh.ProxyContainer) {
			return fmt.Errorf("injector status %s does not list a native %s", status, mesh.ProxyContainer)
		}
		if p.Annotations[mesh.DataPlaneAnnotation] != mesh.DataPlaneUpstreamEnvoyValue || p.Annotations[mesh.StandInAnnotation] != "" {
			return fmt.Errorf("annotations %s=%q %s=%q: want the real sidecar's marker (istiod's injectedAnnotations)", mesh.DataPlaneAnnotation,
				p.Annotations[mesh.DataPlaneAnnotation], mesh.StandInAnnotation, p.Annotations[mesh.StandInAnnotation])
		}
		for _, c := range p.Spec.InitContainers {
			if c.Name == mesh.ProxyContainer {
				if c.Image != e.ProxyImage || c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
					return fmt.Errorf("%s image %s restartPolicy %v, want %s as a native sidecar", c.Name, c.Image, ptrString(c.RestartPolicy), e.ProxyImage)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s init container", mesh.ProxyContainer)
	case scenario.ModeAmbient, scenario.ModeWaypoint:
		if redirection != mesh.RedirectionEnabled {
			return fmt.Errorf("%s=%q", mesh.AnnotationRedirection, redirection)
		}
		if !annotationWrittenBy(p, mesh.AnnotationRedirection, cniFieldManager) {
			return fmt.Errorf("%s not written by field manager %q (the istio-cni node agent)", mesh.AnnotationRedirection, cniFieldManager)
		}
	case scenario.ModeNone:
		if hasStatus || hasRedirection {
			return fmt.Errorf("still meshed (status=%v redirection=%q)", hasStatus, redirection)
		}
	}
	return nil
}

func (e *IstioEnv) waypointEvidence(dep *appsv1.Deployment) error {
	if dep.Labels["gateway.istio.io/managed"] != "istio.io-mesh-controller" {
		return fmt.Errorf("not made by istiod's waypoint controller (labels %v)", dep.Labels)
	}
	owned := false
	for _, o := range dep.OwnerReferences {
		owned = owned || o.Kind == "Gateway"
	}
	if !owned {
		return fmt.Errorf("not owned by a Gateway")
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == mesh.ProxyContainer && c.Image == e.WaypointImage {
			if dep.Spec.Template.Annotations[mesh.DataPlaneAnnotation] != mesh.DataPlaneUpstreamEnvoyValue {
				return fmt.Errorf("pod template lacks %s: %s (gatewayClasses overlay not applied by istiod)", mesh.DataPlaneAnnotation, mesh.DataPlaneUpstreamEnvoyValue)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s container with image %s (the real proxyv2 the GatewayClass overlay selects)", mesh.ProxyContainer, e.WaypointImage)
}

// annotationWrittenBy reports whether manager owns metadata.annotations[key] in the pod's managedFields.
func annotationWrittenBy(p corev1.Pod, key, manager string) bool {
	for _, mf := range p.ManagedFields {
		if mf.Manager != manager || mf.FieldsV1 == nil {
			continue
		}
		if strings.Contains(mf.FieldsV1.GetRawString(), `"f:`+key+`"`) {
			return true
		}
	}
	return false
}

// chainTraffic sends one request through the whole chain: wget to the entry Service from inside the last chain pod
// (so in ambient modes the request leaves a captured pod), retrying for up to a minute.
func (e *IstioEnv) chainTraffic(ctx context.Context, target target.Target) (string, error) {
	last := target.Services[len(target.Services)-1]
	var from corev1.Pod
	for _, ns := range target.Namespaces {
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: target.AppSelector + "," + workloads.ComponentLabel + "=" + last})
		if err != nil {
			return "", err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && PodReady(&p) {
				from = p
			}
		}
	}
	if from.Name == "" {
		return "", fmt.Errorf("no ready pod of %s", last)
	}
	var out string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		// The agent image is static and has no shell: its own curl (meshbench-agent curl) sends the request.
		stdout, _, err := e.Exec(ctx, from.Namespace, from.Name, "app", "/usr/local/bin/meshbench-agent", "curl", "--timeout", "10s", target.EntryURL)
		out, lastErr = stdout, err
		return err == nil && strings.HasPrefix(stdout, "HTTP/1.1 200 "), nil
	})
	if err != nil {
		return out, fmt.Errorf("GET %s from %s/%s: %v (last output %q)", target.EntryURL, from.Namespace, from.Name, lastErr, strings.TrimSpace(out))
	}
	return fmt.Sprintf("GET %s from %s/%s: 200", target.EntryURL, from.Namespace, from.Name), nil
}

// outboundOKRE: the node proxy's (hack/localistio/hbonenode) counter of outbound connections it connected, one
// line per protocol/via label set.
var outboundOKRE = regexp.MustCompile(`(?m)^hbone_node_outbound_connections_total\{([^}]*)\} (\S+)$`)

// ztunnelForwarded sums the outbound connections the ztunnel stand-ins (the Go HBONE node proxy) connected, any
// protocol and next hop, from their :15020/metrics via pods/proxy.
func (e *IstioEnv) ztunnelForwarded(ctx context.Context) (int, error) {
	pods, err := e.Client.CoreV1().Pods(istioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		body, err := kube.ProxyGet(ctx, e.Client, "pods", p.Namespace, p.Name+":15020", "metrics", nil)
		if err != nil {
			return 0, fmt.Errorf("ztunnel %s metrics: %w", p.Name, err)
		}
		if !bytes.Contains(body, []byte("hbone_node_info")) {
			return 0, fmt.Errorf("ztunnel %s: no hbone_node_info in %q", p.Name, body)
		}
		for _, m := range outboundOKRE.FindAllSubmatch(body, -1) {
			if !bytes.Contains(m[1], []byte(`result="ok"`)) {
				continue
			}
			v, err := strconv.ParseFloat(string(m[2]), 64)
			if err != nil {
				return 0, fmt.Errorf("ztunnel %s: %s: %w", p.Name, m[0], err)
			}
			n += int(v)
		}
	}
	return n, nil
}

// scaleIstiod sets istiod's replicas and waits until that many are available (0: until its pods are gone).
func (e *IstioEnv) scaleIstiod(ctx context.Context, replicas int32) error {
	body := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.Client.AppsV1().Deployments(istioNamespace).Patch(ctx, "istiod", types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Client.CoreV1().Pods(istioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=istiod"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, p := range pods.Items {
			if PodReady(&p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		if replicas == 0 {
			return len(pods.Items) == 0, nil
		}
		return ready >= int(replicas), nil
	})
}

// ztunnelNodeSelectorPatch stops (stop=true) or restores the ztunnel stand-in on every node by giving the DaemonSet
// a nodeSelector no node matches, or removing it again.
const ztunnelOffLabel = "meshbench.dev/e2e-no-ztunnel"

func (e *IstioEnv) setZtunnel(ctx context.Context, running bool) error {
	body := []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:"true"}}}}}`, ztunnelOffLabel))
	if running {
		body = []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:null}}}}}`, ztunnelOffLabel))
	}
	if _, err := e.Client.AppsV1().DaemonSets(istioNamespace).Patch(ctx, "ztunnel", types.StrategicMergePatchType, body, metav1.PatchOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := e.Client.AppsV1().DaemonSets(istioNamespace).Get(ctx, "ztunnel", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := e.Client.CoreV1().Pods(istioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
		if err != nil {
			return false, nil
		}
		if !running {
			return ds.Status.DesiredNumberScheduled == 0 && len(pods.Items) == 0, nil
		}
		return ds.Status.ObservedGeneration >= ds.Generation && ds.Status.DesiredNumberScheduled == int32(len(e.Nodes)) &&
			ds.Status.NumberReady == ds.Status.DesiredNumberScheduled, nil
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
