//go:build e2e && faults

package e2e

// The fault matrix (issue 15 section 2): `meshbench run` on the local cluster meets a signal, a kill -9, an API
// server restart, a Prometheus outage or a full output directory in a chosen phase, and each cell checks the run's
// outcome, what is left in the cluster and what was measured. The cells take minutes each, so they build only with
// `-tags e2e,faults` (`make faults`); docs/reliability.md holds the table of outcomes they prove.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/results"
)

// faultSlots bounds how many cells run at once: each deploys a chain and a load client on the two-core cluster.
var faultSlots = make(chan struct{}, 3)

func faultSlot(t *testing.T) {
	t.Helper()
	faultSlots <- struct{}{}
	t.Cleanup(func() { <-faultSlots })
}

// faultProc is a meshbench subprocess whose stderr is kept line by line for markers.
type faultProc struct {
	cmd    *exec.Cmd
	work   string
	mu     sync.Mutex
	lines  []string
	done   chan struct{}
	err    error
	signal time.Time
}

func startFault(ctx context.Context, t *testing.T, c *Cluster, work string, args ...string) *faultProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, cniCLI(t), args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &faultProc{cmd: cmd, work: work, done: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pipe)
	}()
	go func() {
		<-scanned // Wait closes the pipe: read everything first
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *faultProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitMarker waits until re has matched n lines of stderr; false when the process exited or the timeout passed.
func (p *faultProc) waitMarker(re *regexp.Regexp, n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		seen := 0
		for _, l := range p.lines {
			if re.MatchString(l) {
				seen++
			}
		}
		p.mu.Unlock()
		if seen >= n {
			return true
		}
		select {
		case <-p.done:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

func (p *faultProc) send(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.signal = time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// exit waits for the process; its exit code, or -1 after the timeout (the process is then killed).
func (p *faultProc) exit(timeout time.Duration) int {
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return -1
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	return -2
}

var runIDRE = regexp.MustCompile(`msg=run id=(\S+)`)

// runID is the id meshbench printed at its start ("" before that line).
func (p *faultProc) runID() string {
	if m := runIDRE.FindStringSubmatch(p.log()); m != nil {
		return m[1]
	}
	return ""
}

// faultScenario is the quickstart chain with short windows, two load levels (two cases per mode) and a namespace
// prefix of its own; modes as given.
func faultScenario(t *testing.T, c *Cluster, name string, modes []any, change func(spec map[string]any)) string {
	// A cell that fails may leave its namespace: the next invocation must not meet it.
	deleteNamespaceAtEnd(t, c, "mb-"+name+"-single")
	return quickstartVariant(t, name, func(spec map[string]any) {
		spec["workload"].(map[string]any)["namespacePrefix"] = "mb-" + name + "-"
		spec["modes"] = modes
		spec["load"].(map[string]any)["qps"] = []any{50, 100}
		spec["load"].(map[string]any)["warmUp"] = "5s"
		spec["windows"].(map[string]any)["repetitions"] = 1
		spec["windows"].(map[string]any)["idle"] = "15s"
		spec["windows"].(map[string]any)["load"] = "20s"
		if change != nil {
			change(spec)
		}
	})
}

// leftovers lists every object that carries the run's label, cluster-wide, after giving terminating namespaces
// up to wait to go away. Discovery makes it cover kinds meshbench may create in future too.
func leftovers(ctx context.Context, t *testing.T, c *Cluster, runID string, wait time.Duration) []string {
	t.Helper()
	if runID == "" {
		return nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		t.Fatalf("discovery: %v", err)
	}
	var gvrs []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") || r.Name == "events" {
				continue
			}
			gvrs = append(gvrs, gv.WithResource(r.Name))
		}
	}
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + runID}
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for _, gvr := range gvrs {
			l, err := dyn.Resource(gvr).List(ctx, sel)
			if err != nil {
				if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
					t.Logf("list %s: %v", gvr, err)
				}
				continue
			}
			for _, o := range l.Items {
				left = append(left, fmt.Sprintf("%s %s/%s", gvr.Resource, o.GetNamespace(), o.GetName()))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(2 * time.Second)
	}
}

