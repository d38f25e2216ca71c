package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/interrupt"
	"github.com/meshbench/meshbench/internal/version"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// session is one invocation's hold on a run directory, for both verbs: open (a new run or a resumed one), begin,
// finish, close. A resumed run's run.json is not rewritten before begin (results.Resume only repairs the logs), so a
// resume refused in between leaves the recorded run's metadata, summary and report as they were.
type session struct {
	store *results.Store
	// meta is run.json as this invocation writes it: the verb adds its facts and notes before finish.
	meta results.RunMeta
	// recorded is what a resumed run's directory held when it was opened (nil: a new run).
	recorded *results.Run
	log      *slog.Logger
}

// openOptions say which run a session opens: the one in resumeDir, else a new one under outputDir.
type openOptions struct {
	// command is the verb (results.CommandRun, results.CommandCNI): a resumed run must be one of it.
	command   string
	resumeDir string
	// outputDir and prefix place a new run: <outputDir>/<prefix>-<start>-<suffix> (CreateRun).
	outputDir, prefix string
	// newMeta is run.json of a new run before its ID is drawn (not called on resume).
	newMeta func() (results.RunMeta, error)
	log     *slog.Logger
}

// openSession opens the run o names. A resumed run is repaired as results.Resume does (each repair logged); one of
// the other verb, or a directory results.Resume refuses, is an *InputError. A new run's directory and run.json are
// created (CreateRun).
func openSession(o openOptions) (*session, error) {
	if o.resumeDir == "" {
		meta, err := o.newMeta()
		if err != nil {
			return nil, err
		}
		st, meta, err := CreateRun(o.outputDir, o.prefix, meta)
		if err != nil {
			return nil, err
		}
		return &session{store: st, meta: meta, log: o.log}, nil
	}
	// The other verb's run is refused before results.Resume repairs anything in it.
	if err := checkResumeDir(o.resumeDir, o.command); err != nil {
		return nil, err
	}
	st, run, err := results.Resume(o.resumeDir)
	if err != nil {
		return nil, inputError(err)
	}
	for _, w := range run.Warnings {
		o.log.Warn("resume", "repaired", w.String())
	}
	return &session{store: st, meta: run.Meta, recorded: run, log: o.log}, nil
}

func (s *session) resumed() bool { return s.recorded != nil }

// dir is the run directory.
func (s *session) dir() string { return s.store.Dir() }

// runID is the run's ID: new, or the recorded one.
func (s *session) runID() string { return s.meta.RunID }

// done are the cases a resumed run keeps (results.Run.DoneCases; nil for a new run).
func (s *session) done() map[string]results.CaseResult {
	if s.recorded == nil {
		return nil
	}
	return s.recorded.DoneCases()
}

// labelRecord opens the run directory's namespace label record (mesh.LabelRecordFile): what a mode switch changed,
// so that the run, its --resume and meshbench cleanup restore it.
func (s *session) labelRecord() (*mesh.LabelRecord, error) {
	return mesh.OpenLabelRecord(filepath.Join(s.dir(), mesh.LabelRecordFile))
}

// begin starts this invocation once the verb's own checks passed. A resumed run's invocation span starts now and is
// written at once, so a crash of it is found by the next --resume and its "took" sums the active spans; a new run's
// first span began with its run.json.
func (s *session) begin(plan string) error {
	s.log.Info("run", "id", s.runID(), "dir", s.dir(), "resumed", s.resumed(), "plan", plan)
	if s.recorded == nil {
		return nil
	}
	s.meta = results.StartInvocation(s.meta, s.recorded.Cases, time.Now().UTC())
	return s.store.UpdateMeta(s.meta)
}

// addNotes appends the notes run.json does not hold yet: a resumed run's already holds those of earlier sessions.
func (s *session) addNotes(notes ...string) {
	for _, n := range notes {
		if !slices.Contains(s.meta.Notes, n) {
			s.meta.Notes = append(s.meta.Notes, n)
		}
	}
}

// finish ends this invocation (Finish with the runner's ending) and returns the summary and its Markdown.
func (s *session) finish(ctx context.Context, out runner.Outcome, runErr error) (results.Summary, string, error) {
	return Finish(s.store, s.meta, EndingOf(ctx, out, runErr), s.log)
}

