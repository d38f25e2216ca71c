package mesh

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

func TestCaseObjectsExistingHasNone(t *testing.T) {
	s := &scenario.Scenario{}
	s.Spec.Workload.App = scenario.AppExisting
	s.Spec.Workload.Existing = &scenario.Existing{Namespaces: []string{"shop", "db"}}
	called := false
	app := func(*scenario.Scenario, scenario.Topology, string) ([]runtime.Object, target.Target, error) {
		called = true
		return nil, target.Target{}, nil
	}
	objs, tg, err := CaseObjects(s, scenario.Topology{Name: "single"}, scenario.ModeSidecar, DryRunRunID, app)
	if err != nil || len(objs) != 0 || called || strings.Join(tg.Namespaces, ",") != "shop,db" {
		t.Fatalf("CaseObjects = %v, %+v, %v (app called %v): want no objects, the namespaces", objs, tg, err, called)
	}
	var buf bytes.Buffer
	if err := writeExistingDryRun(&buf, s, "c1", scenario.ModeSidecar, tg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no objects are applied", "namespace-labels.json", "#   shop: ", "#   db: ", "rollout-restarted", "meshbench preflight"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestFormatLabelPlan(t *testing.T) {
	v := "enabled"
	for _, tc := range []struct {
		plan map[string]*string
		want string
	}{
		{nil, "(none)"},
		{map[string]*string{"b": nil, "a": &v}, "a=enabled, -b"},
	} {
		if got := FormatLabelPlan(tc.plan); got != tc.want {
			t.Errorf("FormatLabelPlan(%v) = %q, want %q", tc.plan, got, tc.want)
		}
	}
}

// LabelChanges is Apply's patch: what the mode needs and the namespace lacks, and the other modes' labels it has.
func TestLabelChanges(t *testing.T) {
	tg := target.Target{Namespaces: []string{"shop"}}
	wp := scenario.Waypoint{Scope: scenario.WaypointPerNamespace, Name: "waypoint", For: "service"}
	for _, tc := range []struct {
		mode     scenario.Mode
		revision string
		cur      map[string]string
		want     string
	}{
		{scenario.ModeSidecar, "", map[string]string{"team": "a"}, "istio-injection=enabled"},
		{scenario.ModeSidecar, "", map[string]string{labelInjection: "enabled"}, "(none)"},
		{scenario.ModeSidecar, "canary", map[string]string{labelInjection: "enabled"}, "-istio-injection, istio.io/rev=canary"},
		{scenario.ModeAmbient, "", map[string]string{labelInjection: "enabled"}, "-istio-injection, istio.io/dataplane-mode=ambient"},
		{scenario.ModeNone, "", map[string]string{LabelDataplaneMode: "ambient", LabelUseWaypoint: "waypoint", "team": "a"}, "-istio.io/dataplane-mode, -istio.io/use-waypoint"},
		{scenario.ModeNone, "", nil, "(none)"},
	} {
		if got := FormatLabelPlan(LabelChanges(tc.mode, tg, "shop", wp, tc.revision, tc.cur)); got != tc.want {
			t.Errorf("LabelChanges(%s, rev %q, %v) = %q, want %q", tc.mode, tc.revision, tc.cur, got, tc.want)
		}
	}
}
