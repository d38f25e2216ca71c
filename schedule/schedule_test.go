package schedule

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/scenario"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func loadScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(filepath.Join("testdata", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestManifestsGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts func(s *scenario.Scenario) Options
	}{
		{"pvc-gates.yaml", func(s *scenario.Scenario) Options {
			return Options{Scenario: s, Image: "ghcr.io/meshbench/meshbench:v0.1.0", PVC: "meshbench-runs", PVCSize: "20Gi",
				Baseline: "baseline", FailIf: []string{"cpu.sidecar > +10%", "latency.p99.ambient > +1ms"}, TimeZone: "Europe/Berlin"}
		}},
		{"push-only.yaml", func(s *scenario.Scenario) Options {
			return Options{Scenario: s, Image: "ghcr.io/meshbench/meshbench:v0.1.0", Schedule: "30 1 * * 1-5", Namespace: "bench",
				Push: "http://pushgateway.monitoring:9091", PushInstance: "prod-eu", Timeout: 2 * time.Hour}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := loadScenario(t)
			before := s.Spec.Output.Dir
			objs, err := Objects(tt.opts(s))
			if err != nil {
				t.Fatal(err)
			}
			if s.Spec.Output.Dir != before {
				t.Error("Objects modified the caller's scenario")
			}
			b, err := YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("creationTimestamp")) || bytes.Contains(b, []byte("managed-by")) {
				t.Errorf("manifests carry creationTimestamp or the cleanup label:\n%s", b)
			}
			again, _ := Objects(tt.opts(loadScenario(t)))
			b2, _ := YAML(again)
			if !bytes.Equal(b, b2) {
				t.Error("two renders differ")
			}
			golden(t, tt.name, b)
		})
	}
}

// TestClusterRoleIsTheTable: the ClusterRole grants exactly RequiredPermissions, rule for rule.
func TestClusterRoleIsTheTable(t *testing.T) {
	t.Parallel()
	objs, err := Objects(Options{Scenario: loadScenario(t), Image: "x", PVC: "runs"})
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			role = r
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole")
	}
	if len(role.Rules) != len(RequiredPermissions) {
		t.Fatalf("%d rules for %d permissions", len(role.Rules), len(RequiredPermissions))
	}
	for i, p := range RequiredPermissions {
		r := role.Rules[i]
		want := rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.ResourceName()}, Verbs: p.Verbs}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("rule %d = %+v, want %+v", i, r, want)
		}
		if p.Why == "" {
			t.Errorf("permission %s has no reason", p.ResourceName())
		}
		for _, v := range p.Verbs {
			if v == "*" || v == "escalate" || v == "bind" || v == "impersonate" {
				t.Errorf("permission %s grants %q", p.ResourceName(), v)
			}
		}
	}
	// The verbs and resources the run is known to need (design.md, issue 7).
	need := map[string]string{
		"/namespaces": "create get list patch delete", "apps/deployments": "create get list watch patch delete",
		"apps/statefulsets": "create get list patch delete", "/services": "create get list patch delete",
		"/configmaps": "create get patch", "/secrets": "create get patch", "/serviceaccounts": "create get patch",
		"/pods": "get list watch", "/pods/exec": "get create", "/pods/proxy": "get", "/nodes": "get list", "/nodes/proxy": "get",
		"gateway.networking.k8s.io/gateways": "create get list watch delete patch", "/events": "list",
		"authorization.k8s.io/selfsubjectaccessreviews": "create", "apiextensions.k8s.io/customresourcedefinitions": "get list",
		"/services/proxy": "get create",
	}
	for res, verbs := range need {
		var granted []string
		for _, p := range RequiredPermissions {
			if p.Group+"/"+p.ResourceName() == res {
				granted = p.Verbs
			}
		}
		for _, v := range strings.Fields(verbs) {
			found := false
			for _, g := range granted {
				found = found || g == v
			}
			if !found {
				t.Errorf("%s lacks verb %s (granted %v)", res, v, granted)
			}
		}
	}
}