// faultFault runs hack/localcluster/fault.sh (the cluster's daemons are root's; so are the e2e tests).
func faultFault(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "bash", append([]string{"../../hack/localcluster/fault.sh"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fault.sh %v: %v\n%s", args, err, out)
	}
	return nil
}

// recordedCases reads the run directory of p (nil when none was created yet).
func recordedCases(t *testing.T, work string) (*results.Run, string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(work, "runs", "*", results.RunFile))
	if len(m) == 0 {
		return nil, ""
	}
	dir := filepath.Dir(m[0])
	r, err := results.Read(dir)
	if err != nil {
		t.Fatalf("the run directory is not readable after the fault: %v", err)
	}
	return r, dir
}

// signalCell is one phase of a run a signal meets: the stderr marker that starts it (its n-th match), how long
// after the marker the signal goes, and the cases recorded by then.
type signalCell struct {
	phase  string
	istio  bool
	marker string
	n      int
	delay  time.Duration
	cases  int
}

// start runs `meshbench run` on the fault scenario name in the cell's mode (sidecar for Istio cells) and returns
// once the cell's marker came and its delay passed: the moment the fault goes in.
func (cell signalCell) start(ctx context.Context, t *testing.T, c *Cluster, name string) (*faultProc, string) {
	t.Helper()
	if cell.istio {
		RequireIstio(t)
	}
	faultSlot(t)
	modes := []any{"none"}
	if cell.istio {
		modes = []any{"sidecar"}
	}
	sc := faultScenario(t, c, name, modes, nil)
	work := t.TempDir()
	p := startFault(ctx, t, c, work, "run", "-f", sc, "--prometheus-url", c.PrometheusURL, "--output-dir", "runs")
	if !p.waitMarker(regexp.MustCompile(cell.marker), cell.n, 10*time.Minute) {
		t.Fatalf("marker %q (#%d) never came:\n%s", cell.marker, cell.n, tail(p.log(), 4000))
	}
	time.Sleep(cell.delay)
	return p, work
}

var signalCells = []signalCell{
	{phase: "deploy", marker: `msg="workload applied"`, n: 1, delay: 0, cases: 0},
	{phase: "switch", istio: true, marker: `msg="workload ready"`, n: 1, delay: 300 * time.Millisecond, cases: 0},
	{phase: "verify", istio: true, marker: `msg="mode applied"`, n: 1, delay: 0, cases: 0},
	// Only a case that follows a mode switch has an idle window: the first one.
	{phase: "idle", marker: `idle window: started`, n: 1, delay: 3 * time.Second, cases: 0},
	{phase: "load", marker: `load \(lead-in .*: started`, n: 2, delay: 8 * time.Second, cases: 1},
	{phase: "collect", marker: `load \(lead-in .*: done after`, n: 2, delay: 0, cases: 1},
	// After the last case: teardown and the report. Every case is measured, so the run is complete (no
	// interruption mark) yet still exits with the signal's code: the caller asked it to stop.
	{phase: "teardown", marker: `msg="case done"`, n: 2, delay: 0, cases: 2},
}

