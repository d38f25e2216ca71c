package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadManifestsExitTwo: plan and preflight read app manifests' files before anything connects, and a bad
// manifest is bad input (exit 2) whose message names the object and the fix.
func TestBadManifestsExitTwo(t *testing.T) {
	t.Parallel()
	fixtures, err := filepath.Abs("../../../workloads/testdata/manifests")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, manifests string
		want            []string
	}{
		{"cluster-scoped", "paths: [" + fixtures + "/cluster-scoped/app.yaml]", []string{"Namespace/mine", "ClusterRole/reader", "apply them yourself before the run"}},
		{"missing file", "paths: [nope.yaml]", []string{"spec.workload.manifests.paths[0]: cannot read", "nope.yaml"}},
		{"invalid kustomization", "kustomization: " + fixtures + "/bad-kustomization", []string{"spec.workload.manifests.kustomization: kustomize build", "bad-kustomization"}},
		{"untracked pod kinds", "paths: [" + fixtures + "/untracked-kinds]", []string{"DaemonSet/node-agent", "Job/migrate", "CronJob/nightly", "Pod/debug", "ReplicaSet/web-rs",
			"meshbench tracks Deployments and StatefulSets", "convert Job/migrate to a Deployment or StatefulSet or remove it from the manifests"}},
		{"scale names no deployment", "kustomization: " + fixtures + "/kustomize-app, scale: [checkout]", []string{`spec.workload.manifests.scale[0]: "checkout" names no Deployment or StatefulSet`, "fix the name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(t.TempDir(), "s.yaml")
			y := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: own}\nspec:\n  workload:\n    app: manifests\n" +
				"    manifests: {" + tc.manifests + "}\n  load:\n    targets: [{service: frontend, port: 8080}]\n"
			if err := os.WriteFile(f, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"plan", "preflight"} {
				code, _, errOut := run(t, cmd, "-f", f)
				if code != exitBadInput {
					t.Errorf("%s: code %d, want %d; stderr %s", cmd, code, exitBadInput, errOut)
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", cmd, w, errOut)
					}
				}
			}
		})
	}
	if code, _, errOut := run(t, "plan", "-f", "../../../examples/own-app.yaml"); code != exitOK {
		t.Errorf("examples/own-app.yaml: code %d: %s", code, errOut)
	}
}