func TestScenarioInConfigMapLoads(t *testing.T) {
	t.Parallel()
	s := loadScenario(t)
	objs, err := Objects(Options{Scenario: s, Image: "x", Push: "http://pg:9091"})
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	var cj *batchv1.CronJob
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.ConfigMap:
			cm = x
		case *batchv1.CronJob:
			cj = x
		}
	}
	loaded, err := scenario.Parse([]byte(cm.Data[ScenarioFile]))
	if err != nil {
		t.Fatalf("the scenario stored in the ConfigMap does not load: %v\n%s", err, cm.Data[ScenarioFile])
	}
	if loaded.Spec.Output.Dir != RunsDir {
		t.Errorf("output dir = %q, want %q", loaded.Spec.Output.Dir, RunsDir)
	}
	want := *s
	want.Spec.Output.Dir = RunsDir
	wb, _ := yaml.Marshal(want)
	lb, _ := yaml.Marshal(loaded)
	if !bytes.Equal(wb, lb) {
		t.Errorf("scenario changed on the way through the ConfigMap:\n%s\nvs\n%s", wb, lb)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Args[0] != "run" || pod.Containers[0].Args[0] != "report" {
		t.Errorf("steps: init %v, main %v", pod.InitContainers, pod.Containers)
	}
	if pod.Volumes[1].EmptyDir == nil {
		t.Error("without a PVC the runs volume must be an emptyDir")
	}
	if cj.Spec.Schedule != DefaultSchedule || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("schedule %q, concurrency %q", cj.Spec.Schedule, cj.Spec.ConcurrencyPolicy)
	}
}