// TestFaultSignals: SIGINT and SIGTERM in each phase. The run stops within a minute with the shell's code for the
// signal (130, 143), says it was interrupted, leaves nothing labelled with its run id, and what it measured before
// the signal is intact and marked as an interrupted run.
func TestFaultSignals(t *testing.T) {
	c := RequireCluster(t)
	for _, cell := range signalCells {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(cell.phase+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
				defer cancel()
				p, work := cell.start(ctx, t, c, fmt.Sprintf("f-%s-%d", cell.phase, int(sig)))
				p.send(t, sig)
				code := p.exit(2 * time.Minute)
				took := time.Since(p.signal).Round(time.Second)
				t.Logf("%s during %s: exit %d after %s; stderr (tail):\n%s", sig, cell.phase, code, took, tail(p.log(), 2500))
				if want := 128 + int(sig); code != want {
					t.Errorf("exit %d, want %d", code, want)
				}
				if took > time.Minute {
					t.Errorf("took %s to stop after %s", took, sig)
				}
				if cell.cases < 2 && !strings.Contains(p.log(), "interrupted") {
					t.Error("stderr does not say the run was interrupted")
				}
				if left := leftovers(ctx, t, c, p.runID(), 2*time.Minute); len(left) > 0 {
					t.Errorf("left behind after %s: %v", sig, left)
				}
				run, dir := recordedCases(t, work)
				if run == nil {
					if cell.cases > 0 {
						t.Fatalf("no run directory, want %d recorded case(s)", cell.cases)
					}
					return
				}
				if cell.cases == 2 {
					if run.Meta.Interrupted != nil || run.Summary == nil || len(run.Summary.Cases) != 2 {
						t.Errorf("a run whose every case was measured: interrupted %+v, summary %v", run.Meta.Interrupted, run.Summary != nil)
					}
					return
				}
				checkInterruptedRun(t, run, dir, cell.cases)
			})
		}
	}
}

// checkInterruptedRun: the cases measured before the interruption are recorded once each and ok, run.json says
// the run was interrupted, and the report does not pass it off as a complete run.
func checkInterruptedRun(t *testing.T, run *results.Run, dir string, cases int) {
	t.Helper()
	if len(run.Cases) < cases {
		t.Errorf("%d case(s) recorded, want at least %d (measured before the signal)", len(run.Cases), cases)
	}
	seen := map[string]bool{}
	for _, cs := range run.Cases {
		if seen[cs.CaseID] {
			t.Errorf("case %s recorded twice", cs.CaseID)
		}
		seen[cs.CaseID] = true
		if cs.Status != results.StatusOK {
			t.Errorf("case %s recorded %s (%s): a case is recorded only when it was measured", cs.CaseID, cs.Status, cs.Reason)
		}
	}
	if run.Meta.Interrupted == nil {
		t.Errorf("run.json does not mark the run interrupted (invocations %+v)", run.Meta.Invocations)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.md")); err == nil {
		if !strings.Contains(string(b), "nterrupted") {
			t.Errorf("report.md does not say the run was interrupted:\n%s", tail(string(b), 1500))
		}
	}
}

// TestFaultKillResume: kill -9 in each phase (no cleanup at all), then --resume: the run completes, every case is
// recorded once and ok, and nothing of either invocation is left.
func TestFaultKillResume(t *testing.T) {
	c := RequireCluster(t)
	for _, cell := range []signalCell{ // cases unused: a resume must record them all
		{phase: "deploy", marker: `msg="workload applied"`, n: 1},
		{phase: "switch", istio: true, marker: `msg="workload ready"`, n: 1, delay: 300 * time.Millisecond},
		// As the signal cell "verify": right after the mode switch's apply, before its wait and verification end.
		{phase: "verify", istio: true, marker: `msg="mode applied"`, n: 1},
		{phase: "idle", marker: `idle window: started`, n: 1, delay: 3 * time.Second},
		// kill -9 in a load window: TestRunKillAndResume (run with every e2e run).
		{phase: "collect", marker: `load \(lead-in .*: done after`, n: 1},
		// Every case is recorded: the kill lands in the teardown or the report. The resume has no case left to run;
		// it writes the summary and report and removes what the killed session left.
		{phase: "report", marker: `msg="case done"`, n: 2},
	} {
		t.Run(cell.phase, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
			defer cancel()
			p, work := cell.start(ctx, t, c, "f-kill-"+cell.phase)
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			p.exit(time.Minute)
			killedID := p.runID()
			before, dir := recordedCases(t, work)
			if before == nil {
				t.Fatalf("no run directory after the kill:\n%s", tail(p.log(), 3000))
			}
			stdout, stderr, code := runCLI(ctx, t, c, work, "run", "--resume", dir, "--prometheus-url", c.PrometheusURL)
			t.Logf("resume exit %d; stderr (tail):\n%s", code, tail(stderr, 2500))
			if code != 0 {
				t.Fatalf("resume exited %d\n%s", code, stdout)
			}
			after, err := results.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, cs := range after.Cases {
				count[cs.CaseID]++
				if cs.Status != results.StatusOK {
					t.Errorf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
				}
			}
			if len(count) != 2 || len(after.Cases) != 2 {
				t.Errorf("cases after resume %v, want 2 cases once each", count)
			}
			for _, cs := range before.Cases {
				if count[cs.CaseID] != 1 {
					t.Errorf("case %s measured before the kill is recorded %d times", cs.CaseID, count[cs.CaseID])
				}
			}
			if after.Summary == nil || len(after.Summary.Cases) != 2 {
				t.Errorf("final summary %+v", after.Summary)
			}
			if after.Meta.Interrupted != nil {
				t.Errorf("a completed resume still marks the run interrupted: %+v", after.Meta.Interrupted)
			}
			if left := leftovers(ctx, t, c, killedID, 2*time.Minute); len(left) > 0 {
				t.Errorf("left behind after the resume: %v", left)
			}
		})
	}
}

