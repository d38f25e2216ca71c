package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// durationFlag is a duration flag that must be positive.
type durationFlag struct {
	name    string
	value   time.Duration
	example string
}

// checkDurations lists every duration flag that is not positive (all at once, like the scenario's problems).
func checkDurations(flags ...durationFlag) error {
	var errs []string
	for _, d := range flags {
		if d.value <= 0 {
			errs = append(errs, fmt.Sprintf("--%s %s: must be a positive duration, e.g. --%s %s", d.name, d.value, d.name, d.example))
		}
	}
	if len(errs) > 0 {
		return badInput(errors.New(strings.Join(errs, "\n")))
	}
	return nil
}

// override is a flag that replaces a scenario field: set applies the flag's value to the scenario, path is the field's
// path in scenario.Problems (validation problems there name the flag).
type override struct {
	flag, value, path string
	set               func(*scenario.Scenario, string)
}

// outputDirOverride is --output-dir over spec.output.dir.
func outputDirOverride(v string) override {
	return override{flag: "output-dir", value: v, path: "spec.output.dir", set: func(s *scenario.Scenario, v string) { s.Spec.Output.Dir = v }}
}

// prometheusURLOverride is --prometheus-url over spec.prometheus (the URL replaces a configured service).
func prometheusURLOverride(v string) override {
	return override{flag: "prometheus-url", value: v, path: "spec.prometheus.url", set: func(s *scenario.Scenario, v string) {
		s.Spec.Prometheus.URL, s.Spec.Prometheus.Service = v, nil
	}}
}

// applyOverrides sets the given flags (those with a value) in s and validates s again, so a flag is checked exactly as
// the same value in the file would be. A problem in a field a flag set names the flag (bad input, exit 2).
func applyOverrides(s *scenario.Scenario, ovs ...override) error {
	byPath := map[string]override{}
	for _, o := range ovs {
		if o.value == "" {
			continue
		}
		o.set(s, o.value)
		byPath[o.path] = o
	}
	if len(byPath) == 0 {
		return nil
	}
	var errs []string
	for _, p := range scenario.Validate(s) {
		if o, ok := byPath[p.Path]; ok {
			errs = append(errs, fmt.Sprintf("--%s %q: %s (it overrides %s)", o.flag, o.value, p.Message, o.path))
		}
	}
	if len(errs) > 0 {
		return badInput(errors.New(strings.Join(errs, "\n")))
	}
	return nil
}

// checkOutputDir refuses, before anything is created, an output directory that cannot receive a run directory.
func checkOutputDir(dir string) error {
	if err := orchestrate.CheckOutputDir(dir); err != nil {
		return badInput(err)
	}
	return nil
}

// runScenario is the scenario a run executes, with every flag applied and checked: the file's (-f) for a new run,
// the recorded one for --resume. Nothing is written.
func runScenario(f *runFlags) (*scenario.Scenario, error) {
	s, err := runScenarioOf(f)
	// Every bad flag at once: the durations' problems with the scenario's or the other flags'.
	if derr := checkDurations(
		durationFlag{"ready-timeout", f.readyTimeout, "10m"},
		durationFlag{"verify-timeout", f.verifyTimeout, "3m"},
		durationFlag{"delete-timeout", f.deleteTimeout, "5m"},
	); derr != nil {
		return nil, errors.Join(derr, err)
	}
	return s, err
}

func runScenarioOf(f *runFlags) (*scenario.Scenario, error) {
	if f.resume != "" {
		s, err := resumeScenario(results.CommandRun, f.resume, f.file, f.imageRegistry, f.outputDir)
		if err != nil {
			return nil, err
		}
		// A Prometheus that moved since: the URL is not part of what was measured.
		if err := applyOverrides(s, prometheusURLOverride(f.prometheusURL)); err != nil {
			return nil, err
		}
		return s, nil
	}
	if f.file == "" {
		return nil, badInput(errors.New("give -f SCENARIO or --resume RUN_DIR"))
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return nil, err
	}
	if len(scenario.NewPlan(s).Cases) == 0 {
		return nil, badInput(fmt.Errorf("%s: no mesh benchmark cases (spec.workload is empty); use meshbench cni for network-only scenarios", f.file))
	}
	if err := applyOverrides(s, outputDirOverride(f.outputDir), prometheusURLOverride(f.prometheusURL)); err != nil {
		return nil, err
	}
	return s, checkOutputDir(s.Spec.Output.Dir)
}

// resumeRuleHelp is the rule of --resume with the other flags, the same in both verbs' help (resumeScenario).
const resumeRuleHelp = `A resumed run runs the scenario recorded in RUN_DIR's run.json (it repeats what ran). -f SCENARIO may be
given too, as the command line that started the run with --resume added: the file, with
--image-registry applied, must describe the recorded run (the fields the verb's plan and measurements depend on),
else exit 2 naming each field that differs with both values; the recorded scenario runs either way.
--image-registry is refused without -f (a resumed run keeps its images); --output-dir may only name RUN_DIR's
parent (a resumed run stays in its directory).`

// resumeScenario is the scenario --resume RUN_DIR runs, by the one rule of both verbs (orchestrate.ResumeScenario):
// the recorded one; -f (with --image-registry) is loaded as a new run would load it and must describe the recorded
// run; --output-dir may only name RUN_DIR's parent. A refusal is bad input (exit 2); nothing is written.
func resumeScenario(command, dir, file, imageRegistry, outputDir string) (*scenario.Scenario, error) {
	return orchestrate.ResumeScenario(orchestrate.ResumeRequest{Command: command, Dir: dir, File: file,
		ImageRegistry: imageRegistry, OutputDir: outputDir, Load: loadScenario})
}
