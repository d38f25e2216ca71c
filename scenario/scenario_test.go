package scenario

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"

	"sigs.k8s.io/yaml"
)

// golden compares got with testdata/<name>, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// TestFixtures loads every repo-level fixture: valid-* must load cleanly; invalid-* must report every problem,
// with field paths, exactly as in the golden file.
func TestFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../testdata/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(f)
			if strings.HasPrefix(name, "valid-") {
				if err != nil {
					t.Fatalf("valid fixture rejected: %v", err)
				}
				return
			}
			var ps Problems
			if err == nil || !errorsAs(err, &ps) {
				t.Fatalf("invalid fixture: want Problems, got %v", err)
			}
			for _, p := range ps {
				if p.Path == "" || p.Message == "" {
					t.Errorf("problem without path or message: %+v", p)
				}
			}
			golden(t, "fixtures/"+name+".golden", []byte(ps.Error()+"\n"))
		})
	}
}

func errorsAs(err error, ps *Problems) bool {
	return errors.As(err, ps)
}

// TestPlanGolden pins the expanded plan of every shipped example (table and JSON) and checks it is deterministic.
func TestPlanGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Load(f)
			if err != nil {
				t.Fatalf("example does not load: %v", err)
			}
			p1, p2 := NewPlan(s), NewPlan(s)
			if !reflect.DeepEqual(p1, p2) {
				t.Fatal("NewPlan is not deterministic")
			}
			ids := map[string]bool{}
			for _, c := range p1.Cases {
				if ids[c.ID] {
					t.Errorf("duplicate case ID %s", c.ID)
				}
				ids[c.ID] = true
			}
			js, err := json.MarshalIndent(p1, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "plans/"+name+".txt", []byte(p1.Table()))
			golden(t, "plans/"+name+".json", append(js, '\n'))
		})
	}
}

