package mesh_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/goldenfile"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// The dry run composes mesh and workloads as the wiring does; this external test package may import both.

const dryRunScenario = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: dry}
spec:
  profile: localcluster
  workload:
    app: fortio-chain
    chain: {depth: 1, fanOut: 2, payloadBytes: 64}
    topologies:
    - kind: multi
      namespaces: 2
  modes: [none, sidecar, ambient, waypoint]
  waypoint: {scope: shared}
  load: {qps: [100]}
  windows: {repetitions: 1, idle: 1m, load: 1m}
`

func TestWriteDryRunGolden(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse([]byte(dryRunScenario))
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := mesh.WriteDryRun(&a, s, scenario.NewPlan(s), workloads.Objects); err != nil {
		t.Fatal(err)
	}
	_ = mesh.WriteDryRun(&b, s, scenario.NewPlan(s), workloads.Objects)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("dry-run output is not deterministic")
	}
	out := a.String()
	for _, want := range []string{
		"istio-injection: enabled",
		"istio.io/dataplane-mode: ambient",
		"istio.io/use-waypoint: waypoint",
		"istio.io/use-waypoint-namespace: mb-multi2-0",
		"gatewayClassName: istio-waypoint",
		"protocol: HBONE",
		"from: All",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %q", want)
		}
	}
	path := filepath.Join("testdata", "dry-run-fortio-chain-multi2.golden.yaml")
	if goldenfile.Update() {
		if err := os.WriteFile(path, a.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./mesh -update to create it)", err)
	}
	if !bytes.Equal(want, a.Bytes()) {
		t.Fatalf("%s differs; if intended run go test ./mesh -update and review the diff", path)
	}
}

func TestCaseObjectsWaypointBeforeApp(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse([]byte(dryRunScenario))
	if err != nil {
		t.Fatal(err)
	}
	objs, _, err := mesh.CaseObjects(s, s.Spec.Workload.Topologies[0], scenario.ModeWaypoint, "r", workloads.Objects)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]string, len(objs))
	for i, o := range objs {
		kinds[i] = o.GetObjectKind().GroupVersionKind().Kind
	}
	if kinds[0] != "Namespace" || kinds[1] != "Namespace" || kinds[2] != "Gateway" || kinds[3] == "Gateway" {
		t.Errorf("order %v: namespaces, the shared waypoint, then the app", kinds)
	}
	if _, ok := objs[2].(*gwv1.Gateway); !ok {
		t.Errorf("object 2 is %T", objs[2])
	}
}
