package workloads

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/internal/kube"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/scenario"
)

func mustScenario(t *testing.T, y string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatalf("parse scenario: %v", err)
	}
	return s
}

const boaScenario = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: boa}
spec:
  workload:
    app: bank-of-anthos
    replicas: 2
    nodeSelector: {meshbench.dev/pool: apps}
    tolerations:
    - {key: meshbench.dev/pool, operator: Equal, value: apps, effect: NoSchedule}
    topologies:
    - kind: single
    - kind: multi
`

const chainScenario = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: chain}
spec:
  profile: localcluster
  workload:
    app: fortio-chain
    chain: {depth: 2, fanOut: 2, payloadBytes: 1024}
    topologies:
    - kind: single
    - kind: multi
      namespaces: 3
      replicas: 2
  load:
    path: /echo
`

const bookinfoScenario = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: bookinfo}
spec:
  workload:
    app: bookinfo
    replicas: 2
    nodeSelector: {meshbench.dev/pool: apps}
    resources: {cpuRequest: 100m, memoryLimit: 512Mi}
    topologies:
    - kind: single
    - kind: multi
`

func TestObjectsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, scenario string
		topo           int
	}{
		{"bank-of-anthos-single", boaScenario, 0},
		{"bank-of-anthos-multi", boaScenario, 1},
		{"fortio-chain-single", chainScenario, 0},
		{"fortio-chain-multi3", chainScenario, 1},
		{"bookinfo-single", bookinfoScenario, 0},
		{"bookinfo-multi", bookinfoScenario, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustScenario(t, tc.scenario)
			objs, target, err := Objects(s, s.Spec.Workload.Topologies[tc.topo], "golden-run")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			tj, _ := json.MarshalIndent(target, "# ", "  ")
			buf.WriteString("# target: " + string(tj) + "\n")
			if err := kube.RenderYAML(&buf, objs); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tc.name+".golden.yaml"), buf.Bytes())

			// Deterministic: a second build renders the same bytes.
			objs2, _, _ := Objects(s, s.Spec.Workload.Topologies[tc.topo], "golden-run")
			var again bytes.Buffer
			again.WriteString("# target: " + string(tj) + "\n")
			_ = kube.RenderYAML(&again, objs2)
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Fatal("Objects is not deterministic")
			}
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got)
}

var addrRE = regexp.MustCompile(`[a-z0-9.-]+:(8080|5432)`)

func TestBankOfAnthosMultiUsesFQDNsEverywhere(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, boaScenario)
	objs, target, err := Objects(s, s.Spec.Workload.Topologies[1], "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(target.Namespaces) != len(boaComponents) {
		t.Fatalf("multi with namespaces 0 should put each of the %d components in its own namespace, got %v", len(boaComponents), target.Namespaces)
	}
	secrets, cms := map[string]bool{}, map[string]int{}
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			cms[v.Namespace]++
			for k, val := range v.Data {
				for _, a := range addrRE.FindAllString(val, -1) {
					if !strings.Contains(a, ".svc.cluster.local:") {
						t.Errorf("ConfigMap %s/%s key %s: address %q is not a FQDN", v.Namespace, v.Name, k, a)
					}
				}
			}
		case *corev1.Secret:
			secrets[v.Namespace] = true
		}
	}
	for _, ns := range target.Namespaces {
		if !secrets[ns] || cms[ns] != 5 {
			t.Errorf("namespace %s: jwt-key secret %v, %d ConfigMaps; want the secret and 5 ConfigMaps in every namespace", ns, secrets[ns], cms[ns])
		}
	}
	if !strings.HasPrefix(target.EntryURL, "http://frontend.mb-multi-0.svc.cluster.local:80/home") {
		t.Errorf("EntryURL = %q", target.EntryURL)
	}
}

func TestBankOfAnthosSingleUsesShortNames(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, boaScenario)
	objs, _, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "service-api-config" {
			if got := cm.Data["BALANCES_API_ADDR"]; got != "balancereader:8080" {
				t.Errorf("single namespace BALANCES_API_ADDR = %q, want balancereader:8080", got)
			}
		}
	}
}

func TestBankOfAnthosSpec(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, boaScenario)
	objs, target, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(target.Workloads); got != 8 {
		t.Fatalf("%d workloads, want 6 Deployments + 2 StatefulSets", got)
	}
	if target.ExpectedPods() != 6*2+2 {
		t.Errorf("ExpectedPods = %d, want 14 (6 services x 2 replicas + 2 databases)", target.ExpectedPods())
	}
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			c := v.Spec.Template.Spec.Containers[0]
			if want := "us-central1-docker.pkg.dev/bank-of-anthos-ci/bank-of-anthos/" + v.Name + ":v0.6.10"; c.Image != want {
				t.Errorf("%s image %q, want %q", v.Name, c.Image, want)
			}
			envs := map[string]string{}
			for _, e := range c.Env {
				envs[e.Name] = e.Value
			}
			java := slices.Contains([]string{boABalanceReader, boATransactionHistory, boALedgerWriter}, v.Name)
			if m, ok := envs["ENABLE_METRICS"]; envs["ENABLE_TRACING"] != "false" || ok != java || (java && m != "false") {
				t.Errorf("%s: tracing (all) and metrics (the Java services read it) exporters must be off outside GCP: %v", v.Name, envs)
			}
			if c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("%s: root filesystem must be read-only", v.Name)
			}
			if ps := v.Spec.Template.Spec.SecurityContext; ps == nil || *ps.RunAsUser != 1000 || !*ps.RunAsNonRoot {
				t.Errorf("%s: pod must run as uid 1000, non-root", v.Name)
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/ready" {
				t.Errorf("%s: readiness probe must be GET /ready", v.Name)
			}
			if v.Spec.Template.Spec.NodeSelector["meshbench.dev/pool"] != "apps" {
				t.Errorf("%s: nodeSelector not applied", v.Name)
			}
			if tl := v.Spec.Template.Spec.Tolerations; len(tl) != 1 || tl[0].Key != "meshbench.dev/pool" || tl[0].Value != "apps" || tl[0].Effect != corev1.TaintEffectNoSchedule {
				t.Errorf("%s: tolerations not applied: %+v", v.Name, tl)
			}
			if slices.Contains([]string{boABalanceReader, boATransactionHistory}, v.Name) {
				if sp := c.StartupProbe; sp == nil || sp.HTTPGet.Path != "/healthy" || sp.FailureThreshold != 30 || sp.PeriodSeconds != 10 {
					t.Errorf("%s: startup probe must be /healthy 30 x 10 s, got %+v", v.Name, sp)
				}
			}
		case *appsv1.StatefulSet:
			if *v.Spec.Replicas != 1 {
				t.Errorf("%s: databases stay at one replica", v.Name)
			}
			if tl := v.Spec.Template.Spec.Tolerations; len(tl) != 1 || tl[0].Key != "meshbench.dev/pool" {
				t.Errorf("%s: tolerations not applied to the database: %+v", v.Name, tl)
			}
		}
	}
}

func TestChain(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, chainScenario)
	objs, target, err := Objects(s, s.Spec.Workload.Topologies[1], "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"mb-multi3-0", "mb-multi3-1", "mb-multi3-2"}; !slices.Equal(target.Namespaces, want) {
		t.Fatalf("namespaces %v, want %v", target.Namespaces, want)
	}
	if target.EntryURL != "http://chain-0.mb-multi3-0.svc.cluster.local:8080/echo?size=1024" {
		t.Errorf("EntryURL = %q", target.EntryURL)
	}
	if len(target.Services) != 7 || target.ExpectedPods() != 14 {
		t.Errorf("depth 2 fan-out 2 = 7 services x 2 replicas; got %d services, %d pods", len(target.Services), target.ExpectedPods())
	}
	for _, o := range objs {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
		switch d.Name {
		case "chain-0":
			if !strings.Contains(args, "--forward http://chain-1.mb-multi3-1.svc.cluster.local:8080,http://chain-2.mb-multi3-2.svc.cluster.local:8080") {
				t.Errorf("chain-0 args %q", args)
			}
		case "chain-3", "chain-4", "chain-5", "chain-6":
			if strings.Contains(args, "--forward") {
				t.Errorf("%s is a leaf, args %q", d.Name, args)
			}
		}
		if d.Spec.Template.Spec.Containers[0].Image != scenario.LocalClusterAgentImage {
			t.Errorf("%s image %q", d.Name, d.Spec.Template.Spec.Containers[0].Image)
		}
	}
}

// TestChainDepthPerTopology: a topology's chainDepth replaces workload.chain.depth; the others keep it, and the
// namespaces follow the defaulted names (single-d<depth>), so topologies of several depths never share one.
func TestChainDepthPerTopology(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: chain}
spec:
  workload:
    app: fortio-chain
    chain: {depth: 2, fanOut: 1}
    topologies:
    - {kind: single, chainDepth: 4}
    - {kind: single}
`)
	for i, want := range []struct {
		ns       string
		services int
		leaf     string
	}{{"mb-single-d4", 5, "chain-4"}, {"mb-single", 3, "chain-2"}} {
		objs, target, err := Objects(s, s.Spec.Workload.Topologies[i], "r1")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(target.Namespaces, []string{want.ns}) || len(target.Services) != want.services {
			t.Errorf("topology %d: namespaces %v, %d services; want [%s], %d", i, target.Namespaces, len(target.Services), want.ns, want.services)
		}
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok && d.Name == want.leaf && strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "--forward") {
				t.Errorf("topology %d: %s is the leaf of the chain but forwards", i, d.Name)
			}
		}
	}
}

