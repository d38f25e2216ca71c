package orchestrate

import (
	"fmt"

	"github.com/meshbench/meshbench/results"
)

// checkResumeCommand refuses to continue a run of the other verb (a mesh run's directory with cni --resume, a cni
// run's with run --resume): an *InputError naming the verb that continues it.
func checkResumeCommand(dir string, meta results.RunMeta, command string) error {
	if meta.IsCNI() == (command == results.CommandCNI) {
		return nil
	}
	want, other := "a mesh run", "cni"
	if command == results.CommandCNI {
		want, other = "a cni run", "run"
	}
	return inputError(fmt.Errorf("--resume %s: the directory holds a %q run, not %s: continue it with meshbench %s --resume %s",
		dir, meta.Command, want, other, dir))
}

// checkResumeDir is checkResumeCommand on RUN_DIR's run.json, for a caller about to contact the cluster. A run.json
// that cannot be read is left to results.Resume, which says why.
func checkResumeDir(dir, command string) error {
	if dir == "" {
		return nil
	}
	if meta, err := results.ReadMeta(dir); err == nil {
		return checkResumeCommand(dir, meta, command)
	}
	return nil
}