// TestStudyAMulti checks the acceptance example: 3 modes x 1 topology x the loads x repetitions.
func TestStudyAMulti(t *testing.T) {
	t.Parallel()
	s, err := Load("../examples/study-a-multi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(s)
	if got, want := len(p.Cases), 3*1*len(s.Spec.Load.QPS)*s.Spec.Windows.Repetitions; got != want {
		t.Fatalf("cases = %d, want %d", got, want)
	}
	topo := s.Spec.Workload.Topologies[0]
	if topo.Kind != TopologyMulti || topo.Namespaces != 8 || topo.Replicas != 6 {
		t.Errorf("topology = %+v, want multi 8 namespaces x 6 replicas", topo)
	}
	if s.Spec.Windows.Load.Duration != 10*time.Minute || s.Spec.Windows.Idle.Duration != 10*time.Minute {
		t.Errorf("windows = %+v, want 10m idle and load as in study A", s.Spec.Windows)
	}
	if p.Estimate <= 9*(20*time.Minute) {
		t.Errorf("estimate %s cannot be shorter than 9 cases x (10m idle + 10m load)", p.Estimate)
	}
}

func TestOrdering(t *testing.T) {
	t.Parallel()
	modes := []Mode{ModeNone, ModeSidecar, ModeAmbient}
	render := func(gs []modeRep) string {
		var parts []string
		for _, g := range gs {
			parts = append(parts, string(g.mode)[:1]+string(rune('0'+g.rep)))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		il   Interleave
		want string
	}{
		{InterleaveSerpentine, "n1 s1 a1 a2 s2 n2 n3 s3 a3"},
		{InterleaveNone, "n1 n2 n3 s1 s2 s3 a1 a2 a3"},
	}
	for _, tc := range tests {
		t.Run(string(tc.il), func(t *testing.T) {
			t.Parallel()
			if got := render(groups(arms(modes, nil), 3, tc.il, 1)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("random is seeded", func(t *testing.T) {
		t.Parallel()
		a, b := render(groups(arms(modes, nil), 5, InterleaveRandom, 7)), render(groups(arms(modes, nil), 5, InterleaveRandom, 7))
		c := render(groups(arms(modes, nil), 5, InterleaveRandom, 8))
		if a != b {
			t.Errorf("same seed, different order: %s vs %s", a, b)
		}
		if a == c {
			t.Errorf("different seeds gave the same order %s (possible but unlikely for 5 reps)", a)
		}
	})
}

func TestSwitchesAndIdle(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: sw}
spec:
  workload: {app: fortio-chain}
  modes: [none, sidecar, ambient]
  load: {qps: [10, max]}
  windows: {repetitions: 2, idle: 1m, load: 1m}
`)
	p := NewPlan(s)
	var got []string
	for _, c := range p.Cases {
		got = append(got, c.ID+map[bool]string{true: " S", false: ""}[c.Switch]+map[bool]string{true: " I", false: ""}[c.Idle])
	}
	want := []string{
		"single.none.q10.r1 S I", "single.none.qmax.r1",
		"single.sidecar.q10.r1 S I", "single.sidecar.qmax.r1",
		"single.ambient.q10.r1 S I", "single.ambient.qmax.r1",
		"single.ambient.q10.r2 I", "single.ambient.qmax.r2",
		"single.sidecar.q10.r2 S I", "single.sidecar.qmax.r2",
		"single.none.q10.r2 S I", "single.none.qmax.r2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.ModeSwitches != 5 || p.Restarts != 4 {
		t.Errorf("switches=%d restarts=%d, want 5 and 4", p.ModeSwitches, p.Restarts)
	}
}

func TestNeedsRestart(t *testing.T) {
	t.Parallel()
	for _, from := range AllModes {
		for _, to := range AllModes {
			want := from != to && (from == ModeSidecar || to == ModeSidecar)
			if got := needsRestart(from, to); got != want {
				t.Errorf("needsRestart(%s,%s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestQPSAndDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    QPS
		wantErr bool
	}{
		{`100`, QPS{Value: 100}, false},
		{`"max"`, MaxQPS, false},
		{`"MAX"`, MaxQPS, false},
		{`"12.5"`, QPS{Value: 12.5}, false},
		{`"fast"`, QPS{}, true},
		{`true`, QPS{}, true},
	}
	for _, tc := range tests {
		var q QPS
		err := json.Unmarshal([]byte(tc.in), &q)
		if (err != nil) != tc.wantErr || (!tc.wantErr && q != tc.want) {
			t.Errorf("QPS %s: got %v, %v; want %v (err %v)", tc.in, q, err, tc.want, tc.wantErr)
		}
	}
	for in, want := range map[string]time.Duration{`"10m"`: 10 * time.Minute, `30`: 30 * time.Second, `"1h2m3s"`: time.Hour + 2*time.Minute + 3*time.Second} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Duration != want {
			t.Errorf("Duration %s = %v, %v; want %v", in, d, err, want)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"ten minutes"`), &d); err == nil {
		t.Error("bad duration accepted")
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: d}\nspec:\n  workload: {app: fortio-chain}\n")
	again := *s
	SetDefaults(&again)
	if !reflect.DeepEqual(*s, again) {
		t.Error("SetDefaults is not idempotent")
	}
	if got := s.Spec.Load.Duration.Duration; got != s.Spec.Load.MinDuration(s.Spec.Windows.Load.Duration) {
		t.Errorf("load.duration default %s does not cover warm-up, trims and window", got)
	}
	if s.Spec.CNI.Configured() {
		t.Error("cni defaulted although the scenario has no cni section")
	}
	if s.Spec.Images.Agent != defaultAgentImage || s.Spec.Images.Network != DefaultNetworkImage {
		t.Errorf("default profile images = %+v", s.Spec.Images)
	}
	local := mustParse(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: d}\nspec:\n  profile: localcluster\n  workload: {app: fortio-chain}\n")
	if local.Spec.Images.Agent != LocalClusterAgentImage || local.Spec.Images.Network != localClusterNetworkImage {
		t.Errorf("localcluster images = %+v", local.Spec.Images)
	}
	if got := (Chain{Depth: 2, FanOut: 3}).Services(); got != 13 {
		t.Errorf("Chain{2,3}.Services() = %d, want 13", got)
	}
}

func TestDuplicateKey(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nkind: Scenario\n"))
	if err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("duplicate key not reported: %v", err)
	}
}

// TestRoundTrip: a loaded scenario written back as YAML loads to the same value (the config echo in run.json).
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"../testdata/valid-full.yaml", "../examples/study-a-multi.yaml", "../examples/quickstart.yaml"} {
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := yaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("%s: re-parse: %v\n%s", f, err, out)
		}
		if !reflect.DeepEqual(s, back) {
			t.Errorf("%s: round trip changed the scenario", f)
		}
	}
}