// startInLoadWindow starts `meshbench run` on the fault scenario name (change applied) and returns once its first
// load window is running: the lead-in announced by the load line is over, plus 3 s.
func startInLoadWindow(ctx context.Context, t *testing.T, c *Cluster, name string, change func(map[string]any)) (*faultProc, string) {
	t.Helper()
	sc := faultScenario(t, c, name, []any{"none"}, change)
	work := t.TempDir()
	p := startFault(ctx, t, c, work, "run", "-f", sc, "--prometheus-url", c.PrometheusURL, "--output-dir", "runs")
	if !p.waitMarker(regexp.MustCompile(`load \(lead-in .*: started`), 1, 10*time.Minute) {
		t.Fatalf("no load window:\n%s", tail(p.log(), 4000))
	}
	time.Sleep(leadIn(p.log()) + 3*time.Second)
	return p, work
}

// TestFaultAPIServerRestart: kube-apiserver goes away for 5 s inside the first load window. The run ends on its
// own within its budget; every case is measured or failed with a reason, and nothing is left.
func TestFaultAPIServerRestart(t *testing.T) {
	c := RequireCluster(t)
	faultSlot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	p, work := startInLoadWindow(ctx, t, c, "f-apiserver", nil)
	t.Cleanup(func() { _ = faultFault(context.Background(), "start", "kube-apiserver") })
	if err := faultFault(ctx, "restart", "kube-apiserver", "5"); err != nil {
		t.Fatal(err)
	}
	code := p.exit(12 * time.Minute)
	t.Logf("exit %d; stderr (tail):\n%s", code, tail(p.log(), 3000))
	if code != 0 && code != 1 {
		t.Fatalf("exit %d, want 0 (measured) or 1 (a case failed with a reason); -1 is a hang", code)
	}
	run, _ := recordedCases(t, work)
	if run == nil || len(run.Cases) != 2 {
		t.Fatalf("want both cases recorded, got %+v", run)
	}
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK && cs.Reason == "" {
			t.Errorf("case %s %s without a reason", cs.CaseID, cs.Status)
		}
		t.Logf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
	}
	if left := leftovers(ctx, t, c, p.runID(), 2*time.Minute); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestFaultPrometheusOutage: Prometheus is stopped for 30 s inside the first case's 40 s load window. That window
