package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: the loader never panics, and whatever it accepts is valid and plans to unique case IDs.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"../examples/*.yaml", "../testdata/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("spec: {load: {qps: [\"max\", 1e309]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if ps := Validate(s); ps != nil {
			t.Fatalf("Parse accepted a scenario Validate rejects: %v", ps)
		}
		if len(s.Spec.Workload.Topologies)*len(s.Spec.Modes)*len(s.Spec.Load.QPS)*s.Spec.Windows.Repetitions > 100000 {
			return // valid but too large to expand in a fuzz iteration
		}
		seen := map[string]bool{}
		for _, c := range NewPlan(s).Cases {
			if seen[c.ID] {
				t.Fatalf("duplicate case ID %q", c.ID)
			}
			seen[c.ID] = true
		}
	})
}
