package results

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The typed fields of a case keep cases.jsonl's form: a partial case's reason after CNIPartialPrefix, the warnings
// "; "-joined in their facts; reading gives the typed fields back and writing again gives the same bytes.
func TestCaseResultJSONKeepsTheOnDiskForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		disk string
		want CaseResult
	}{
		{"partial with sample warnings",
			`{"runID":"r","caseID":"service/udp","repetition":0,"status":"ok","reason":"some samples failed: sample 2: boom","start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","facts":{"path":"service","warnings":"sample 1: w1; sample 2: w2"}}`,
			CaseResult{RunID: "r", CaseID: "service/udp", Status: StatusOK, Partial: "sample 2: boom",
				Facts: map[FactKey]string{FactCNIPath: "service"}, SampleWarnings: []string{"sample 1: w1", "sample 2: w2"}}},
		{"collector warnings only",
			`{"runID":"r","caseID":"c","repetition":1,"status":"failed","reason":"collect load window: gap","start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","facts":{"collector-warnings":"a; b"}}`,
			CaseResult{RunID: "r", CaseID: "c", Repetition: 1, Status: StatusFailed, Reason: "collect load window: gap",
				CollectorWarnings: []string{"a", "b"}}},
		{"a failed case's reason is never partial",
			`{"runID":"r","caseID":"c","repetition":1,"status":"failed","reason":"some samples failed: x","start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z"}`,
			CaseResult{RunID: "r", CaseID: "c", Repetition: 1, Status: StatusFailed, Reason: "some samples failed: x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got CaseResult
			if err := json.Unmarshal([]byte(tc.disk), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("read %+v, want %+v", got, tc.want)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.disk {
				t.Errorf("wrote %s, want %s", b, tc.disk)
			}
			if got.Facts != nil && len(tc.want.SampleWarnings) > 0 {
				if _, ok := got.Facts[factSampleWarnings]; ok {
					t.Error("marshalling added the warnings to the case's own facts")
				}
			}
		})
	}
}