// is incomplete. With windows.attempts 1 the case is not ok and says why; with the default (2) it is measured once
// more after Prometheus is back, is ok, and records the discarded measurement's reason. Either way the run goes on
// and measures the second case.
func TestFaultPrometheusOutage(t *testing.T) {
	c := RequireCluster(t)
	for _, tc := range []struct {
		name     string
		attempts int // 0: the scenario's default
	}{{"attempts=1", 1}, {"default", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			faultSlot(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			p, work := startInLoadWindow(ctx, t, c, "f-prom", func(spec map[string]any) {
				spec["windows"].(map[string]any)["load"] = "40s"
				if tc.attempts > 0 {
					spec["windows"].(map[string]any)["attempts"] = tc.attempts
				}
			})
			t.Cleanup(func() { _ = faultFault(context.Background(), "start", "prometheus") })
			if err := faultFault(ctx, "restart", "prometheus", "30"); err != nil {
				t.Fatal(err)
			}
			code := p.exit(12 * time.Minute)
			t.Logf("exit %d; stderr (tail):\n%s", code, tail(p.log(), 3000))
			run, _ := recordedCases(t, work)
			if run == nil || len(run.Cases) != 2 {
				t.Fatalf("want both cases recorded, got %+v", run)
			}
			first, second := run.Cases[0], run.Cases[1]
			if second.Status != results.StatusOK {
				t.Errorf("case %s after the outage: %s %s", second.CaseID, second.Status, second.Reason)
			}
			if tc.attempts == 1 {
				if first.Status == results.StatusOK || !strings.Contains(first.Reason, "incomplete") {
					t.Errorf("case %s over the outage: %s %q, want not ok with the window incomplete", first.CaseID, first.Status, first.Reason)
				}
				if code != 1 {
					t.Errorf("exit %d, want 1 (a case failed)", code)
				}
			} else {
				if first.Status != results.StatusOK || first.Facts[results.FactAttempts] != "2" ||
					!strings.Contains(first.Facts[results.FactAttemptPrefix+"1"], "incomplete") {
					t.Errorf("case %s over the outage: %s %q facts %v, want ok after a second measurement that names the gap",
						first.CaseID, first.Status, first.Reason, first.Facts)
				}
				if code != 0 {
					t.Errorf("exit %d, want 0 (every case measured)", code)
				}
			}
			if left := leftovers(ctx, t, c, p.runID(), 2*time.Minute); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

var leadInRE = regexp.MustCompile(`load \(lead-in (\S+),`)

// leadIn is the lead-in of the last load window meshbench announced (0 when none).
func leadIn(log string) time.Duration {
	m := leadInRE.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		return 0
	}
	d, _ := time.ParseDuration(m[len(m)-1][1])
	return d
}

// TestFaultOutputFull: the output directory (a 32 MiB tmpfs) fills up after the first case is recorded. The run
// fails with an error naming the file and the cause, the first case's files are intact and readable, and the
// cluster is cleaned.
func TestFaultOutputFull(t *testing.T) {
	c := RequireCluster(t)
	faultSlot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	work := t.TempDir()
	runs := filepath.Join(work, "runs")
	if err := os.Mkdir(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "mb-e2e-full", runs).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", runs).Run() })
	sc := faultScenario(t, c, "f-full", []any{"none"}, nil)
	p := startFault(ctx, t, c, work, "run", "-f", sc, "--prometheus-url", c.PrometheusURL, "--output-dir", "runs")
	if !p.waitMarker(regexp.MustCompile(`msg="case done"`), 1, 10*time.Minute) {
		t.Fatalf("first case never done:\n%s", tail(p.log(), 4000))
	}
	before, dir := recordedCases(t, work)
	if before == nil || len(before.Cases) != 1 {
		t.Fatalf("first case not recorded: %+v", before)
	}
	// Fill what is left (dd stops at ENOSPC, which is the point).
	_ = exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(runs, "filler"), "bs=1M").Run()
	code := p.exit(12 * time.Minute)
	log := p.log()
	t.Logf("exit %d; stderr (tail):\n%s", code, tail(log, 3000))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// meshbench names files relative to the directory it was started in: runs/<run id>/samples.jsonl.
	if !strings.Contains(log, "no space left on device") || !strings.Contains(log, filepath.Join("runs", filepath.Base(dir))+"/") {
		t.Errorf("stderr does not name the full directory's file and the cause")
	}
	// Free the space first: reading must not depend on it, but the check below must see every file meshbench kept.
	if err := os.Remove(filepath.Join(runs, "filler")); err != nil {
		t.Fatal(err)
	}
	after, err := results.Read(dir)
	if err != nil {
		t.Fatalf("the run directory is not readable after the disk filled: %v", err)
	}
	if len(after.Cases) < 1 || after.Cases[0].CaseID != before.Cases[0].CaseID || after.Cases[0].Status != results.StatusOK {
		t.Errorf("the first case is not intact: %+v", after.Cases)
	}
	if left := leftovers(ctx, t, c, p.runID(), 2*time.Minute); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestFaultKubeletGone: node2's kubelet is stopped inside the first load window of an app pinned to node2. The run
// ends on its own; the case the fault met fails naming the node (its load client's exec, a target.KubeletError),
// which arms the runner's NodeGate: the later case is skipped naming the node and why it is unusable (its kubelet
// does not answer the API server's probe, or, later, its Ready condition) and why the app needs it; once the
// kubelet is back nothing is left.
func TestFaultKubeletGone(t *testing.T) {
	c := RequireCluster(t)
	if len(c.Nodes) < 2 {
		t.Skip("needs the second node")
	}
	node := c.Nodes[1]
	faultSlot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	p, work := startInLoadWindow(ctx, t, c, "f-kubelet", func(spec map[string]any) {
		spec["workload"].(map[string]any)["nodeSelector"] = map[string]any{"kubernetes.io/hostname": node}
	})
	kubelet := "kubelet-" + node
	t.Cleanup(func() { _ = faultFault(context.Background(), "start", kubelet) })
	if err := faultFault(ctx, "stop", kubelet); err != nil {
		t.Fatal(err)
	}
	code := p.exit(15 * time.Minute)
	t.Logf("exit %d; stderr (tail):\n%s", code, tail(p.log(), 4000))
	if err := faultFault(ctx, "start", kubelet); err != nil {
		t.Fatal(err)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1 (cases failed); -1 is a hang", code)
	}
	run, _ := recordedCases(t, work)
	if run == nil || len(run.Cases) != 2 {
		t.Fatalf("want both cases recorded, got %+v", run)
	}
	named := 0
	for _, cs := range run.Cases {
		t.Logf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
		if cs.Status == results.StatusOK {
			continue
		}
		if strings.Contains(cs.Reason, node) {
			named++
		}
	}
	if named == 0 {
		t.Errorf("no failed case names node %s", node)
	}
	// Case 1 fails in its load (the client's exec goes through the dead kubelet) before the node controller marks
	// the node; that failure names the node, so the gate checks it before case 2: the kubelet does not answer its
	// probe (or, checked after the node controller's grace, the node is not Ready), and the app is pinned there.
	if first := run.Cases[0]; first.Status != results.StatusFailed || !strings.Contains(first.Reason, "(node "+node+")") {
		t.Errorf("case %s %s %q: want failed naming node %s", first.CaseID, first.Status, first.Reason, node)
	}
	switch second := run.Cases[1]; second.Status {
	case results.StatusSkipped:
		unusable := strings.Contains(second.Reason, "node "+node+": kubelet does not answer (GET nodes/"+node+"/proxy/healthz: ") ||
			strings.Contains(second.Reason, "node "+node+" not Ready (Ready=")
		if !unusable || !strings.Contains(second.Reason, "cannot run there") || second.Facts[results.FactSkippedNode] != node {
			t.Errorf("case %s skipped with reason %q, facts %v: want node %s, why it is unusable and why the app needs it",
				second.CaseID, second.Reason, second.Facts, node)
		}
	case results.StatusFailed:
		t.Errorf("case %s failed (%q): want it skipped, the gate armed by case 1's load failure on node %s", second.CaseID, second.Reason, node)
	default:
		t.Errorf("case %s %s: measured an app whose node has no kubelet", second.CaseID, second.Status)
	}
	if left := leftovers(ctx, t, c, p.runID(), 3*time.Minute); len(left) > 0 {
		t.Errorf("left behind once the kubelet is back: %v", left)
	}
}

// TestFaultKillResumeCNI: `meshbench cni` killed with SIGKILL in the third of four cases (no cleanup at all), then
// `meshbench cni --resume`: the resume exits 0, the cases recorded before the kill are kept byte for byte (their
// lines of cases.jsonl and their raw files), every case is recorded once and ok with its samples, and nothing of
// either invocation is left (the killed run's namespace is removed by the resume).
func TestFaultKillResumeCNI(t *testing.T) {
	c := RequireCluster(t)
	if len(c.Nodes) < 2 {
		t.Skipf("cross-node needs two nodes, the cluster has %v", c.Nodes)
	}
	faultSlot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sc := cniScenario(t, fmt.Sprintf(`    tests: [tcp, rr]
    paths: [same-node, cross-node]
    duration: 3s
    samples: 2
    placement: {clientNode: %s, serverNode: %s}
`, c.Nodes[0], c.Nodes[1]))
	work := t.TempDir()
	p := startFault(ctx, t, c, work, "cni", "-f", sc, "--output-dir", "runs")
	// Cases: idle, same-node/tcp, same-node/rr, cross-node/tcp, cross-node/rr. Kill inside cross-node/tcp's samples.
	if !p.waitMarker(regexp.MustCompile(`msg=running case=cross-node/tcp`), 1, 10*time.Minute) {
		t.Fatalf("cross-node/tcp never started:\n%s", tail(p.log(), 4000))
	}
	time.Sleep(2 * time.Second)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.exit(time.Minute)
	dir := onlyRunDir(t, filepath.Join(work, "runs"))
	killedID := filepath.Base(dir)
	keptLines, err := os.ReadFile(filepath.Join(dir, results.CasesFile))
	if err != nil {
		t.Fatal(err)
	}
	before, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, cs := range before.Cases {
		kept[cs.CaseID] = true
	}
	if !kept["same-node/rr"] || kept["cross-node/tcp"] {
		t.Fatalf("cases recorded before the kill: %v, want idle and same-node up to rr, not cross-node/tcp", kept)
	}
	keptRaw := map[string][]byte{}
	raws, _ := filepath.Glob(filepath.Join(dir, cni.RawDir, "*"))
	for _, f := range raws {
		path, test, _, _, ok := cni.ParseRawName(f)
		if ok && kept[string(path)+"/"+string(test)] {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			keptRaw[f] = b
		}
	}
	if len(keptRaw) != 4 {
		t.Errorf("raw files of the kept cases: %d, want 4 (2 cases x 2 samples)", len(keptRaw))
	}

	stdout, stderr, code := runCLI(ctx, t, c, work, "cni", "--resume", dir)
	t.Logf("resume exit %d; stderr (tail):\n%s", code, tail(stderr, 2500))
	if code != 0 {
		t.Fatalf("resume exited %d\n%s", code, stdout)
	}
	afterLines, err := os.ReadFile(filepath.Join(dir, results.CasesFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(afterLines, keptLines) {
		t.Errorf("cases.jsonl of the kept cases changed:\nbefore %s\nafter  %s", keptLines, afterLines)
	}
	for f, b := range keptRaw {
		if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, b) {
			t.Errorf("raw file %s of a kept case changed (err %v)", filepath.Base(f), err)
		}
	}
	after, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	count, samples := map[string]int{}, map[string]int{}
	for _, cs := range after.Cases {
		count[cs.CaseID]++
		if cs.Status != results.StatusOK {
			t.Errorf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
		}
	}
	for _, s := range after.Samples {
		samples[s.CaseID]++
	}
	for _, id := range []string{"idle", "same-node/tcp", "same-node/rr", "cross-node/tcp", "cross-node/rr"} {
		if count[id] != 1 || samples[id] == 0 {
			t.Errorf("case %s recorded %d times with %d samples, want once with samples", id, count[id], samples[id])
		}
	}
	for _, s := range before.Samples {
		samples[s.CaseID]--
	}
	for id := range kept {
		if samples[id] != 0 {
			t.Errorf("case %s kept before the kill: %d samples more or fewer after the resume", id, samples[id])
		}
	}
	if left := leftovers(ctx, t, c, killedID, 2*time.Minute); len(left) > 0 {
		t.Errorf("left behind after the resume: %v", left)
	}
}
