package orchestrate

import (
	"encoding/json"
	"testing"

	"github.com/meshbench/meshbench/scenario"
)

func TestPlanObjects(t *testing.T) {
	t.Parallel()
	s, err := scenario.Load("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := scenario.NewPlan(s)
	got, err := PlanObjects(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(p.Cases) {
		t.Fatalf("%d entries for %d cases", len(got), len(p.Cases))
	}
	first := got[0]
	if !first.Switch || len(first.Objects) == 0 || first.Objects[0]["kind"] != "Namespace" || len(first.Namespaces) == 0 {
		t.Errorf("first case: %+v", first)
	}
	for i, c := range got {
		if c.Case != p.Cases[i].ID || (c.Switch && len(c.Objects) == 0) || (!c.Switch && (c.Objects != nil || c.Note == "")) {
			t.Errorf("case %d: %s switch %v, %d objects, note %q", i, c.Case, c.Switch, len(c.Objects), c.Note)
		}
	}
	again, _ := PlanObjects(s, p)
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("not deterministic")
	}
}
