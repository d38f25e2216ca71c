package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/interrupt"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
)

func TestExitCodeOfInterruptions(t *testing.T) {
	t.Parallel()
	sigint, sigterm := &interrupt.SignalError{Signal: syscall.SIGINT}, &interrupt.SignalError{Signal: syscall.SIGTERM}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"SIGINT", fmt.Errorf("run x interrupted after 1 of 4 cases: %w", sigint), exitSIGINT},
		{"SIGTERM", fmt.Errorf("interrupted: %w", sigterm), exitSIGTERM},
		// A check cut short by the signal reads as bad input, a case as failed: the interruption wins.
		{"signal inside bad input", &orchestrate.InputError{Err: fmt.Errorf("get /version: %w", sigint)}, exitSIGINT},
		{"signal inside a failed run", &exitError{Code: exitRunFailed, Err: errors.Join(errors.New("case failed"), sigterm)}, exitSIGTERM},
		{"cancelled without a signal is a failed run", fmt.Errorf("x: %w", context.Canceled), exitRunFailed},
		{"bad input", badInput(errors.New("x")), exitBadInput},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
	if exitSIGINT != 128+int(syscall.SIGINT) || exitSIGTERM != 128+int(syscall.SIGTERM) {
		t.Errorf("exit codes %d %d are not the shell's 128+signal", exitSIGINT, exitSIGTERM)
	}
}

// hangingAPIServer is an API server that accepts every request and never answers until the client gives up; started
// is told of each request.
func hangingAPIServer(t *testing.T) (url string, started <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case ch <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

func kubeconfigFor(t *testing.T, dir, server string) string {
	t.Helper()
	kc := filepath.Join(dir, "kubeconfig")
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""+server+"\"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	return kc
}

// TestSignalWhileConnectingExits130: a signal while the API server check waits cancels it; the verb must exit with
// the signal's code, not 2 (which an unreachable API server gives) nor 1, and say it was interrupted.
func TestSignalWhileConnectingExits130(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"run", "cni"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(fmt.Sprintf("%s-%d", verb, sig), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				url, started := hangingAPIServer(t)
				scn := filepath.Join(dir, "s.yaml")
				writeFile(t, scn, runScenarioYAML)
				out := t.TempDir()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				go func() {
					<-started
					cancel(&interrupt.SignalError{Signal: sig})
				}()
				var stdout, stderr bytes.Buffer
				code := Execute(ctx, Streams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
					[]string{verb, "-f", scn, "--kubeconfig", kubeconfigFor(t, dir, url), "--output-dir", out, "--skip-image-check"})
				if code != 128+int(sig) || !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("exit %d, want %d; stderr:\n%s", code, 128+int(sig), stderr.String())
				}
				if entries, _ := os.ReadDir(out); len(entries) != 0 {
					t.Errorf("interrupted before the run directory, yet %v exists", entries)
				}
			})
		}
	}
}

// TestInterruptedRunExits130AndIsMarked: a run whose context a SIGINT cancelled after 1 of 4 cases: orchestrate's
// Finish (as orchestrate.Run calls it) writes the mark into run.json and the report, and the verb's outcome maps to
// exit 130 with the resume hint.
func TestInterruptedRunExits130AndIsMarked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interrupt.SignalError{Signal: syscall.SIGINT})
	start := time.Now().UTC()
	store, meta, err := orchestrate.CreateRun(t.TempDir(), "int", results.RunMeta{Command: "run", Start: start, Invocations: []results.Invocation{{Start: start}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AppendCase(results.CaseResult{RunID: meta.RunID, CaseID: "single/none/100/r1", Status: results.StatusOK, Start: start, End: start}, nil); err != nil {
		t.Fatal(err)
	}
	out := runner.Outcome{Total: 4, OK: 1, Interrupted: true, InterruptedCase: "single/sidecar/100/r1", InterruptedPhase: "wait-ready",
		InterruptedAt: time.Now(), NotRun: []string{"single/sidecar/100/r1", "single/ambient/100/r1", "single/waypoint/100/r1"}}
	sum, md, err := orchestrate.Finish(store, meta, orchestrate.EndingOf(ctx, out, nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_ = store.Close()
	var stdout, stderr bytes.Buffer
	runErr := runDone(ctx, Streams{Out: &stdout, ErrOut: &stderr}, &globalFlags{Output: "table"},
		orchestrate.RunResult{RunID: meta.RunID, Dir: store.Dir(), Summary: sum, Markdown: md, Outcome: out}, nil)
	if code := exitCode(runErr); code != exitSIGINT || !strings.Contains(runErr.Error(), "interrupted after 1 of 4 cases (continue with --resume") {
		t.Errorf("exit %d, error %v", code, runErr)
	}
	run, err := results.Read(store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if in := run.Meta.Interrupted; in == nil || in.Signal != "SIGINT" || in.Completed != 1 || in.Planned != 4 || in.Phase != "wait-ready" {
		t.Errorf("run.json interrupted: %+v", in)
	}
	if !strings.Contains(stdout.String(), "interrupted after 1 of 4 cases (SIGINT, in wait-ready of case single/sidecar/100/r1)") {
		t.Errorf("printed report does not mark the interruption:\n%s", stdout.String())
	}
}

// The subprocess tests: the test binary re-executed as meshbench (TestMain), so real signals reach Main's handler.
const childEnv = "MESHBENCH_TEST_APP_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "main": // meshbench itself, with the arguments after "--"
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"meshbench"}, os.Args[i+1:]...)
				break
			}
		}
		os.Exit(Main())
	case "stuck-cleanup": // a verb whose cleanup after the signal does not end: only a second signal exits
		streams := Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
		ctx, stop := signalContext(streams, os.Exit, signalNoticeFor([]string{"run"}))
		defer stop()
		fmt.Fprintln(os.Stderr, "child ready")
		<-ctx.Done()
		fmt.Fprintln(os.Stderr, "child cleaning up")
		time.Sleep(time.Minute)
		os.Exit(99)
	}
	os.Exit(m.Run())
}

