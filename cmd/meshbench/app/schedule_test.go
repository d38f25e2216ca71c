package app

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestScheduleEmitsYAML(t *testing.T) {
	t.Parallel()
	scn := filepath.Join("..", "..", "..", "schedule", "testdata", "scenario.yaml")
	code, out, errOut := run(t, "schedule", "-f", scn, "--pvc", "runs", "--baseline", "baseline", "--fail-if", "cpu.sidecar > +10%",
		"--image", "ghcr.io/meshbench/meshbench:v0.1.0", "--schedule", "15 2 * * *")
	if code != ExitOK {
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
		if code, _, _ := run(t, args...); code != ExitBadInput {
			t.Errorf("%v: exit %d, want %d", args[1:], code, ExitBadInput)
		}
	}
}
