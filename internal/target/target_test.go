package target

import (
	"reflect"
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

// A catalog app's target has no LoadTargets: its one load target is the entry URL, at full weight, over http.
func TestLoadTargetsOrEntry(t *testing.T) {
	t.Parallel()
	catalog := Target{EntryService: "frontend", EntryURL: "http://frontend.mb-single.svc.cluster.local:80/home"}
	if got, want := catalog.LoadTargetsOrEntry(), []LoadTarget{{Name: "frontend", URL: catalog.EntryURL, Protocol: "http", Weight: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("catalog endpoints %+v, want %+v", got, want)
	}
	if got := (Target{EntryURL: "http://x/"}).LoadTargetsOrEntry(); len(got) != 1 || got[0].Name != "entry" {
		t.Errorf("endpoints of a URL-only target %+v, want one named entry", got)
	}
	own := []LoadTarget{{Name: "a", URL: "http://a/", Protocol: "http", Weight: 3}, {Name: "b", URL: "b:8079", Protocol: "grpc", Weight: 1}}
	if got := (Target{EntryURL: "http://a/", LoadTargets: own}).LoadTargetsOrEntry(); !reflect.DeepEqual(got, own) {
		t.Errorf("endpoints %+v, want the target's own %+v", got, own)
	}
	if got := (Target{}).LoadTargetsOrEntry(); got != nil {
		t.Errorf("a target without entry has endpoints %+v", got)
	}
}
