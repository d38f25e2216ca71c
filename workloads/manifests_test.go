package workloads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

const manifestsBase = "testdata/manifests"

// manifestsScenario parses a scenario of app manifests whose paths are read from testdata/manifests.
func manifestsScenario(t *testing.T, manifests, rest string) *scenario.Scenario {
	t.Helper()
	s := mustScenario(t, `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: own}
spec:
  workload:
    app: manifests
    manifests:
`+manifests+rest)
	s.Spec.Workload.Manifests.BaseDir = manifestsBase
	return s
}

const kustomizeTopologies = `    replicas: 2
    nodeSelector: {meshbench.dev/pool: apps}
    tolerations:
    - {key: meshbench.dev/pool, operator: Exists, effect: NoSchedule}
    topologies:
    - kind: single
    - kind: multi
      name: multi3
      namespaces: 3
  load:
    targets:
    - {service: frontend, port: 8080, path: /echo}
`

const kustomizeManifests = `      kustomization: kustomize-app
      scale: [frontend, Deployment/backend]
      placement: {backend: 1, Deployment/store: 2, Service/store: 2}
      serviceRefs: [backend, store]
`

func TestManifestsGolden(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, kustomizeManifests, kustomizeTopologies)
	if ps := CheckManifests(s); len(ps) > 0 {
		t.Fatal(ps)
	}
	for i, name := range []string{"manifests-kustomize-single", "manifests-kustomize-multi3"} {
		objs, target, err := Objects(s, s.Spec.Workload.Topologies[i], "golden-run")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		tj, _ := json.MarshalIndent(target, "# ", "  ")
		buf.WriteString("# target: " + string(tj) + "\n")
		if err := kube.RenderYAML(&buf, objs); err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("testdata", name+".golden.yaml"), buf.Bytes())
	}
}

func TestManifestsMultiRewritesAndLabels(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, kustomizeManifests, kustomizeTopologies)
	objs, target, err := Objects(s, s.Spec.Workload.Topologies[1], "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"frontend": "mb-multi3-0", "backend": "mb-multi3-1", "store": "mb-multi3-2"}
	for _, w := range target.Workloads {
		if want[w.Name] != w.Namespace {
			t.Errorf("%s in %s, want %s", w, w.Namespace, want[w.Name])
		}
		wantReplicas := int32(2)
		if w.Name == "store" { // not in scale: the manifest's replicas
			wantReplicas = 1
		}
		if w.Replicas != wantReplicas {
			t.Errorf("%s replicas %d, want %d", w, w.Replicas, wantReplicas)
		}
	}
	if target.EntryURL != "http://frontend.mb-multi3-0.svc.cluster.local:8080/echo" || target.EntryNamespace != "mb-multi3-0" {
		t.Errorf("entry %q in %q", target.EntryURL, target.EntryNamespace)
	}
	if got := strings.Join(target.Namespaces, ","); got != "mb-multi3-0,mb-multi3-1,mb-multi3-2" {
		t.Errorf("namespaces %s", got)
	}
	for _, o := range objs {
		d, ok := o.(*unstructured.Unstructured)
		if !ok || d.GetKind() != "Deployment" {
			continue
		}
		args, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		a := args[0].(map[string]any)["args"].([]any)
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
		if len(sel) != 1 || sel["app"] != d.GetName() {
			t.Errorf("%s: selector changed: %v", d.GetName(), sel)
		}
		tl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if tl[ComponentLabel] != d.GetName() || tl[appLabel] != "manifests" || tl["app"] != d.GetName() {
			t.Errorf("%s: template labels %v", d.GetName(), tl)
		}
		ns, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "spec", "nodeSelector")
		if ns["meshbench.dev/pool"] != "apps" {
			t.Errorf("%s: node selector %v", d.GetName(), ns)
		}
		tol, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "tolerations")
		if len(tol) != 1 || tol[0].(map[string]any)["key"] != "meshbench.dev/pool" || tol[0].(map[string]any)["operator"] != "Exists" {
			t.Errorf("%s: tolerations %v", d.GetName(), tol)
		}
		switch d.GetName() {
		case "frontend":
			if a[len(a)-1] != "http://backend.mb-multi3-1.svc.cluster.local:8080" {
				t.Errorf("frontend args %v", a)
			}
		case "backend":
			if a[len(a)-1] != "http://store.mb-multi3-2.svc.cluster.local:8080" {
				t.Errorf("backend args %v", a)
			}
		}
		c := args[0].(map[string]any)
		if c["image"] != "ghcr.io/meshbench/meshbench-agent:dev" {
			t.Errorf("%s image %v: the kustomization's images transformer did not run", d.GetName(), c["image"])
		}
	}
}

