package orchestrate

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

func TestResumeConflicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*scenario.Scenario)
		wantCNI []string
		wantRun []string
	}{
		{name: "same run", change: func(*scenario.Scenario) {}},
		// What does not make either verb's plan or its figures may differ.
		{name: "other name, output dir and prometheus", change: func(s *scenario.Scenario) {
			s.Metadata.Name, s.Spec.Output.Dir, s.Spec.Prometheus.URL = "net-again", "elsewhere", "http://127.0.0.1:9090"
		}},
		{name: "more samples", change: func(s *scenario.Scenario) { s.Spec.CNI.Samples = 5 }, wantCNI: []string{"spec.cni.samples: recorded 3, given 5"}},
		{name: "another path and duration", change: func(s *scenario.Scenario) {
			s.Spec.CNI.Paths = append(s.Spec.CNI.Paths, scenario.CNIPathHost)
			s.Spec.CNI.Duration = scenario.D(30 * time.Second)
		}, wantCNI: []string{`spec.cni.duration: recorded "10s", given "30s"`, `spec.cni.paths: recorded ["same-node"], given ["same-node","host"]`}},
		{name: "placement pinned", change: func(s *scenario.Scenario) { s.Spec.CNI.Placement.ClientNode = "node1" },
			wantCNI: []string{`spec.cni.placement: recorded (unset), given {"clientNode":"node1"}`}},
		{name: "image registry moved the agent", change: func(s *scenario.Scenario) { s.Spec.Images.Agent = "other/meshbench-agent:v1" },
			wantCNI: []string{`spec.images.agent: recorded "reg/meshbench-agent:v1", given "other/meshbench-agent:v1"`},
			wantRun: []string{`spec.images.agent: recorded "reg/meshbench-agent:v1", given "other/meshbench-agent:v1"`}},
		// A mesh run's plan: modes, windows, workload; the network image is cni's alone, the app's images the run's.
		{name: "another mode and repetitions", change: func(s *scenario.Scenario) {
			s.Spec.Modes = append(s.Spec.Modes, scenario.ModeAmbient)
			s.Spec.Windows.Repetitions = 5
		}, wantRun: []string{`spec.modes: recorded ["none","sidecar"], given ["none","sidecar","ambient"]`, "spec.windows.repetitions: recorded 3, given 5"}},
		{name: "more replicas", change: func(s *scenario.Scenario) { s.Spec.Workload.Replicas = 2 }, wantRun: []string{"spec.workload.replicas: recorded 1, given 2"}},
		{name: "network image", change: func(s *scenario.Scenario) { s.Spec.Images.Network = "net:2" }, wantCNI: []string{`spec.images.network: recorded "net:1", given "net:2"`}},
		{name: "app images", change: func(s *scenario.Scenario) { s.Spec.Images.BankOfAnthos.Tag = "v0.6.8" },
			wantRun: []string{`spec.images.bankOfAnthos.tag: recorded "v0.6.7", given "v0.6.8"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			given := resumeBase()
			tt.change(given)
			if got := resumeConflicts(results.CommandCNI, resumeBase(), given); !slices.Equal(got, tt.wantCNI) {
				t.Errorf("cni conflicts\n  %q\nwant\n  %q", got, tt.wantCNI)
			}
			if got := resumeConflicts(results.CommandRun, resumeBase(), given); !slices.Equal(got, tt.wantRun) {
				t.Errorf("run conflicts\n  %q\nwant\n  %q", got, tt.wantRun)
			}
		})
	}
}

// TestResumeScenario: the one rule of run --resume and cni --resume. The recorded scenario runs; -f may repeat the
// recorded run and is refused, naming each field, when it would change the verb's plan; --image-registry only with
// -f; --output-dir only as RUN_DIR's parent; a run of the other verb is refused naming the verb that continues it.
// Every refusal is an InputError and leaves the run directory byte for byte as it was.
func TestResumeScenario(t *testing.T) {
	t.Parallel()
	// Load stands for the verb's loader: "same.yaml" gives the recorded scenario, "more.yaml" one more mode and
	// more samples; --image-registry moves the agent image as scenario.Load does.
	load := func(file, registry string) (*scenario.Scenario, error) {
		s := resumeBase()
		switch filepath.Base(file) {
		case "more.yaml":
			s.Spec.Modes = append(s.Spec.Modes, scenario.ModeAmbient)
			s.Spec.CNI.Samples = 5
		case "renamed.yaml":
			s.Metadata.Name = "other"
		case "bad.yaml":
			return nil, errors.New("bad.yaml: spec.modes[0]: unknown mode")
		}
		if registry != "" {
			s.Spec.Images.Agent = registry + "/meshbench-agent:v1"
		}
		return s, nil
	}
	for _, command := range []string{results.CommandRun, results.CommandCNI} {
		other := map[string]string{results.CommandRun: results.CommandCNI, results.CommandCNI: results.CommandRun}[command]
		changed := map[string]string{results.CommandRun: `spec.modes: recorded ["none","sidecar"], given ["none","sidecar","ambient"]`,
			results.CommandCNI: "spec.cni.samples: recorded 3, given 5"}[command]
		tests := []struct {
			name     string
			recorded string // run.json command
			req      ResumeRequest
			want     []string // in the error; none: accepted
		}{
			{name: "recorded scenario", recorded: command},
			{name: "same file", recorded: command, req: ResumeRequest{File: "same.yaml"}},
			{name: "file differing outside the plan", recorded: command, req: ResumeRequest{File: "renamed.yaml"}},
			{name: "same output dir", recorded: command, req: ResumeRequest{OutputDir: "PARENT"}},
			{name: "file changes the plan", recorded: command, req: ResumeRequest{File: "more.yaml"}, want: []string{
				"--resume RUN_DIR with -f more.yaml", "would change the recorded run's plan", changed,
				"drop -f (and --image-registry) to resume with the recorded scenario, or start a new run without --resume"}},
			{name: "image registry with the file", recorded: command, req: ResumeRequest{File: "same.yaml", ImageRegistry: "elsewhere"},
				want: []string{`spec.images.agent: recorded "reg/meshbench-agent:v1", given "elsewhere/meshbench-agent:v1"`}},
			{name: "image registry without the file", recorded: command, req: ResumeRequest{ImageRegistry: "elsewhere"},
				want: []string{"--image-registry with --resume RUN_DIR", "drop --image-registry"}},
			{name: "another output dir", recorded: command, req: ResumeRequest{OutputDir: "/elsewhere"},
				want: []string{"--output-dir /elsewhere with --resume RUN_DIR: a resumed run stays in its directory; drop --output-dir"}},
			{name: "the other verb's run", recorded: other, req: ResumeRequest{File: "same.yaml"},
				want: []string{"continue it with meshbench " + other + " --resume RUN_DIR"}},
		}
		for _, tt := range tests {
			t.Run(command+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := recordRun(t, tt.recorded, resumeBase())
				before := dirFiles(t, dir)
				req := tt.req
				req.Command, req.Dir, req.Load = command, dir, load
				if req.OutputDir == "PARENT" {
					req.OutputDir = filepath.Dir(dir)
				}
				s, err := ResumeScenario(req)
				if !maps.Equal(before, dirFiles(t, dir)) {
					t.Error("the run directory changed")
				}
				if len(tt.want) == 0 {
					if err != nil || s == nil || s.Metadata.Name != "net" || len(s.Spec.Modes) != 2 {
						t.Fatalf("refused: %v (scenario %+v)", err, s)
					}
					return
				}
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Fatalf("err %v, want an InputError", err)
				}
				msg := strings.ReplaceAll(err.Error(), dir, "RUN_DIR")
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("error lacks %q:\n%s", w, msg)
					}
				}
			})
		}
	}
	// The loader's own error is returned as it is; a directory without a run names --resume.
	dir := recordRun(t, results.CommandRun, resumeBase())
	if _, err := ResumeScenario(ResumeRequest{Command: results.CommandRun, Dir: dir, File: "bad.yaml", Load: load}); err == nil || err.Error() != "bad.yaml: spec.modes[0]: unknown mode" {
		t.Errorf("bad file: %v", err)
	}
	nope := filepath.Join(t.TempDir(), "nope")
	var ie *InputError
	if _, err := ResumeScenario(ResumeRequest{Command: results.CommandCNI, Dir: nope, Load: load}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "--resume "+nope) {
		t.Errorf("missing directory: %v", err)
	}
}
