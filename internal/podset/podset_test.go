package podset

import (
	"slices"
	"testing"
)

func TestSharedHostNotes(t *testing.T) {
	t.Parallel()
	a := NodeRef{Name: "a", MachineID: "4c1f0e9d2b7a4e6f", BootID: "b0071d00-0001"}
	b := NodeRef{Name: "b", MachineID: a.MachineID, BootID: a.BootID}
	tests := []struct {
		name  string
		nodes []NodeRef
		want  []string
	}{
		{name: "one host", nodes: []NodeRef{b, a},
			want: []string{"node figures of a and b are the same machine's (machineID 4c1f0e9d…, bootID b0071d00…): whole-node totals count it once"}},
		{name: "own hosts", nodes: []NodeRef{a, {Name: "c", MachineID: "other", BootID: "other"}}},
		{name: "unknown IDs are not one host", nodes: []NodeRef{{Name: "a"}, {Name: "b"}}},
		{name: "one node", nodes: []NodeRef{a}},
	}
	for _, tt := range tests {
		if got := SharedHostNotes(tt.nodes); !slices.Equal(got, tt.want) {
			t.Errorf("%s: SharedHostNotes = %q, want %q", tt.name, got, tt.want)
		}
	}
}