func TestSteps(t *testing.T) {
	t.Parallel()
	got := steps(Options{Push: "http://pg:9091", PushInstance: "eu", Baseline: "/data/base", FailIf: []string{"cpu.sidecar > +10%"}})
	want := [][]string{
		{"run", "-f", "/etc/meshbench/scenario.yaml"},
		{"report", "--latest", RunsDir, "--push", "http://pg:9091", "--push-job", "meshbench", "--push-instance", "eu"},
		{"compare", "/data/base", RunsDir, "--latest", "--fail-if", "cpu.sidecar > +10%"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Steps = %q, want %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	s := loadScenario(t)
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{"ok pvc", Options{Scenario: s, Image: "x", PVC: "runs"}, nil},
		{"ok push", Options{Scenario: s, Image: "x", Push: "http://pg:9091", Schedule: "@daily"}, nil},
		{"nowhere to keep results", Options{Scenario: s, Image: "x"}, []string{"results would be lost"}},
		{"everything wrong", Options{Image: "", Schedule: "daily at 3", Namespace: "Bench_NS", PVCSize: "lots",
			FailIf: []string{"cpu.sidecar > +10%"}, Timeout: -time.Second},
			[]string{"no scenario", "cron expression", "DNS label", "no image", "needs a PVC name", "--pvc-size", "baseline", "timeout"}},
		{"baseline without pvc", Options{Scenario: s, Image: "x", Push: "http://pg", Baseline: "b", FailIf: []string{"cpu.x > 1"}}, []string{"set --pvc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: nil, want errors")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// manifestsScenario is the test scenario as app "manifests" from a kustomization.
func manifestsScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	s := loadScenario(t)
	s.Spec.Workload.App = scenario.AppManifests
	s.Spec.Workload.Manifests = &scenario.Manifests{Kustomization: "app", Scale: []string{"web"}, BaseDir: "bench"}
	return s
}

// TestManifestsTravelInTheConfigMap: app manifests' rendered objects go into the ConfigMap beside the scenario, whose
// manifests read them from there; the caller's scenario keeps its kustomization.
func TestManifestsTravelInTheConfigMap(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t)
	rendered := []byte("---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
	objs, err := Objects(Options{Scenario: s, Image: "x", PVC: "runs", Manifests: rendered})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Spec.Workload.Manifests; m.Kustomization != "app" || len(m.Paths) != 0 || m.BaseDir != "bench" {
		t.Errorf("Objects modified the caller's manifests: %+v", m)
	}
	var cm *corev1.ConfigMap
	var cj *batchv1.CronJob
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			cm = v
		case *batchv1.CronJob:
			cj = v
		}
	}
	if cm == nil || cj == nil {
		t.Fatal("no ConfigMap or CronJob")
	}
	if cm.Data[ManifestsFile] != string(rendered) {
		t.Errorf("ConfigMap %s = %q, want the rendered manifests", ManifestsFile, cm.Data[ManifestsFile])
	}
	var sc scenario.Scenario
	if err := yaml.Unmarshal([]byte(cm.Data[ScenarioFile]), &sc); err != nil {
		t.Fatal(err)
	}
	if m := sc.Spec.Workload.Manifests; m == nil || m.Kustomization != "" || len(m.Paths) != 1 || m.Paths[0] != ManifestsFile || len(m.Scale) != 1 {
		t.Errorf("scheduled manifests %+v, want paths [%s] and the scale kept", m, ManifestsFile)
	}
	// Both files are in the one volume mounted at scenarioDir: relative paths of the scenario resolve there.
	vol := cj.Spec.JobTemplate.Spec.Template.Spec.Volumes[0]
	if vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Name || len(vol.ConfigMap.Items) != 0 {
		t.Errorf("scenario volume %+v: want the whole ConfigMap %s", vol, cm.Name)
	}
}

// TestManifestsRefused: without rendered manifests, and over what a ConfigMap holds, app manifests is refused with
// the field and the ways out. The limit is the API server's: ValidateConfigMap sums the bytes of data and
// binaryData values and rejects more than core.MaxSecretSize, 1 MiB (kubernetes/kubernetes
// pkg/apis/core/validation/validation.go ValidateConfigMap; k8s.io/api v0.37.2 core/v1/types.go MaxSecretSize).
func TestManifestsRefused(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t)
	err := Options{Scenario: s, Image: "x", PVC: "runs"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "spec.workload.manifests: the scheduled pod cannot read files") || !strings.Contains(err.Error(), "app existing") {
		t.Errorf("no rendered manifests: %v", err)
	}
	sc, err := scheduledScenario(Options{Scenario: s})
	if err != nil {
		t.Fatal(err)
	}
	fits := bytes.Repeat([]byte("#"), MaxConfigMapData-len(sc))
	if err := (Options{Scenario: s, Image: "x", PVC: "runs", Manifests: fits}).Validate(); err != nil {
		t.Errorf("exactly %d bytes: %v", MaxConfigMapData, err)
	}
	err = Options{Scenario: s, Image: "x", PVC: "runs", Manifests: append(fits, '#')}.Validate()
	if err == nil || !strings.Contains(err.Error(), "1048577 bytes, more than the 1048576 a ConfigMap holds") || !strings.Contains(err.Error(), "bake the manifests into") {
		t.Errorf("one byte over: %v", err)
	}
	other := loadScenario(t)
	if err := (Options{Scenario: other, Image: "x", PVC: "runs", Manifests: []byte("x")}).Validate(); err == nil || !strings.Contains(err.Error(), "only used with app manifests") {
		t.Errorf("manifests for app %s: %v", other.Spec.Workload.App, err)
	}
}