func mustParse(t *testing.T, doc string) *Scenario {
	t.Helper()
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestChainDepthTopologies: chainDepth names the topologies <kind>-d<depth> (distinct case IDs), ChainFor gives each
// its depth, and the estimate's topology size follows it; without chainDepth nothing changes.
func TestChainDepthTopologies(t *testing.T) {
	t.Parallel()
	s, err := Load("../examples/chain-depth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		name  string
		depth int
		pods  int
	}{{"single-d1", 1, 2}, {"single-d2", 2, 3}, {"single-d4", 4, 5}} {
		topo := s.Spec.Workload.Topologies[i]
		_, pods := topologySize(s.Spec.Workload, topo)
		if topo.Name != want.name || s.Spec.Workload.ChainFor(topo).Depth != want.depth || pods != want.pods {
			t.Errorf("topology %d: %s depth %d pods %d, want %s %d %d", i, topo.Name, s.Spec.Workload.ChainFor(topo).Depth, pods, want.name, want.depth, want.pods)
		}
	}
	if c := NewPlan(s).Cases[0]; c.ID != "single-d1.none.q250.r1" {
		t.Errorf("first case ID %q", c.ID)
	}
	plain := mustParse(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: z}\nspec:\n  workload: {app: fortio-chain, chain: {depth: 3, fanOut: 1}}\n")
	if topo := plain.Spec.Workload.Topologies[0]; topo.Name != "single" || plain.Spec.Workload.ChainFor(topo).Depth != 3 {
		t.Errorf("without chainDepth: %+v depth %d, want single with the workload's depth 3", topo, plain.Spec.Workload.ChainFor(topo).Depth)
	}
}

// Valid tolerations (a dedicated pool, every taint, a NoExecute grace) pass validation and keep their fields.
func TestTolerationsValid(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: pool}
spec:
  workload:
    app: fortio-chain
    nodeSelector: {meshbench.dev/pool: bench}
    tolerations:
    - {key: meshbench.dev/pool, operator: Equal, value: bench, effect: NoSchedule}
    - {key: meshbench.dev/pool, value: bench}
    - {operator: Exists}
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 60}
`))
	if err != nil {
		t.Fatal(err)
	}
	ts := s.Spec.Workload.Tolerations
	if len(ts) != 4 || ts[0].Key != "meshbench.dev/pool" || ts[0].Value != "bench" || string(ts[0].Effect) != "NoSchedule" ||
		ts[2].Key != "" || string(ts[2].Operator) != "Exists" || ts[3].TolerationSeconds == nil || *ts[3].TolerationSeconds != 60 {
		t.Errorf("tolerations = %+v", ts)
	}
}

// The plan's estimate keeps the runner's guard (issue 29 section 2b): one sample spacing after each idle window
// before the load starts, and as the least cool-down after each load window. A configured scrape interval longer
// than the assumed spacing (15 s) raises it: 30 s here adds 15 s per idle window and 15 s per load (the 2 s trim
// end and the 28 s it was raised to).
func TestEstimateKeepsTheGuard(t *testing.T) {
	t.Parallel()
	const doc = "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: g}\nspec:\n  workload: {app: fortio-chain}\n" +
		"  modes: [none]\n  load: {qps: [10, 20], trimEnd: 2s}\n  windows: {repetitions: 1}\n"
	base := NewPlan(mustParse(t, doc))
	slow := NewPlan(mustParse(t, doc+"  prometheus: {url: \"http://127.0.0.1:9090\", scrapeInterval: 30s}\n"))
	if d := slow.Estimate - base.Estimate; d != 15*time.Second+2*15*time.Second {
		t.Errorf("estimate %s with a 30 s scrape, %s with the assumed 15 s spacing: +%s, want +45s (one idle window, two loads)", slow.Estimate, base.Estimate, d)
	}
	if !strings.Contains(base.EstimateNote, "a guard of 15s") || !strings.Contains(slow.EstimateNote, "a guard of 30s") {
		t.Errorf("notes %q, %q: want the guard named", base.EstimateNote, slow.EstimateNote)
	}
}