func (s *session) close() { _ = s.store.Close() }

// insecureClients names the clients of s whose TLS verification is off (run.json's insecure): only an explicit
// field turns it off.
func insecureClients(s *scenario.Scenario) []string {
	var out []string
	if s != nil && s.Spec.Prometheus.InsecureSkipVerify {
		out = append(out, results.InsecurePrometheus)
	}
	return out
}

// newMeta is run.json of a new run before its ID is drawn: command, start, tool, the scenario echo and the plan.
func newMeta(command string, s *scenario.Scenario, plan any) (results.RunMeta, error) {
	v := version.Get()
	meta := results.RunMeta{Command: command, Start: time.Now().UTC(),
		Tool: results.ToolInfo{Version: v.Version, Commit: v.Commit, GoVersion: v.GoVersion, BuildDate: v.BuildDate}}
	meta.Invocations = []results.Invocation{{Start: meta.Start}}
	var err error
	if meta.Scenario, err = json.Marshal(s); err != nil {
		return meta, fmt.Errorf("encode scenario: %w", err)
	}
	if meta.Plan, err = json.Marshal(plan); err != nil {
		return meta, fmt.Errorf("encode plan: %w", err)
	}
	meta.Insecure = insecureClients(s)
	if len(meta.Insecure) > 0 { // every report repeats the notes: a reader sees it without opening run.json
		meta.Notes = append(meta.Notes, fmt.Sprintf("TLS verification was turned off for: %s (insecureSkipVerify)", strings.Join(meta.Insecure, ", ")))
	}
	return meta, nil
}

// Ending is how an invocation ended: its outcome (results.Outcome*), the signal that stopped it, and where an
// interruption left the run (nil when the plan completed).
type Ending struct {
	Outcome     string
	Signal      string
	Interrupted *results.Interruption
}

// EndingOf reads how the runner's invocation ended: interrupted when the runner says so, or when the context was
// cancelled before every planned case had a record (a cancel the runner did not see, e.g. before its first case);
// the signal comes from the context's cause (interrupt.SignalError).
func EndingOf(ctx context.Context, out runner.Outcome, runErr error) Ending {
	var e Ending
	if se := interrupt.FromContext(ctx); se != nil {
		e.Signal = se.Name()
	}
	switch {
	case out.Interrupted || (ctx.Err() != nil && out.Recorded() < out.Total):
		at := out.InterruptedAt
		if at.IsZero() {
			at = time.Now()
		}
		e.Outcome = results.OutcomeInterrupted
		e.Interrupted = &results.Interruption{Signal: e.Signal, At: at.UTC(), Case: out.InterruptedCase, Phase: out.InterruptedPhase,
			Completed: out.Recorded(), Planned: out.Total, NotRun: out.NotRun}
	case runErr != nil:
		e.Outcome = results.OutcomeError
	default:
		e.Outcome = results.OutcomeCompleted
	}
	return e
}

// Finish summarises everything the run directory holds (resumed cases included), writes summary.json, the end time
// of this invocation with its ending (the interruption mark, or none: a completed --resume clears it) and the report
// files, and returns the summary and its Markdown.
func Finish(store *results.Store, meta results.RunMeta, ending Ending, log *slog.Logger) (results.Summary, string, error) {
	run, err := results.Read(store.Dir())
	if err != nil {
		return results.Summary{}, "", err
	}
	sum := results.Summarize(meta, run.Samples, run.Cases, results.SummaryOptions{}) // meta: with the notes of this session
	if err := store.WriteSummary(sum); err != nil {
		return sum, "", err
	}
	meta = results.EndInvocation(meta, time.Now().UTC(), ending.Outcome, ending.Signal, ending.Interrupted)
	if err := store.UpdateMeta(meta); err != nil {
		return sum, "", err
	}
	run.Meta, run.Summary = meta, &sum
	rep := report.Build(run)
	if _, err := report.Write(filepath.Join(store.Dir(), "report"), rep.Files()); err != nil {
		log.Warn("write report files", "err", err)
	}
	return sum, string(rep.Markdown()), nil
}
