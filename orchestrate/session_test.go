package orchestrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/report"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// resumeBase is a valid scenario with both verbs' sections, as loaded (defaults applied).
func resumeBase() *scenario.Scenario {
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: net}
spec:
  workload: {app: bank-of-anthos, replicas: 1}
  modes: [none, sidecar]
  windows: {idle: 1m, load: 1m, repetitions: 3}
  cni: {tests: [tcp, udp], paths: [same-node], duration: 10s, samples: 3, streams: 1, udpBitrate: 1G, requestBytes: 100, responseBytes: 100}
  images: {network: "net:1", agent: "reg/meshbench-agent:v1", pullPolicy: IfNotPresent, bankOfAnthos: {registry: boa, tag: v0.6.7}}
  output: {dir: runs}
`))
	if err != nil {
		panic(err)
	}
	return s
}

// recordRun writes a run directory of command whose run.json records s, with one case, and returns it.
func recordRun(t *testing.T, command string, s *scenario.Scenario) string {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "runs", command+"-20261203-101500-3fa2")
	st, err := results.Create(dir, results.RunMeta{RunID: filepath.Base(dir), Command: command, Scenario: raw})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendCase(results.CaseResult{CaseID: "a", Status: results.StatusOK}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// dirFiles is every file of a directory with its bytes.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func appendOK(t *testing.T, s *session, ids ...string) {
	t.Helper()
	for _, id := range ids {
		now := time.Now().UTC()
		if err := s.store.AppendCase(results.CaseResult{CaseID: id, Status: results.StatusOK, Start: now, End: now}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func readRun(t *testing.T, dir string) *results.Run {
	t.Helper()
	run, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// interruptedRun runs a new session's flow on a temp directory as a first invocation that SIGINT stopped after 1 of
// 4 cases, checking what the new run's open, begin and finish wrote, and returns the run directory and ID.
func interruptedRun(t *testing.T, log *slog.Logger) (dir, id string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "runs")
	s := resumeBase()
	sess, err := openSession(openOptions{command: results.CommandRun, outputDir: out, prefix: "flow", log: log,
		newMeta: func() (results.RunMeta, error) {
			meta, err := newMeta(results.CommandRun, s, scenario.NewPlan(s))
			meta.Notes = append(meta.Notes, "first note")
			return meta, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	dir, id = sess.dir(), sess.runID()
	if sess.resumed() || sess.done() != nil || !strings.HasPrefix(id, "flow-") || dir != filepath.Join(out, id) {
		t.Fatalf("new session: resumed %v, done %v, id %q, dir %s", sess.resumed(), sess.done(), id, dir)
	}
	if _, err := sess.labelRecord(); err != nil {
		t.Fatal(err)
	}
	if err := sess.begin("plan"); err != nil {
		t.Fatal(err)
	}
	if m := readRun(t, dir).Meta; m.RunID != id || m.Command != results.CommandRun || len(m.Invocations) != 1 || !slices.Contains(m.Notes, "first note") {
		t.Fatalf("run.json of the new run: %+v", m)
	}
	appendOK(t, sess, "a")
	intr := runner.Outcome{Total: 4, OK: 1, Interrupted: true, InterruptedCase: "b", InterruptedAt: time.Now(), NotRun: []string{"b", "c", "d"}}
	if _, _, err := sess.finish(cancelledBy(syscall.SIGINT), intr, nil); err != nil {
		t.Fatal(err)
	}
	sess.close()
	return dir, id
}

// TestSessionNew: a new session creates <output>/<prefix>-<start>-<suffix> with run.json from newMeta (interruptedRun
// checks it); finish writes summary.json, the report and the interruption mark.
func TestSessionNew(t *testing.T) {
	t.Parallel()
	dir, _ := interruptedRun(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	first := readRun(t, dir)
	if first.Summary == nil || first.Meta.Interrupted == nil || first.Meta.Invocations[0].Outcome != results.OutcomeInterrupted {
		t.Fatalf("after finish: summary %v, interrupted %+v, invocations %+v", first.Summary != nil, first.Meta.Interrupted, first.Meta.Invocations)
	}
	if _, err := os.Stat(filepath.Join(dir, "report", report.MarkdownFile)); err != nil {
		t.Fatal(err)
	}
}

// TestSessionResume: the resumed session takes the recorded run ID and kept cases, repairs (and logs) a torn last
// line, rewrites no run.json before begin, starts a second invocation at begin, adds each note once, and its
// completed finish clears the mark.
func TestSessionResume(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	dir, id := interruptedRun(t, log)
	// A torn last line, as a kill in the middle of a write leaves it.
	f, err := os.OpenFile(filepath.Join(dir, results.CasesFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"caseID":"b","sta`)
	_ = f.Close()
	runJSON, _ := os.ReadFile(filepath.Join(dir, results.RunFile))
	sess, err := openSession(openOptions{command: results.CommandRun, resumeDir: dir, outputDir: t.TempDir(), prefix: "x", log: log,
		newMeta: func() (results.RunMeta, error) { t.Error("newMeta called on resume"); return results.RunMeta{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !sess.resumed() || sess.runID() != id || sess.dir() != dir || len(sess.done()) != 1 || sess.done()["a"].Status != results.StatusOK {
		t.Fatalf("resumed session: resumed %v, id %q, dir %s, done %v", sess.resumed(), sess.runID(), sess.dir(), sess.done())
	}
	if !strings.Contains(logs.String(), "repaired") {
		t.Errorf("the repair is not logged:\n%s", logs.String())
	}
	if now, _ := os.ReadFile(filepath.Join(dir, results.RunFile)); !bytes.Equal(now, runJSON) {
		t.Error("run.json written before begin")
	}
	if err := sess.begin("plan"); err != nil {
		t.Fatal(err)
	}
	if inv := readRun(t, dir).Meta.Invocations; len(inv) != 2 || inv[1].End != nil {
		t.Fatalf("after begin: invocations %+v", inv)
	}
	sess.addNotes("first note", "second note", "second note")
	appendOK(t, sess, "b", "c", "d")
	if _, _, err := sess.finish(context.Background(), runner.Outcome{Total: 4, Resumed: 1, OK: 3}, nil); err != nil {
		t.Fatal(err)
	}
	sess.close()
	after := readRun(t, dir)
	m := after.Meta
	if m.Interrupted != nil || len(m.Invocations) != 2 || m.Invocations[1].Outcome != results.OutcomeCompleted || len(after.Cases) != 4 {
		t.Fatalf("after the resume: interrupted %+v, invocations %+v, %d cases", m.Interrupted, m.Invocations, len(after.Cases))
	}
	for _, note := range []string{"first note", "second note"} {
		if c := len(slices.DeleteFunc(slices.Clone(m.Notes), func(n string) bool { return n != note })); c != 1 {
			t.Errorf("note %q %d times in %q, want once", note, c, m.Notes)
		}
	}
}

// TestSessionRefusesTheOtherVerbsRun: a session of one verb does not open (or repair) a run of the other: an
// InputError naming the verb that continues it, the directory left byte for byte.
func TestSessionRefusesTheOtherVerbsRun(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct{ recorded, command, want string }{
		{results.CommandCNI, results.CommandRun, "continue it with meshbench cni --resume"},
		{results.CommandRun, results.CommandCNI, "continue it with meshbench run --resume"},
	} {
		dir := recordRun(t, tc.recorded, resumeBase())
		f, err := os.OpenFile(filepath.Join(dir, results.SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(`{"torn`)
		_ = f.Close()
		before := dirFiles(t, dir)
		_, err = openSession(openOptions{command: tc.command, resumeDir: dir, log: log})
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s session of a %s run: %v", tc.command, tc.recorded, err)
		}
		if after := dirFiles(t, dir); len(after) != len(before) || after[filepath.Join(dir, results.SamplesFile)] != before[filepath.Join(dir, results.SamplesFile)] {
			t.Errorf("%s session of a %s run changed the directory", tc.command, tc.recorded)
		}
	}
}

// TestCNIRefusesMeshResume: CNI refuses to continue a mesh run's directory before touching the cluster (Deps has no
// clients: anything further would panic), naming run --resume, as Run refuses a cni run's.
func TestCNIRefusesMeshResume(t *testing.T) {
	t.Parallel()
	_, err := CNI(context.Background(), CNIConfig{Scenario: resumeBase(), ResumeDir: filepath.Join("..", "testdata", "runs", "sample")}, Deps{})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a cni run: continue it with meshbench run --resume") {
		t.Fatalf("CNI err = %v, want an InputError naming run --resume", err)
	}
}
