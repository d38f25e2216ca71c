package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/schedule"
)

func TestScheduleEmitsYAML(t *testing.T) {
	t.Parallel()
	scn := filepath.Join("..", "..", "..", "schedule", "testdata", "scenario.yaml")
	code, out, errOut := run(t, "schedule", "-f", scn, "--pvc", "runs", "--baseline", "baseline", "--fail-if", "cpu.sidecar > +10%",
		"--image", "ghcr.io/meshbench/meshbench:v0.1.0", "--schedule", "15 2 * * *")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"kind: CronJob", "kind: ClusterRole", "kind: ClusterRoleBinding", "kind: ServiceAccount",
		"schedule: 15 2 * * *", "claimName: runs", "cpu.sidecar > +10%", "pods/exec"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, args := range [][]string{
		{"schedule", "-f", scn},                                 // nowhere to keep results
		{"schedule", "-f", scn, "--pvc", "r", "--fail-if", "x"}, // bad gate
		{"schedule", "-f", scn, "--push", "http://pg", "--schedule", "nightly"},
		{"schedule", "-f", "missing.yaml", "--pvc", "r"},
	} {
		if code, _, _ := run(t, args...); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", args[1:], code, exitBadInput)
		}
	}
}

// TestScheduleCarriesManifests: with app manifests, the ConfigMap carries the objects as rendered here, and the
// scenario the pod reads from it plans exactly the objects the user's own scenario plans.
func TestScheduleCarriesManifests(t *testing.T) {
	t.Parallel()
	own := filepath.Join("..", "..", "..", "examples", "own-app.yaml")
	code, out, errOut := run(t, "schedule", "-f", own, "--pvc", "runs", "--image", "ghcr.io/meshbench/meshbench:v0.1.0")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var cm *corev1.ConfigMap
	for _, doc := range strings.Split(out, "\n---\n") {
		var c corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &c); err == nil && c.Kind == "ConfigMap" {
			cm = &c
		}
	}
	if cm == nil || cm.Data[schedule.ManifestsFile] == "" || cm.Data[schedule.ScenarioFile] == "" {
		t.Fatalf("no ConfigMap with %s and %s:\n%s", schedule.ScenarioFile, schedule.ManifestsFile, out)
	}
	dir := t.TempDir() // the pod's /etc/meshbench
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, want, errOut := run(t, "plan", "-f", own, "--show-objects")
	code, got, errOut2 := run(t, "plan", "-f", filepath.Join(dir, schedule.ScenarioFile), "--show-objects")
	if code != exitOK || want == "" {
		t.Fatalf("plan of the scheduled scenario: exit %d\n%s%s", code, errOut, errOut2)
	}
	if got != want {
		t.Errorf("the scheduled scenario plans other objects than examples/own-app.yaml:\n got %s\nwant %s", got, want)
	}
}

// TestScheduleRefusesManifestsOverConfigMap: manifests that do not fit a ConfigMap are bad input naming the field
// and the ways out, before anything connects.
func TestScheduleRefusesManifestsOverConfigMap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n" +
		"  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: " + strings.Repeat("x", schedule.MaxConfigMapData) + "}\n"
	scn := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: big}\nspec:\n  workload:\n    app: manifests\n" +
		"    manifests: {paths: [app.yaml]}\n  load:\n    targets: [{service: web}]\n"
	for name, body := range map[string]string{"app.yaml": app, "s.yaml": scn} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := run(t, "schedule", "-f", filepath.Join(dir, "s.yaml"), "--pvc", "runs", "--image", "x")
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d\n%s", code, exitBadInput, errOut)
	}
	for _, want := range []string{"spec.workload.manifests: the rendered manifests and the scenario are", "more than the 1048576 a ConfigMap holds", "bake the manifests into the meshbench image", "use app existing"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%.2000s", want, errOut)
		}
	}
}

// TestScheduleBadFlagsExit2: every flag of schedule is checked before anything is rendered or applied (with --apply
// against an API server that does not answer, nothing connects): exit 2, each problem naming its flag, all of them
// at once and together with the scenario's own problems (--timeout 0 used to hide those).
func TestScheduleBadFlagsExit2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scn := filepath.Join("..", "..", "..", "schedule", "testdata", "scenario.yaml")
	kc := unreachableKubeconfig(t, dir)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"protected namespace", []string{"--namespace", "kube-system"}, []string{`--namespace "kube-system": a system namespace`}},
		{"default namespace", []string{"--namespace", "default"}, []string{`--namespace "default"`}},
		{"cron syntax", []string{"--schedule", "61 * * * *"}, []string{`--schedule "61 * * * *": end of range (61) above maximum (59)`}},
		{"time zone", []string{"--time-zone", "Mars/Base"}, []string{`--time-zone "Mars/Base": unknown time zone`}},
		{"image reference", []string{"--image", "UPPER//bad"}, []string{`--image "UPPER//bad": must be an image reference`}},
		{"push URL", []string{"--push", "not a url"}, []string{"--push: the Pushgateway URL must be an http:// or https:// URL"}},
		{"push port", []string{"--push", "http://pg:99999"}, []string{"has port 99999"}},
		{"baseline traversal", []string{"--baseline", "../../../etc", "--fail-if", "cpu.sidecar > +10%"}, []string{`--baseline "../../../etc"`}},
		{"every bad flag at once", []string{"--namespace", "kube-system", "--schedule", "61 * * * *", "--time-zone", "Mars/Base", "--image", "UPPER//bad",
			"--push", "ftp://pg", "--baseline", "/etc", "--timeout", "0"},
			[]string{"--namespace", "--schedule", "--time-zone", "--image", "--push", "--baseline", "--timeout 0s"}},
		{"apply does not connect", []string{"--namespace", "default", "--apply", "--kubeconfig", kc}, []string{`--namespace "default"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"schedule", "-f", scn, "--pvc", "runs"}, tc.args...)
			code, out, stderr := run(t, args...)
			if code != exitBadInput {
				t.Errorf("exit %d, want %d\n%s", code, exitBadInput, stderr)
			}
			if out != "" {
				t.Errorf("manifests printed despite bad input:\n%.300s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "127.0.0.1:1") || strings.Contains(stderr, "nothing was changed") {
				t.Errorf("schedule connected before its flags were checked:\n%s", stderr)
			}
		})
	}
	// --timeout 0 and a scenario with problems of its own: both are listed.
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: bad}\nspec:\n  workload: {app: fortio-chain}\n  load: {qps: [-5]}\n")
	code, _, stderr := run(t, "schedule", "-f", bad, "--pvc", "runs", "--timeout", "0", "--schedule", "61 * * * *")
	for _, w := range []string{"--timeout 0s", "spec.load.qps[0]: must be > 0", "--schedule"} {
		if code != exitBadInput || !strings.Contains(stderr, w) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, w, stderr)
		}
	}
}
