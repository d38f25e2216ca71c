package target

import (
	"strings"
	"testing"
)

// PodSelector returns the label error instead of a nil requirement that would panic when dereferenced (the old
// restart code ignored it).
func TestPodSelector(t *testing.T) {
	t.Parallel()
	tg := Target{AppSelector: AppSelector("fortio-chain", "run-1")}
	sel, err := tg.PodSelector(WorkloadRef{Kind: KindDeployment, Namespace: "ns", Name: "chain-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sel.String(); !strings.Contains(got, ComponentLabel+"=chain-1") || !strings.Contains(got, AppLabel+"=fortio-chain") {
		t.Errorf("selector %q", got)
	}
	if _, err := tg.PodSelector(WorkloadRef{Kind: KindDeployment, Namespace: "ns", Name: "not a label value!"}); err == nil {
		t.Error("an invalid label value must be an error")
	}
	if _, err := (Target{AppSelector: "a in (b"}).PodSelector(WorkloadRef{Name: "x"}); err == nil {
		t.Error("an invalid app selector must be an error")
	}
}