func TestChainChildren(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		i, n, f int
		want    []int
	}{
		{0, 3, 1, []int{1}}, {1, 3, 1, []int{2}}, {2, 3, 1, nil},
		{0, 7, 2, []int{1, 2}}, {2, 7, 2, []int{5, 6}}, {3, 7, 2, nil},
		{0, 1, 3, nil},
	} {
		if got := chainChildren(tc.i, tc.n, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("ChainChildren(%d,%d,%d) = %v, want %v", tc.i, tc.n, tc.f, got, tc.want)
		}
	}
}

func TestObjectsOrderAndLabels(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, boaScenario)
	objs, target, err := Objects(s, s.Spec.Workload.Topologies[1], "r9")
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, o := range objs {
		k := kindOrder[o.GetObjectKind().GroupVersionKind().Kind]
		if k < last {
			t.Fatalf("objects not in apply order at %s", o.GetObjectKind().GroupVersionKind().Kind)
		}
		last = k
		m := metaOf(o)
		if m.GetLabels()["meshbench.dev/run"] != "r9" || m.GetLabels()["app.kubernetes.io/managed-by"] != "meshbench" {
			t.Errorf("%s %s lacks the run labels: %v", o.GetObjectKind().GroupVersionKind().Kind, m.GetName(), m.GetLabels())
		}
	}
	if target.AppSelector != "app.kubernetes.io/managed-by=meshbench,meshbench.dev/app=bank-of-anthos,meshbench.dev/run=r9" {
		t.Errorf("AppSelector = %q", target.AppSelector)
	}
	var _ []runtime.Object = objs
}

func TestNamespacesClamp(t *testing.T) {
	t.Parallel()
	got := Namespaces("p-", scenario.Topology{Name: "multi10", Kind: scenario.TopologyMulti, Namespaces: 10}, 8)
	if len(got) != 8 {
		t.Errorf("10 namespaces for 8 components should clamp to 8, got %v", got)
	}
	if got := Namespaces("p-", scenario.Topology{Name: "single", Kind: scenario.TopologySingle}, 8); !slices.Equal(got, []string{"p-single"}) {
		t.Errorf("single: %v", got)
	}
}
