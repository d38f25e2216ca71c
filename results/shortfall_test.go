package results

import (
	"encoding/json"
	"math"
	"testing"
)

func TestShortOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		requested, achieved float64
		short               bool
	}{
		{100, 100, false},
		{100, 99.01, false}, // within 1 %
		{100, 98.9, true},
		{1000, 500, true},
		{-1, 10, false}, // max speed asks for no rate
		{0, 0, false},
	} {
		got := ShortOf(tc.requested, tc.achieved)
		if (got != nil) != tc.short {
			t.Errorf("ShortOf(%g, %g) = %+v, want short %v", tc.requested, tc.achieved, got, tc.short)
		}
	}
	if p := ShortOf(100, 98.9).Pct(); math.Abs(p-1.1) > 1e-9 {
		t.Errorf("pct %g, want 1.1", p)
	}
	// On disk: a field of its own in cases.jsonl, read back as written.
	c := CaseResult{CaseID: "c", Status: StatusOK, LoadShortfall: ShortOf(200, 150)}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back CaseResult
	if err := json.Unmarshal(b, &back); err != nil || back.LoadShortfall == nil || *back.LoadShortfall != *c.LoadShortfall {
		t.Errorf("%s read back as %+v (%v)", b, back.LoadShortfall, err)
	}
}