// TestValidateFlagsHostile: every flag value the API server (or the scheduled pod) would refuse half-way is refused
// by ValidateFlags, naming the flag: one table per class of input, the accepted spellings of each class beside them.
func TestValidateFlagsHostile(t *testing.T) {
	t.Parallel()
	base := Options{Image: "ghcr.io/meshbench/meshbench:v0.1.0", PVC: "runs"}
	tests := []struct {
		class string
		set   func(*Options, string)
		bad   map[string]string // value -> text the error must hold
		good  []string
	}{
		{"protected namespace", func(o *Options, v string) { o.Namespace = v },
			map[string]string{"kube-system": `--namespace "kube-system": a system namespace`, "default": `--namespace "default": a system namespace`,
				"kube-public": "system namespace", "kube-node-lease": "system namespace", "istio-system": "system namespace", "Bench": "DNS label"},
			[]string{"meshbench", "benchmarks"}},
		{"cron syntax", func(o *Options, v string) { o.Schedule = v },
			map[string]string{"61 * * * *": `--schedule "61 * * * *": end of range (61) above maximum (59)`, "0 3 * *": "expected exactly 5 fields",
				"nightly": "expected exactly 5 fields, found 1", "@nightly": "unrecognized descriptor", "CRON_TZ=UTC 0 3 * * *": "--time-zone", "0 3 * * 8": "above maximum (6)"},
			[]string{"0 3 * * *", "*/15 * * * *", "@daily", "@every 6h", "0 3 * * MON-FRI"}},
		{"time zone", func(o *Options, v string) { o.TimeZone = v },
			map[string]string{"Mars/Base": `--time-zone "Mars/Base": unknown time zone`, "Local": "refuses Local", "../../etc/passwd": "unknown time zone",
				"Europe/Pariss": "unknown time zone", "Europe//Paris": "unknown time zone"},
			[]string{"Europe/Paris", "UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+5"}},
		{"image reference", func(o *Options, v string) { o.Image = v },
			map[string]string{"UPPER//bad": `--image "UPPER//bad": must be an image reference`, "https://ghcr.io/x/y:1": "--image", "x/y:-tag": "--image",
				"ghcr.io:99999/x": "--image"},
			[]string{"ghcr.io/meshbench/meshbench:v0.1.0", "172.30.0.1:5000/meshbench/meshbench:dev", "meshbench"}},
		{"push URL", func(o *Options, v string) { o.Push = v },
			map[string]string{"not a url": "--push: the Pushgateway URL must be an http:// or https:// URL", "ftp://pg": `(got "ftp://pg")`,
				"http://pg:99999": "has port 99999", "http://u:secret@pg:9091": "credentials", "pg:9091": "http:// or https://"},
			[]string{"http://pushgateway.monitoring:9091", "https://pg.example/prefix"}},
		{"baseline", func(o *Options, v string) { o.Baseline = v },
			map[string]string{"../../../etc": `--baseline "../../../etc": a run directory on the PVC`, "/etc": "must be under /var/lib/meshbench/runs",
				"a/../../b": "no \"..\"", RunsDir + "/../x": "no \"..\"", "base/": "empty parts", "./base": "no \"..\", \".\""},
			[]string{"baseline", "nightly-20261201-030000-3fa2", RunsDir + "/baseline", "2026/baseline"}},
		{"pvc size and storage class", func(o *Options, v string) { o.PVCSize, o.StorageClass = v, "Fast_SSD" },
			map[string]string{"-1Gi": `--pvc-size "-1Gi": must be a positive quantity`, "0": "positive quantity", "lots": "positive quantity"},
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.class, func(t *testing.T) {
			t.Parallel()
			for v, want := range tc.bad {
				o := base
				tc.set(&o, v)
				err := o.ValidateFlags()
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%q: %v; want an error holding %q", v, err, want)
				}
				if err != nil && strings.Contains(err.Error(), "secret") {
					t.Errorf("%q: the error echoes a password: %v", v, err)
				}
			}
			for _, v := range tc.good {
				o := base
				tc.set(&o, v)
				if err := o.ValidateFlags(); err != nil {
					t.Errorf("%q refused: %v", v, err)
				}
			}
		})
	}
	o := base
	o.PVCSize, o.StorageClass = "20Gi", "Fast_SSD"
	if err := o.ValidateFlags(); err == nil || !strings.Contains(err.Error(), `--storage-class "Fast_SSD"`) {
		t.Errorf("storage class: %v", err)
	}
}
