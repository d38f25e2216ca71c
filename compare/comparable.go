package compare

import (
	"errors"
	"fmt"

	"github.com/meshbench/meshbench/results"
)

// Refusals of CheckComparable: the comparison would say nothing true.
var (
	// errSameRun: a run compared with itself (the same directory twice, or a copy of it) has every difference 0 by
	// construction, and a gate can never fail: a pipeline that names the wrong directory would pass for ever.
	errSameRun = errors.New("a run compared with itself")
	// errDifferentKinds: a mesh run (meshbench run) and a pod network run (meshbench cni) measure different things,
	// so no measurement is in both and every gate selects nothing.
	errDifferentKinds = errors.New("runs of different kinds")
)

// CheckComparable refuses a pair of runs whose comparison would say nothing true: the same run twice (same run ID),
// or a mesh run with a cni run. The error wraps ErrSameRun or ErrDifferentKinds and says what to compare instead.
func CheckComparable(base, next *results.Run) error {
	if base.Meta.RunID == next.Meta.RunID {
		return fmt.Errorf("%w: %s and %s both hold run %s, so every difference is 0 and no gate can fail; "+
			"compare it with another run (a baseline, or --latest of a directory of runs)", errSameRun, base.Dir, next.Dir, base.Meta.RunID)
	}
	if base.Meta.IsCNI() != next.Meta.IsCNI() {
		return fmt.Errorf("%w: %s is a %s run and %s a %s run: they share no measurement; compare mesh runs with mesh runs and cni runs with cni runs "+
			"(meshbench report MESH_RUN CNI_RUN shows one of each side by side)", errDifferentKinds, base.Meta.RunID, kindOf(base.Meta), next.Meta.RunID, kindOf(next.Meta))
	}
	return nil
}

func kindOf(m results.RunMeta) string {
	if m.IsCNI() {
		return "pod network (meshbench cni)"
	}
	return "mesh (meshbench run)"
}