func TestRewriteHosts(t *testing.T) {
	t.Parallel()
	names := map[string]string{"backend": "backend.ns.svc.cluster.local"}
	for in, want := range map[string]string{
		"backend":               "backend.ns.svc.cluster.local",
		"backend:8080":          "backend.ns.svc.cluster.local:8080",
		"http://backend/x":      "http://backend.ns.svc.cluster.local/x",
		"backend-v2":            "backend-v2",
		"my-backend":            "my-backend",
		"backend.other":         "backend.other",
		"backend,backend":       "backend.ns.svc.cluster.local,backend.ns.svc.cluster.local",
		"--up=http://backend:1": "--up=http://backend.ns.svc.cluster.local:1",
	} {
		if got := rewriteHosts(in, names); got != want {
			t.Errorf("rewriteHosts(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestManifestsPaths(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, `      paths: [paths-app]
      scale: [web]
      placement: {web: 1}
      serviceRefs: [backend]
`, `    replicas: 4
    topologies:
    - kind: multi
      namespaces: 2
  load:
    targets:
    - {name: web, url: "http://web.example/"}
`)
	if ps := CheckManifests(s); len(ps) > 0 {
		t.Fatal(ps)
	}
	objs, target, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		u, err := kube.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName())
		if u.GetKind() == "Deployment" {
			c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			cm := c[0].(map[string]any)
			args, _ := json.Marshal(cm["args"])
			envs, _ := json.Marshal(cm["env"])
			if string(args) != `["--upstream=http://backend.mb-multi2-0.svc.cluster.local/x","backend.mb-multi2-0.svc.cluster.local:80","backend-v2","backend.other"]` {
				t.Errorf("args %s", args)
			}
			if !strings.Contains(string(envs), `"value":"backend.mb-multi2-0.svc.cluster.local"`) || !strings.Contains(string(envs), `"my-backend,backend.mb-multi2-0.svc.cluster.local"`) {
				t.Errorf("env %s", envs)
			}
		}
	}
	got := strings.Join(kinds, " ")
	want := "Namespace//mb-multi2-0 Namespace//mb-multi2-1 ConfigMap/mb-multi2-0/settings Service/mb-multi2-0/backend StatefulSet/mb-multi2-0/backend Deployment/mb-multi2-1/web"
	if got != want {
		t.Errorf("objects\n got %s\nwant %s", got, want)
	}
	if target.EntryURL != "http://web.example/" || len(target.Workloads) != 2 {
		t.Errorf("target %+v", target)
	}
	for _, w := range target.Workloads {
		if w.Name == "web" && w.Replicas != 4 || w.Name == "backend" && w.Replicas != 1 {
			t.Errorf("%s replicas %d", w, w.Replicas)
		}
	}
}

func TestCheckManifestsRefuses(t *testing.T) {
	t.Parallel()
	const targets = `  load:
    targets: [{service: web}]
`
	for _, tc := range []struct {
		name, manifests string
		want            []string // path: substring
	}{
		{"cluster-scoped", "      paths: [cluster-scoped/app.yaml]\n", []string{
			"spec.workload.manifests.paths[0]: ", "Namespace/mine (testdata/manifests/cluster-scoped/app.yaml)",
			"ClusterRole/reader (testdata/manifests/cluster-scoped/app.yaml)", "remove them from the manifests, or apply them yourself before the run"}},
		{"missing file", "      paths: [cluster-scoped, nope.yaml]\n", []string{
			"spec.workload.manifests.paths[1]: cannot read testdata/manifests/nope.yaml", "spec.workload.manifests.paths[0]: "}},
		{"bad kustomization", "      kustomization: bad-kustomization\n", []string{
			"spec.workload.manifests.kustomization: kustomize build testdata/manifests/bad-kustomization: ", "does-not-exist.yaml"}},
		{"scale and placement", "      kustomization: kustomize-app\n      scale: [frontend, StatefulSet/backend, nope]\n", []string{
			`spec.workload.manifests.scale[1]: "StatefulSet/backend" names no Deployment or StatefulSet`,
			`spec.workload.manifests.scale[2]: "nope" names no Deployment`, "Deployment/frontend"}},
		{"no workloads", "      paths: [paths-app/list.yaml]\n", []string{"spec.workload.manifests: has no Deployment or StatefulSet"}},
		{"untracked pod kinds", "      paths: [untracked-kinds]\n", untrackedWant("spec.workload.manifests.paths[0]: ", "testdata/manifests/untracked-kinds/app.yaml")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := manifestsScenario(t, tc.manifests, targets)
			ps := CheckManifests(s)
			got := ps.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("problems lack %q:\n%s", w, got)
				}
			}
			if _, _, err := Objects(s, s.Spec.Workload.Topologies[0], "r1"); err == nil {
				t.Error("Objects built refused manifests")
			}
		})
	}
	s := manifestsScenario(t, "      kustomization: kustomize-app\n      placement: {nope: 1}\n", `    topologies: [{kind: multi}]
`+targets)
	if got := CheckManifests(s).Error(); !strings.Contains(got, "spec.workload.manifests.placement[nope]: names no object") {
		t.Errorf("placement: %s", got)
	}
}

// untrackedWant is what the problems of testdata/manifests/untracked-kinds must say about each of its objects that
// runs pods without being a Deployment or StatefulSet: the object, its file and the fix.
func untrackedWant(path, file string) []string {
	var out []string
	for _, ref := range []string{"DaemonSet/node-agent", "Job/migrate", "CronJob/nightly", "Pod/debug", "ReplicaSet/web-rs", "ReplicationController/legacy"} {
		out = append(out, path+ref+" ("+file+"): meshbench tracks Deployments and StatefulSets",
			"convert "+ref+" to a Deployment or StatefulSet or remove it from the manifests")
	}
	return out
}

// TestCheckManifestsUntrackedOnly: the Deployment of the untracked-kinds fixture is fine, each other object is one
// problem of its own (no "cannot place" problem on top), and kinds that hold no pods stay accepted.
func TestCheckManifestsUntrackedOnly(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, "      paths: [untracked-kinds]\n", "  load:\n    targets: [{service: web}]\n")
	ps := CheckManifests(s)
	if len(ps) != 6 {
		t.Errorf("%d problems, want one per untracked object (6):\n%s", len(ps), ps.Error())
	}
	for _, p := range ps {
		if strings.Contains(p.Message, "Deployment/web") || strings.Contains(p.Message, "cannot place") {
			t.Errorf("unexpected problem: %s", p.Message)
		}
	}
}

// TestPlaceableIstioKinds pins the Istio kinds CheckManifests accepts as namespaced to Istio's CRDs: every
// networking.istio.io and security.istio.io CRD has scope Namespaced in istio/istio
// manifests/charts/base/files/crd-all.gen.yaml (commit 86c9f01fd735fb01d8192f5bcaf0d424afb7f14c, 1.31 development).
func TestPlaceableIstioKinds(t *testing.T) {
	t.Parallel()
	upstream := map[string][]string{
		"networking.istio.io": {"DestinationRule", "EnvoyFilter", "Gateway", "ProxyConfig", "ServiceEntry", "Sidecar", "VirtualService", "WorkloadEntry", "WorkloadGroup"},
		"security.istio.io":   {"AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication"},
	}
	n := 0
	for g, kinds := range upstream {
		for _, k := range kinds {
			if !placeableKinds[schema.GroupKind{Group: g, Kind: k}] {
				t.Errorf("%s/%s is namespaced upstream but refused", g, k)
			}
		}
		n += len(kinds)
	}
	for gk := range placeableKinds {
		if strings.HasSuffix(gk.Group, ".istio.io") {
			n--
		}
	}
	if n != 0 {
		t.Errorf("placeableKinds has Istio kinds the pinned CRD file does not (difference %d)", -n)
	}
}

// spec.workload.tolerations join a manifest's own tolerations; one the manifest already has is not repeated.
func TestMergeTolerations(t *testing.T) {
	t.Parallel()
	pool := corev1.Toleration{Key: "meshbench.dev/pool", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	secs := int64(30)
	evict := corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}
	own := map[string]any{"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}
	for _, tc := range []struct {
		name string
		have []any
		add  []corev1.Toleration
		want []map[string]any
	}{
		{"none added: template unchanged", []any{own}, nil, []map[string]any{own}},
		{"into a template without any", nil, []corev1.Toleration{pool},
			[]map[string]any{{"key": "meshbench.dev/pool", "operator": "Exists", "effect": "NoSchedule"}}},
		{"after the manifest's own", []any{own}, []corev1.Toleration{pool, evict},
			[]map[string]any{own, {"key": "meshbench.dev/pool", "operator": "Exists", "effect": "NoSchedule"},
				{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(30)}}},
		{"already there: not repeated", []any{map[string]any{"key": "meshbench.dev/pool", "operator": "Exists", "effect": "NoSchedule"}}, []corev1.Toleration{pool},
			[]map[string]any{{"key": "meshbench.dev/pool", "operator": "Exists", "effect": "NoSchedule"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := map[string]any{"spec": map[string]any{"containers": []any{}}}
			if tc.have != nil {
				tmpl["spec"].(map[string]any)["tolerations"] = tc.have
			}
			if err := mergeTolerations(tmpl, tc.add); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedSlice(tmpl, "spec", "tolerations")
			if len(got) != len(tc.want) {
				t.Fatalf("tolerations = %v, want %v", got, tc.want)
			}
			for i := range got {
				if fmt.Sprint(got[i]) != fmt.Sprint(tc.want[i]) {
					t.Errorf("toleration %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestManifestsFollowTheInputRule: every manifest file, named in paths, found in a directory of paths, or read by a
// kustomization, is refused when it is a FIFO (the test would hang reading it), a device or above
// inputfile.MaxManifest, with a problem naming the file and the cap; all of them together are at most
// inputfile.MaxManifests.
func TestManifestsFollowTheInputRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mkdir := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(name string) {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir("fifodir")
	fifo("fifodir/app.yaml")
	mkdir("bigdir")
	write("bigdir/app.yaml", "")
	if err := os.Truncate(filepath.Join(dir, "bigdir/app.yaml"), inputfile.MaxManifest+1); err != nil {
		t.Fatal(err)
	}
	mkdir("kust")
	write("kust/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [app.yaml]\n")
	fifo("kust/app.yaml")
	mkdir("kustbig")
	write("kustbig/kustomization.yaml", "")
	if err := os.Truncate(filepath.Join(dir, "kustbig/kustomization.yaml"), inputfile.MaxManifest+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, manifests string
		want            []string
	}{
		{"fifo in a directory", "      paths: [fifodir]\n", []string{"spec.workload.manifests.paths[0]: manifest file " + dir + "/fifodir/app.yaml: a named pipe (FIFO)"}},
		{"over the cap in a directory", "      paths: [bigdir]\n", []string{"spec.workload.manifests.paths[0]: manifest file " + dir + "/bigdir/app.yaml: 16777217 bytes"}},
		{"fifo in a kustomization", "      kustomization: kust\n", []string{"spec.workload.manifests.kustomization: ", dir + "/kust/app.yaml: a named pipe (FIFO)"}},
		{"kustomization.yaml over the cap", "      kustomization: kustbig\n", []string{"spec.workload.manifests.kustomization: ", dir + "/kustbig/kustomization.yaml: 16777217 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := manifestsScenario(t, tc.manifests, "  load:\n    targets: [{service: web}]\n")
			s.Spec.Workload.Manifests.BaseDir = dir
			got := CheckManifests(s).Error()
			for _, w := range append(tc.want, "16777216 bytes (16 MiB)") {
				if !strings.Contains(got, w) {
					t.Errorf("problems lack %q:\n%s", w, got)
				}
			}
		})
	}
	// All of them together: the file that goes over inputfile.MaxManifests is refused before it is read.
	write("small.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	b := &manifestBudget{used: inputfile.MaxManifests - 10}
	if _, err := decodeFile(filepath.Join(dir, "small.yaml"), b); !errors.Is(err, errManifestsTooLarge) || !strings.Contains(err.Error(), "67108864 bytes (64 MiB)") {
		t.Errorf("over the budget: %v", err)
	}
	if objs, err := decodeFile(filepath.Join(dir, "small.yaml"), &manifestBudget{}); err != nil || len(objs) != 1 {
		t.Errorf("within the budget: %v %v", objs, err)
	}
}
