package orchestrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// ResumeRequest is a --resume RUN_DIR with the rest of the verb's command line. `meshbench run` and `meshbench cni`
// follow one rule (ResumeScenario); docs/architecture.md ("One run flow") states it for users.
type ResumeRequest struct {
	// Command is the verb resuming (results.CommandRun or results.CommandCNI): RUN_DIR must hold a run of it.
	Command string
	Dir     string
	// File is -f (optional): given, it must describe the recorded run (resumeConflicts).
	File string
	// ImageRegistry is --image-registry: only with File, whose images it moves (then checked like the file's).
	ImageRegistry string
	// OutputDir is --output-dir: only RUN_DIR's parent, as a repeated command line gives it.
	OutputDir string
	// Load reads File with ImageRegistry applied, as a new run of the verb would; its error is returned as it is.
	Load func(file, imageRegistry string) (*scenario.Scenario, error)
}

// ResumeScenario is the scenario a --resume runs: the one recorded in RUN_DIR's run.json. It writes and contacts
// nothing; each refusal is an *InputError naming the flag and the fix (the rule: docs/architecture.md, One run
// flow).
func ResumeScenario(r ResumeRequest) (*scenario.Scenario, error) {
	if err := r.checkFlags(); err != nil {
		return nil, err
	}
	run, err := results.Read(r.Dir)
	if err != nil {
		return nil, inputError(fmt.Errorf("--resume %s: %w", r.Dir, err))
	}
	if err := checkResumeCommand(r.Dir, run.Meta, r.Command); err != nil {
		return nil, err
	}
	rec, err := scenario.Parse(run.Meta.Scenario)
	if err != nil {
		return nil, inputError(fmt.Errorf("--resume %s: recorded scenario: %w", r.Dir, err))
	}
	if r.File == "" {
		return rec, nil
	}
	given, err := r.Load(r.File, r.ImageRegistry)
	if err != nil {
		return nil, err
	}
	if diff := resumeConflicts(r.Command, rec, given); len(diff) > 0 {
		return nil, inputError(fmt.Errorf("--resume %s with -f %s: the scenario (with the flags applied) would change the recorded run's plan:\n  %s\n"+
			"drop -f (and --image-registry) to resume with the recorded scenario, or start a new run without --resume",
			r.Dir, r.File, strings.Join(diff, "\n  ")))
	}
	return rec, nil
}

// checkFlags refuses the flags that would move a resumed run, before its directory is read.
func (r ResumeRequest) checkFlags() error {
	var errs []error
	if r.OutputDir != "" && filepath.Clean(r.OutputDir) != filepath.Dir(filepath.Clean(r.Dir)) {
		errs = append(errs, fmt.Errorf("--output-dir %s with --resume %s: a resumed run stays in its directory; drop --output-dir", r.OutputDir, r.Dir))
	}
	if r.ImageRegistry != "" && r.File == "" {
		errs = append(errs, fmt.Errorf("--image-registry with --resume %s: a resumed run keeps the images it recorded; "+
			"drop --image-registry (or give -f SCENARIO too, to check that it gives the recorded images)", r.Dir))
	}
	return inputError(errors.Join(errs...))
}

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

// resumeConflicts lists, one line per field in a stable order, where a scenario given to a resumed run of command
// differs from the recorded one in what that verb's plan or measurements depend on (the fields: docs/architecture.md);
// nil when it repeats the recorded run. Pure.
func resumeConflicts(command string, recorded, given *scenario.Scenario) []string {
	var out []string
	for _, part := range resumeParts(command) {
		out = append(out, jsonDiff(part.path, toJSONValue(part.of(recorded)), toJSONValue(part.of(given)))...)
	}
	return out
}

// resumePart is one part of a scenario a resumed run must repeat.
type resumePart struct {
	path string
	of   func(*scenario.Scenario) any
}

func resumeParts(command string) []resumePart {
	if command == results.CommandCNI {
		return []resumePart{
			{"spec.cni", func(s *scenario.Scenario) any { return s.Spec.CNI }},
			{"spec.images", func(s *scenario.Scenario) any {
				return map[string]any{"network": s.Spec.Images.Network, "agent": s.Spec.Images.Agent, "pullPolicy": s.Spec.Images.PullPolicy}
			}},
		}
	}
	return []resumePart{
		{"spec.workload", func(s *scenario.Scenario) any { return s.Spec.Workload }},
		{"spec.modes", func(s *scenario.Scenario) any { return s.Spec.Modes }},
		{"spec.waypoint", func(s *scenario.Scenario) any { return s.Spec.Waypoint }},
		{"spec.istio", func(s *scenario.Scenario) any { return s.Spec.Istio }},
		{"spec.load", func(s *scenario.Scenario) any { return s.Spec.Load }},
		{"spec.windows", func(s *scenario.Scenario) any { return s.Spec.Windows }},
		{"spec.images", func(s *scenario.Scenario) any {
			i := s.Spec.Images
			return map[string]any{"agent": i.Agent, "bankOfAnthos": i.BankOfAnthos, "bookinfo": i.Bookinfo, "pullPolicy": i.PullPolicy}
		}},
	}
}

// toJSONValue is v as decoded JSON; numbers stay json.Number, so two int64s (a seed) never compare equal as floats.
func toJSONValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return string(b)
	}
	return out
}

// jsonDiff lists the leaves of two decoded JSON values that differ, by field path, in a stable order.
func jsonDiff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := slices.Sorted(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var out []string
		for _, k := range keys {
			out = append(out, jsonDiff(path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("%s: recorded %s, given %s", path, jsonText(a), jsonText(b))}
}

func jsonText(v any) string {
	if v == nil {
		return "(unset)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