// child starts the test binary in mode with args; lines receives its stderr line by line.
func child(t *testing.T, mode string, args ...string) (*exec.Cmd, <-chan string, *strings.Builder, <-chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	var mu sync.Mutex
	all := &strings.Builder{}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			all.WriteString(sc.Text() + "\n")
			mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		done <- cmd.Wait()
	}()
	return cmd, lines, all, done
}

func exitOf(t *testing.T, done <-chan error, within time.Duration) int {
	t.Helper()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		t.Fatalf("wait: %v", err)
	case <-time.After(within):
		t.Fatalf("the child did not exit within %s", within)
	}
	return -1
}

// TestSignalExitCodesSubprocess: meshbench run and cni, SIGINT or SIGTERM while the API server check waits: the
// process exits 130 or 143 and says it was interrupted.
func TestSignalExitCodesSubprocess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		verb string
		sig  syscall.Signal
	}{{"run", syscall.SIGINT}, {"run", syscall.SIGTERM}, {"cni", syscall.SIGINT}} {
		t.Run(fmt.Sprintf("%s-%d", tc.verb, tc.sig), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			url, started := hangingAPIServer(t)
			scn := filepath.Join(dir, "s.yaml")
			writeFile(t, scn, runScenarioYAML)
			cmd, _, stderr, done := child(t, "main", tc.verb, "-f", scn, "--kubeconfig", kubeconfigFor(t, dir, url), "--output-dir", t.TempDir(), "--skip-image-check")
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("meshbench never asked the API server")
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, done, 30*time.Second); code != 128+int(tc.sig) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, 128+int(tc.sig), stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr does not say interrupted:\n%s", stderr.String())
			}
		})
	}
}

// TestSecondSignalExitsAtOnce: while cleanup after the first SIGINT still runs, a second signal exits at once with
// the first one's code (130, not 143 or 1) and says what may be left and how to remove it.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	cmd, lines, stderr, done := child(t, "stuck-cleanup")
	waitLine := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no %q line; stderr:\n%s", want, stderr.String())
			}
		}
	}
	waitLine("child ready")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine("child cleaning up")
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, done, 10*time.Second); code != exitSIGINT {
		t.Errorf("exit %d after the second signal, want %d", code, exitSIGINT)
	}
	if d := time.Since(sent); d > 5*time.Second {
		t.Errorf("took %s to exit after the second signal (cleanup sleeps a minute)", d)
	}
	for _, want := range []string{"SIGINT: stopping", "Send it again to exit at once", "SIGTERM during cleanup: exiting now with 130", "meshbench cleanup --run RUN_ID"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestSignalTextPerVerb: what the first and second signals say depends on the verb of the command line: plan (and
// every verb that changes nothing) does not speak of cleaning up app namespaces that do not exist; run, cni, cleanup
// and schedule say what they clean up or leave.
func TestSignalTextPerVerb(t *testing.T) {
	t.Parallel()
	sigint, sigterm := &interrupt.SignalError{Signal: syscall.SIGINT}, &interrupt.SignalError{Signal: syscall.SIGTERM}
	nothing := "SIGINT: stopping and exiting with 130; nothing to clean up. Send it again to exit at once."
	tests := []struct {
		args          []string
		first, second string
	}{
		{[]string{"plan", "-f", "examples/quickstart.yaml"}, nothing, "SIGTERM: exiting now with 130 (interrupted by SIGINT).\n"},
		{[]string{"-o", "json", "plan", "-f", "x.yaml"}, nothing, ""},
		{[]string{"report", "runs/x", "--show", "all"}, nothing, ""},
		{[]string{"compare", "a", "b"}, nothing, ""},
		{[]string{"preflight", "-f", "x.yaml"}, nothing, ""},
		{[]string{"version"}, nothing, ""},
		{[]string{"images", "save", "-o", "x.tar"}, nothing, ""},
		{[]string{"frobnicate"}, nothing, ""},
		{nil, nothing, ""},
		{[]string{"run", "-f", "x.yaml"}, "SIGINT: stopping; cleaning up (load clients, app namespaces, namespace labels) before exiting with 130",
			"SIGTERM during cleanup: exiting now with 130 (interrupted by SIGINT). The cluster may still hold this run's namespaces"},
		{[]string{"-v", "run", "--resume", "runs/x"}, "cleaning up (load clients, app namespaces, namespace labels)", "meshbench cleanup --run RUN_ID"},
		{[]string{"cni", "-f", "x.yaml"}, "cleaning up (the test namespace and its pods)", "this run's test namespace and its pods"},
		{[]string{"cleanup", "--all"}, "what is not deleted or restored yet stays: run the same meshbench cleanup again", "run the same meshbench cleanup again"},
		{[]string{"schedule", "-f", "x.yaml", "--apply"}, "the objects applied so far stay", "--apply again to finish"},
	}
	for _, tc := range tests {
		n := signalNoticeFor(tc.args)
		first, second := firstSignalText(sigint, n), secondSignalText(sigint, sigterm, n)
		if !strings.Contains(first, tc.first) || !strings.Contains(second, tc.second) {
			t.Errorf("%v:\nfirst  %q (want %q)\nsecond %q (want %q)", tc.args, first, tc.first, second, tc.second)
		}
		if !slices.Contains(tc.args, "run") && strings.Contains(first+second, "namespace labels") {
			t.Errorf("%v speaks of namespace labels it never changes:\n%s%s", tc.args, first, second)
		}
	}
}
