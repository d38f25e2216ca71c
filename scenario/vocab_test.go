package scenario

import (
	"slices"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// The modes and pod network tests a scenario accepts are results' vocabulary, in its canonical order; the paths are
// the same set (scenario lists them in run order, results in display order, the host baseline first).
func TestConfigVocabularyIsResults(t *testing.T) {
	t.Parallel()
	if !slices.Equal(strs(AllModes), strs(results.Modes)) {
		t.Errorf("AllModes %v, results.Modes %v", AllModes, results.Modes)
	}
	if !slices.Equal(strs(AllCNITests), strs(results.CNITests)) {
		t.Errorf("AllCNITests %v, results.CNITests %v", AllCNITests, results.CNITests)
	}
	paths, want := strs(AllCNIPaths), strs(results.CNIPaths)
	slices.Sort(paths)
	slices.Sort(want)
	if !slices.Equal(paths, want) {
		t.Errorf("AllCNIPaths %v, results.CNIPaths %v", AllCNIPaths, results.CNIPaths)
	}
}
