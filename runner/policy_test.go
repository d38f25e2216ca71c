package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// numberedLoad is fakeLoad whose samples carry their own repetition (a pod network sample's number).
type numberedLoad struct{ fakeLoad }

func (f numberedLoad) Run(ctx context.Context, t target.Target, req LoadRequest) (LoadResult, error) {
	lr, err := f.fakeLoad.Run(ctx, t, req)
	for i := range lr.Samples {
		lr.Samples[i].Repetition = 7
	}
	return lr, err
}

// policyCase is one row of TestCasePolicyDecides.
type policyCase struct {
	name   string
	kind   scenario.CaseKind
	policy scenario.CasePolicy
	gaps   int // load windows the collector reports incomplete
	// wantLoad is the load call ("" when the case must never ask for one); wantWindows the recorded kinds.
	wantLoad    string
	wantWindows []string
	wantStatus  results.Status
	// named: the record and samples carry mode, topology, load level and repetition.
	named     bool
	wantFacts []results.FactKey // facts that must be recorded
	noFacts   []results.FactKey // facts that must not
	wantReps  int               // measurements (results.FactAttempts when more than 1)
}

// The runner measures and records a case as its policy says, whatever the case's kind: each row gives a case the
// other kind's policy. The collector's lead-in is 20 s and its guard 5 s (fakeCollector).
func TestCasePolicyDecides(t *testing.T) {
	t.Parallel()
	around := &scenario.LoadPolicy{Window: 30 * time.Second, WarmUp: 10 * time.Second, CoolDown: 2 * time.Second}
	pathFacts := map[string]string{string(results.FactCNIPath): "same-node", string(results.FactCNITest): "tcp"}
	tests := []policyCase{
		{name: "idle only never asks for a load", kind: scenario.CaseMesh,
			policy:      scenario.CasePolicy{Idle: 10 * time.Second, Attempts: 3},
			wantWindows: []string{results.WindowIdle}, wantStatus: results.StatusOK,
			noFacts: []results.FactKey{results.FactLeadIn, results.FactCoolDown}, wantReps: 1},
		{name: "idle then a load around its window, named", kind: scenario.CaseCNI,
			policy:   scenario.CasePolicy{Idle: 10 * time.Second, Load: around, Attempts: 1, Named: true},
			wantLoad: "lead 20s window 30s cool 5s", wantWindows: []string{results.WindowIdle, results.WindowLoad}, wantStatus: results.StatusOK,
			named: true, wantFacts: []results.FactKey{results.FactLeadIn, results.FactCoolDown}, wantReps: 1},
		{name: "back-to-back load: nothing raised, facts of the policy, samples keep their number", kind: scenario.CaseMesh,
			policy:   scenario.CasePolicy{Load: &scenario.LoadPolicy{Window: 2 * time.Second, BackToBack: true}, Attempts: 1, Facts: pathFacts},
			wantLoad: "lead 20s window 2s cool 0s", wantWindows: []string{results.WindowLoad}, wantStatus: results.StatusOK,
			wantFacts: []results.FactKey{results.FactCNIPath, results.FactCNITest}, noFacts: []results.FactKey{results.FactLeadIn, results.FactCoolDown}, wantReps: 1},
		{name: "attempts of the policy: an incomplete window is measured again", kind: scenario.CaseCNI,
			policy: scenario.CasePolicy{Load: around, Attempts: 2, Named: true}, gaps: 1,
			wantLoad: "lead 20s window 30s cool 5s", wantWindows: []string{results.WindowLoad}, wantStatus: results.StatusOK,
			named: true, wantReps: 2},
		{name: "one attempt: an incomplete window fails the case", kind: scenario.CaseMesh,
			policy: scenario.CasePolicy{Load: around, Attempts: 1, Named: true}, gaps: 1,
			wantLoad: "lead 20s window 30s cool 5s", wantWindows: []string{results.WindowLoad}, wantStatus: results.StatusFailed,
			named: true, wantReps: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &calls{}
			clk := &fakeClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
			st := &memStore{}
			gaps := tc.gaps
			pc := scenario.Case{ID: "case-1", Index: 1, Kind: tc.kind, Topology: scenario.Topology{Name: "single"}, Mode: scenario.ModeNone,
				QPS: scenario.QPS{Value: 50}, Repetition: 1, Policy: tc.policy}
			r := &Runner{Plan: scenario.Plan{Cases: []scenario.Case{pc}}, RunID: "run-1", Workloads: fakeWorkloads{c, clk},
				Mesh: fakeMesh{calls: c}, Load: numberedLoad{fakeLoad{calls: c, clock: clk}},
				Collector: gappyCollector{fakeCollector{c}, &gaps}, Store: st, Clock: clk}
			if _, err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var loads []string
			for _, l := range c.log {
				if rest, ok := strings.CutPrefix(l, "load case-1 "); ok {
					loads = append(loads, rest)
				}
			}
			switch {
			case tc.wantLoad == "" && len(loads) > 0:
				t.Errorf("asked for a load: %q", loads)
			case tc.wantLoad != "" && (len(loads) != tc.wantReps || loads[0] != tc.wantLoad):
				t.Errorf("loads %q, want %d of %q", loads, tc.wantReps, tc.wantLoad)
			}
			if len(st.cases) != 1 {
				t.Fatalf("%d records", len(st.cases))
			}
			checkPolicyRecord(t, tc, st)
		})
	}
}

// checkPolicyRecord checks the one recorded case of a TestCasePolicyDecides row and its samples.
func checkPolicyRecord(t *testing.T, tc policyCase, st *memStore) {
	t.Helper()
	rec := st.cases[0]
	var kinds []string
	for _, w := range rec.Windows {
		kinds = append(kinds, w.Kind)
	}
	if rec.Status != tc.wantStatus || !slices.Equal(kinds, tc.wantWindows) {
		t.Errorf("status %s (%s) windows %v, want %s %v", rec.Status, rec.Reason, kinds, tc.wantStatus, tc.wantWindows)
	}
	if named := rec.Mode == "none" && rec.Topology == "single" && rec.Load == "50" && rec.Repetition == 1; named != tc.named {
		t.Errorf("record mode %q topology %q load %q repetition %d: named %v, want %v", rec.Mode, rec.Topology, rec.Load, rec.Repetition, named, tc.named)
	}
	for _, k := range tc.wantFacts {
		if rec.Facts[k] == "" {
			t.Errorf("no fact %s: %v", k, rec.Facts)
		}
	}
	for _, k := range tc.noFacts {
		if v, ok := rec.Facts[k]; ok {
			t.Errorf("fact %s = %q, want none", k, v)
		}
	}
	if got, want := rec.Facts[results.FactAttempts], map[bool]string{true: "2"}[tc.wantReps == 2]; got != want {
		t.Errorf("attempts fact %q, want %q", got, want)
	}
	for _, s := range st.samples {
		idle := s.Window.Kind == results.WindowIdle
		switch {
		case tc.named && (s.Mode != "none" || s.Topology != "single" || s.Repetition != 1 || (s.Load == "") != idle):
			t.Errorf("named case's sample %+v", s)
		case !tc.named && (s.Mode != "" || s.Topology != "" || s.Load != ""):
			t.Errorf("unnamed case's sample carries case fields: %+v", s)
		case !tc.named && s.Component == results.ComponentLoadgen && s.Repetition != 7:
			t.Errorf("unnamed case's load sample lost its own repetition: %+v", s)
		}
	}
}
