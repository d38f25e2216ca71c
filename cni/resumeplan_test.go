package cni

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

func TestRecordedPlacement(t *testing.T) {
	t.Parallel()
	ab := map[string]string{"node-a": "node1", "node-b": "node2"}
	tests := []struct {
		name    string
		cases   []results.CaseResult
		want    scenario.CNIPlacement
		wantOK  bool
		wantErr string
	}{
		{name: "nothing recorded"},
		{name: "only skipped cases", cases: []results.CaseResult{caseRec("host/tcp", string(results.StatusSkipped), nil)}},
		{name: "two nodes", cases: []results.CaseResult{caseRec("idle", string(results.StatusOK), ab), caseRec("same-node/tcp", string(results.StatusOK), ab)},
			want: scenario.CNIPlacement{ClientNode: "node1", ServerNode: "node2"}, wantOK: true},
		{name: "one node", cases: []results.CaseResult{caseRec("same-node/tcp", string(results.StatusOK), map[string]string{"node-a": "node1"})},
			want: scenario.CNIPlacement{ClientNode: "node1"}, wantOK: true},
		// A failed case is not kept: its nodes do not bind the resumed run.
		{name: "failed case on other nodes is not kept", cases: []results.CaseResult{caseRec("same-node/tcp", string(results.StatusOK), ab),
			caseRec("same-node/udp", string(results.StatusFailed), map[string]string{"node-a": "node3", "node-b": "node4"})},
			want: scenario.CNIPlacement{ClientNode: "node1", ServerNode: "node2"}, wantOK: true},
		{name: "kept cases on different nodes", cases: []results.CaseResult{caseRec("same-node/tcp", string(results.StatusOK), ab),
			caseRec("same-node/udp", string(results.StatusOK), map[string]string{"node-a": "node3", "node-b": "node2"})},
			wantOK: true, want: scenario.CNIPlacement{ClientNode: "node1", ServerNode: "node2"},
			wantErr: `recorded cases ran on different nodes: same-node/tcp on node-a "node1" node-b "node2", same-node/udp on node-a "node3" node-b "node2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := RecordedPlacement((&results.Run{Cases: tt.cases}).DoneCases())
			if got != tt.want || ok != tt.wantOK || (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
				t.Errorf("got %+v %v %v, want %+v %v %q", got, ok, err, tt.want, tt.wantOK, tt.wantErr)
			}
		})
	}
}

func TestPlanResume(t *testing.T) {
	t.Parallel()
	planned := []scenario.Case{{ID: "idle"}, {ID: "same-node/tcp"}, {ID: "same-node/udp"}, {ID: "cross-node/tcp"}, {ID: "host/tcp", Skip: "only one node"}}
	tests := []struct {
		name     string
		recorded []results.CaseResult // cases.jsonl in file order
		planned  []scenario.Case
		want     []string
		wantErr  []string
	}{
		{name: "nothing recorded: everything runs", want: []string{"idle", "same-node/tcp", "same-node/udp", "cross-node/tcp", "host/tcp"}},
		{name: "killed after two cases", recorded: []results.CaseResult{caseRec("idle", string(results.StatusOK), nil), caseRec("same-node/tcp", string(results.StatusOK), nil)},
			want: []string{"same-node/udp", "cross-node/tcp", "host/tcp"}},
		// The latest record counts: a failed case runs again, one failed then ok is kept.
		{name: "failed cases run again", recorded: []results.CaseResult{caseRec("idle", string(results.StatusOK), nil), caseRec("same-node/tcp", string(results.StatusFailed), nil),
			caseRec("same-node/udp", string(results.StatusFailed), nil), caseRec("same-node/udp", string(results.StatusOK), nil)},
			want: []string{"same-node/tcp", "cross-node/tcp", "host/tcp"}},
		{name: "ok then failed on a later resume runs again", recorded: []results.CaseResult{caseRec("same-node/tcp", string(results.StatusOK), nil), caseRec("same-node/tcp", string(results.StatusFailed), nil)},
			want: []string{"idle", "same-node/tcp", "same-node/udp", "cross-node/tcp", "host/tcp"}},
		{name: "skipped and still skipped is kept", recorded: []results.CaseResult{caseRec("host/tcp", string(results.StatusSkipped), nil)},
			want: []string{"idle", "same-node/tcp", "same-node/udp", "cross-node/tcp"}},
		{name: "everything recorded: nothing runs", recorded: []results.CaseResult{caseRec("idle", string(results.StatusOK), nil), caseRec("same-node/tcp", string(results.StatusOK), nil),
			caseRec("same-node/udp", string(results.StatusOK), nil), caseRec("cross-node/tcp", string(results.StatusOK), nil), caseRec("host/tcp", string(results.StatusSkipped), nil)}},
		{name: "recorded skipped, runnable now", recorded: []results.CaseResult{caseRec("cross-node/tcp", string(results.StatusSkipped), nil)},
			wantErr: []string{"case cross-node/tcp was recorded skipped (only one node) but the cluster can run it now"}},
		{name: "recorded measured, skipped now", recorded: []results.CaseResult{caseRec("host/tcp", string(results.StatusOK), nil)},
			wantErr: []string{"case host/tcp was recorded ok but the cluster cannot run it now (only one node)"}},
		{name: "recorded cases not in the plan", recorded: []results.CaseResult{caseRec("service/rr", string(results.StatusOK), nil), caseRec("host/udp", string(results.StatusOK), nil)},
			wantErr: []string{"recorded case(s) host/udp, service/rr are not in the plan"}},
		// Without resource use the plan has no idle case: a recorded idle window means the plan changed.
		{name: "recorded idle, plan without", planned: planned[1:], recorded: []results.CaseResult{caseRec("idle", string(results.StatusOK), nil)},
			wantErr: []string{"recorded case(s) idle are not in the plan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pl := planned
			if tt.planned != nil {
				pl = tt.planned
			}
			got, err := planResume((&results.Run{Cases: tt.recorded}).DoneCases(), pl)
			if len(tt.wantErr) > 0 {
				if !errors.Is(err, ErrPlanChanged) {
					t.Fatalf("err = %v, want ErrPlanChanged", err)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("runs %q, want %q", ids, tt.want)
			}
		})
	}
}

func caseRec(id string, status string, facts map[string]string) results.CaseResult {
	return results.CaseResult{CaseID: id, Status: results.Status(status), Facts: caseFacts(facts), Reason: map[string]string{string(results.StatusSkipped): "only one node", string(results.StatusFailed): "boom"}[status]}
}

// caseFacts types a map of facts.
func caseFacts(m map[string]string) map[results.FactKey]string {
	out := make(map[results.FactKey]string, len(m))
	for k, v := range m {
		out[results.FactKey(k)] = v
	}
	return out
}
