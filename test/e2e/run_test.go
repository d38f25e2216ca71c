//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/results"
)

// The collected app CPU average (cAdvisor job, container series) is checked against the kubelet's own resource
// metrics (the harness's kubelet-resource job) over the same range, twice:
//   - the same containers' container_cpu_usage_seconds_total: same cgroup counters, so within sameCounterTolerance
//     (this proves the pod sets, the container filters and the one-job rule: two jobs would double it);
//   - the app pods' pod_cpu_usage_seconds_total, the pod cgroups (a different counter, which also holds the pause
//     container and any pod-level overhead): within podCgroupTolerance.
const (
	sameCounterTolerance = 0.01
	podCgroupTolerance   = 0.20
)

// runCLI runs `meshbench args...` in dir with the cluster's kubeconfig; it returns stdout, stderr and the exit code.
func runCLI(ctx context.Context, t *testing.T, c *Cluster, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, cniCLI(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("meshbench %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// quickstartVariant writes examples/quickstart.yaml with changes to its spec (a map as YAML decodes it).
func quickstartVariant(t *testing.T, name string, change func(spec map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["metadata"].(map[string]any)["name"] = name
	spec := doc["spec"].(map[string]any)
	delete(spec, "cni")
	change(spec)
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runScenario runs `meshbench run -f path` against the cluster's Prometheus in a new directory, fails the test unless
// it exits 0, and returns the run and what it printed.
func runScenario(ctx context.Context, t *testing.T, c *Cluster, path string) (*results.Run, string) {
	t.Helper()
	work := t.TempDir()
	stdout, stderr, code := runCLI(ctx, t, c, work, "run", "-f", path, "--prometheus-url", c.PrometheusURL, "--output-dir", "runs")
	t.Logf("stderr (tail):\n%s", tail(stderr, 3000))
	if code != 0 {
		t.Fatalf("meshbench run exited %d\nstdout:\n%s", code, stdout)
	}
	run, err := results.Read(onlyRunDir(t, filepath.Join(work, "runs")))
	if err != nil {
		t.Fatal(err)
	}
	return run, stdout
}

// onlyRunDir returns the single run directory under dir.
func onlyRunDir(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*", results.RunFile))
	if len(m) != 1 {
		t.Fatalf("want one run directory in %s, found %v", dir, m)
	}
	return filepath.Dir(m[0])
}

// deleteNamespaceAtEnd removes a namespace a failed or killed run may have left.
func deleteNamespaceAtEnd(t *testing.T, c *Cluster, ns string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			t.Logf("namespace %s left behind: deleting it", ns)
			_ = c.DeleteNamespace(ctx, ns)
		}
	})
}

type sampleIndex map[string]float64 // "case|window|component|metric|stat" -> value

func indexSamples(ss []results.Sample) sampleIndex {
	idx := sampleIndex{}
	for _, s := range ss {
		if s.Labels == nil {
			idx[fmt.Sprintf("%s|%s|%s|%s|%s", s.CaseID, s.Window.Kind, s.Component, s.Metric, s.Stat)] = s.Value
		}
	}
	return idx
}

// TestRunQuickstart runs examples/quickstart.yaml end to end (fortio chain, mode none, 2 load levels x 2
// repetitions, real cAdvisor data through Prometheus) and checks every file and the printed table.
func TestRunQuickstart(t *testing.T) {
	t.Parallel()
	c := RequireCluster(t)
	deleteNamespaceAtEnd(t, c, "mb-single")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	scenarioPath, _ := filepath.Abs("../../examples/quickstart.yaml")
	run, stdout := runScenario(ctx, t, c, scenarioPath)
	dir := run.Dir

	// run.json: cluster, Prometheus and tool facts.
	m := run.Meta
	if !strings.HasPrefix(m.Cluster.KubernetesVersion, "v1.") || len(m.Cluster.Nodes) != len(c.Nodes) || m.Cluster.Profile != "localcluster" ||
		m.End == nil || m.Prometheus == nil || m.Prometheus.Source != "prometheus" || m.Prometheus.ScrapeInterval <= 0 ||
		m.Prometheus.RateRange < 4*m.Prometheus.ScrapeInterval || len(m.Plan) == 0 || len(m.Scenario) == 0 {
		t.Errorf("run.json facts incomplete: %+v", m)
	}
	for _, n := range m.Cluster.Nodes {
		if n.CPU == "" || n.Memory == "" || n.KubeletVersion == "" {
			t.Errorf("node facts %+v", n)
		}
	}
	t.Logf("prometheus: scrape %s, rate range %s; notes %q", m.Prometheus.ScrapeInterval, m.Prometheus.RateRange, m.Notes)

	// cases.jsonl: 4 cases, all ok, with exact windows.
	if len(run.Cases) != 4 {
		t.Fatalf("%d cases, want 4 (2 load levels x 2 repetitions)", len(run.Cases))
	}
	idx := indexSamples(run.Samples)
	var kubeletDiffs []string
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK {
			t.Errorf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		wantWindows := 1
		if strings.HasSuffix(cs.CaseID, "q50.r1") || strings.HasSuffix(cs.CaseID, "q50.r2") {
			wantWindows = 2 // the first load level of each repetition has the idle window
		}
		if len(cs.Windows) != wantWindows {
			t.Errorf("case %s: windows %+v, want %d", cs.CaseID, cs.Windows, wantWindows)
		}
		for _, w := range cs.Windows {
			if d := w.End.Sub(w.Start); d < 19*time.Second || d > 31*time.Second {
				t.Errorf("case %s: %s window of %s", cs.CaseID, w.Kind, d)
			}
		}
		// Real cAdvisor data: the app uses CPU and memory under load; fortio measured latency percentiles.
		for _, k := range []string{"load|app|cpu|avg", "load|app|cpu|max", "load|app|memory|avg", "load|app|memory|min", "load|loadgen|cpu|avg"} {
			if v := idx[cs.CaseID+"|"+k]; !(v > 0) {
				t.Errorf("case %s: %s = %v, want > 0", cs.CaseID, k, v)
			}
		}
		if wantWindows == 2 && !(idx[cs.CaseID+"|idle|app|memory|avg"] > 0) {
			t.Errorf("case %s: no idle app memory", cs.CaseID)
		}
		prev := 0.0
		for _, p := range []string{"p50", "p90", "p99", "p99.9"} {
			v := idx[cs.CaseID+"|load|loadgen|latency|"+p]
			if !(v > 0) || v < prev {
				t.Errorf("case %s: latency %s = %v ms (previous percentile %v)", cs.CaseID, p, v, prev)
			}
			prev = v
			// At a fixed rate every request's response time (due -> done) is at least its service time (sent ->
			// done), so every percentile is too (one HDR bucket, 0.001 ms below 32 ms, of rounding allowed).
			if r := idx[cs.CaseID+"|load|loadgen|response-time|"+p]; !(r >= v-0.002) {
				t.Errorf("case %s: response time %s = %v ms, below the service time's %v ms", cs.CaseID, p, r, v)
			}
		}
		// The case says it fell short of its rate exactly when the achieved rate is more than 1 % below it.
		if achieved, asked := idx[cs.CaseID+"|load|loadgen|qps|value"], idx[cs.CaseID+"|load|loadgen|qps|target"]; (cs.LoadShortfall != nil) != (achieved < 0.99*asked) {
			t.Errorf("case %s: achieved %.2f of %.0f qps, shortfall recorded %+v", cs.CaseID, achieved, asked, cs.LoadShortfall)
		}
		target := 50.0
		if strings.Contains(cs.CaseID, ".q200.") {
			target = 200
		}
		if q := idx[cs.CaseID+"|load|loadgen|qps|value"]; q < 0.9*target || q > 1.05*target {
			t.Errorf("case %s: achieved %.1f qps for a %v qps target", cs.CaseID, q, target)
		}
		kubeletDiffs = append(kubeletDiffs, checkAgainstKubelet(ctx, t, c, run, cs))
	}
	t.Logf("app CPU avg, cAdvisor job vs the kubelet's resource metrics:\n  %s", strings.Join(kubeletDiffs, "\n  "))

	// summary.json and the printed resource table.
	if run.Summary == nil || len(run.Summary.Cases) != 4 || len(run.Summary.Series) == 0 {
		t.Fatalf("summary.json missing or incomplete: %+v", run.Summary)
	}
	found := false
	for _, s := range run.Summary.Series {
		if s.Component == results.ComponentApp && s.Metric == "cpu" && s.Stat == "avg" && s.Window == results.WindowLoad && s.N == 2 && s.CI != nil {
			found = true
		}
	}
	if !found {
		t.Error("summary has no app CPU avg series over 2 repetitions with a confidence interval")
	}
	for _, want := range []string{"## Resource usage per component", "| none | load 50 qps | app |", "| none | idle | app |", "Latency", "p99.9"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "report.md")); err != nil {
		t.Errorf("report files: %v", err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "mb-single", metav1.GetOptions{}); err == nil {
		t.Error("namespace mb-single still exists after the run (teardown)")
	}
}

// checkAgainstKubelet compares a case's collected app CPU average with the kubelet's resource metrics over the same
// range (see sameCounterTolerance) and returns a line for the log.
func checkAgainstKubelet(ctx context.Context, t *testing.T, c *Cluster, run *results.Run, cs results.CaseResult) string {
	t.Helper()
	var smp *results.Sample
	for i, s := range run.Samples {
		if s.CaseID == cs.CaseID && s.Window.Kind == results.WindowLoad && s.Component == results.ComponentApp && s.Metric == "cpu" && s.Stat == "avg" {
			smp = &run.Samples[i]
		}
	}
	if smp == nil {
		t.Errorf("case %s: no app CPU avg sample", cs.CaseID)
		return cs.CaseID + ": no sample"
	}
	// The collector averages over the window, widened to the rate range when shorter (see collectors/prom).
	avg := max(smp.Window.End.Sub(smp.Window.Start), run.Meta.Prometheus.RateRange)
	line := fmt.Sprintf("%s: collected %.1f millicores over %s;", cs.CaseID, smp.Value, avg)
	for _, chk := range []struct {
		name, selector string
		tol            float64
	}{
		{"container counters", `container_cpu_usage_seconds_total{job="kubelet-resource",namespace="mb-single",pod=~"chain-.*",container!="istio-proxy"}`, sameCounterTolerance},
		{"pod cgroups", `pod_cpu_usage_seconds_total{job="kubelet-resource",namespace="mb-single",pod=~"chain-.*"}`, podCgroupTolerance},
	} {
		// The reference is computed the way the collector computes its figure (prom.CounterStats over the raw
		// samples: the counters interpolated at the window's edges), so the check compares the series the two jobs
		// give, not two estimators (increase() extrapolates and was off by up to 5 % on 8 s spaced samples).
		kubelet, err := counterAvg(ctx, c, chk.selector, smp.Window, run.Meta.Prometheus.RateRange, run.Meta.Prometheus.Step, run.Meta.Prometheus.Guard)
		if err != nil {
			t.Errorf("case %s: kubelet resource metrics %s: %v", cs.CaseID, chk.selector, err)
			continue
		}
		diff := (smp.Value - kubelet) / kubelet
		if math.Abs(diff) > chk.tol {
			t.Errorf("case %s: collected app CPU avg %.1f millicores, kubelet %s %.1f (%+.1f%%, tolerance %.0f%%)",
				cs.CaseID, smp.Value, chk.name, kubelet, 100*diff, 100*chk.tol)
		}
		line += fmt.Sprintf(" kubelet %s %.1f (%+.2f%%, tolerance %.0f%%);", chk.name, kubelet, 100*diff, 100*chk.tol)
	}
	return line
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// absentMode picks a data-plane mode the cluster cannot provide, or "" when every mode is installed.
func absentMode(ctx context.Context, c *Cluster) (string, string) {
	d, err := c.Client.AppsV1().Deployments(istioNamespace).Get(ctx, "istiod", metav1.GetOptions{})
	if err != nil || d.Status.AvailableReplicas < 1 {
		return "sidecar", "no istiod: nothing injects sidecars"
	}
	ds, err := c.Client.AppsV1().DaemonSets(istioNamespace).Get(ctx, "ztunnel", metav1.GetOptions{})
	if err != nil || ds.Status.NumberReady == 0 {
		return "ambient", "no ztunnel: nothing captures ambient pods"
	}
	return "", ""
}

// TestRunAbsentDataPlaneFailsVerification: a case in a mode whose data plane is absent is recorded failed (not
// measured), the run goes on, everything is written and the exit code is 1.
func TestRunAbsentDataPlaneFailsVerification(t *testing.T) {
	t.Parallel()
	c := RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mode, why := absentMode(ctx, c)
	if mode == "" {
		t.Skip("every data-plane mode is installed on the local cluster (Istio with its stand-ins): no mode is absent; the runner's unit tests cover the failed-verification path")
	}
	t.Logf("absent mode: %s (%s)", mode, why)
	deleteNamespaceAtEnd(t, c, "mb-e2e-absent-single")
	sc := quickstartVariant(t, "e2e-absent", func(spec map[string]any) {
		spec["workload"].(map[string]any)["namespacePrefix"] = "mb-e2e-absent-"
		spec["modes"] = []any{mode, "none"}
		spec["load"].(map[string]any)["qps"] = []any{100}
		spec["windows"].(map[string]any)["repetitions"] = 1
	})
	work := t.TempDir()
	stdout, stderr, code := runCLI(ctx, t, c, work, "run", "-f", sc, "--prometheus-url", c.PrometheusURL, "--output-dir", "runs", "--verify-timeout", "45s")
	t.Logf("stderr (tail):\n%s", tail(stderr, 3000))
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (some cases failed)\nstdout:\n%s", code, stdout)
	}
	run, err := results.Read(onlyRunDir(t, filepath.Join(work, "runs")))
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]results.CaseResult{}
	for _, cs := range run.Cases {
		status[string(cs.Mode)] = cs
	}
	if f := status[mode]; f.Status != results.StatusFailed || !strings.Contains(f.Reason, "verification of mode "+mode+" failed") || len(f.Windows) != 0 {
		t.Errorf("%s case: %+v, want failed verification and no measured window", mode, f)
	}
	if ok := status["none"]; ok.Status != results.StatusOK {
		t.Errorf("the run must go on after the failed case: none case %+v", ok)
	}
	if run.Summary == nil || len(run.Summary.Cases) != 2 || !strings.Contains(stdout, "Resource usage per component") {
		t.Errorf("summary and table must still be written: summary %v", run.Summary != nil)
	}
	if !strings.Contains(stderr, "1 of 2 cases failed") {
		t.Errorf("stderr must name the failed cases")
	}
}

// TestRunKillAndResume kills meshbench (SIGKILL: no cleanup at all) during the second case, then --resume: the
// first case is not run again and the final summary has every case.
func TestRunKillAndResume(t *testing.T) {
	t.Parallel()
	c := RequireCluster(t)
	const ns = "mb-e2e-resume-single"
	deleteNamespaceAtEnd(t, c, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	sc := quickstartVariant(t, "e2e-resume", func(spec map[string]any) {
		spec["workload"].(map[string]any)["namespacePrefix"] = "mb-e2e-resume-"
		spec["load"].(map[string]any)["qps"] = []any{50, 100}
		spec["windows"].(map[string]any)["repetitions"] = 1
	})
	work := t.TempDir()
	cmd := exec.CommandContext(ctx, cniCLI(t), "run", "-f", sc, "--prometheus-url", c.PrometheusURL, "--output-dir", "runs")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first case's line, then kill in the middle of the second case's load.
	var dir string
	deadline := time.Now().Add(15 * time.Minute)
	for {
		if m, _ := filepath.Glob(filepath.Join(work, "runs", "*", results.CasesFile)); len(m) == 1 {
			if b, _ := os.ReadFile(m[0]); bytes.Count(b, []byte("\n")) >= 1 {
				dir = filepath.Dir(m[0])
				break
			}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("first case never recorded; stderr:\n%s", tail(stderr.String(), 3000))
		}
		time.Sleep(time.Second)
	}
	time.Sleep(20 * time.Second) // inside the second case's lead-in
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed during the second case; stderr (tail):\n%s", tail(stderr.String(), 1500))
	before, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Cases) != 1 || before.Cases[0].Status != results.StatusOK {
		t.Fatalf("after the kill: cases %+v, want the first case only", before.Cases)
	}
	first := before.Cases[0].CaseID

	stdout, rstderr, code := runCLI(ctx, t, c, work, "run", "--resume", dir, "--prometheus-url", c.PrometheusURL)
	t.Logf("resume stderr (tail):\n%s", tail(rstderr, 3000))
	if code != 0 {
		t.Fatalf("resume exited %d\nstdout:\n%s", code, stdout)
	}
	if !strings.Contains(rstderr, "case already recorded, skipping") {
		t.Error("resume did not report skipping the recorded case")
	}
	after, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, cs := range after.Cases {
		if cs.CaseID == first {
			runs++
		}
	}
	if runs != 1 || len(after.Cases) != 2 {
		t.Errorf("cases after resume: %d lines, first case %d times; want 2 lines and the first case once", len(after.Cases), runs)
	}
	// run.json: the killed invocation is closed as crashed at its last case record, the resume completed, no mark;
	// took is the two spans, not first start to last end.
	if inv := after.Meta.Invocations; len(inv) != 2 || inv[0].Outcome != results.OutcomeCrashed || inv[1].Outcome != results.OutcomeCompleted ||
		!inv[0].End.Equal(before.Cases[0].End) || after.Meta.Interrupted != nil {
		t.Errorf("run.json after the resume: invocations %+v, interrupted %+v", inv, after.Meta.Interrupted)
	} else if took, _ := after.Meta.Took(); took != inv[0].End.Sub(inv[0].Start)+inv[1].End.Sub(inv[1].Start) || took >= after.Meta.End.Sub(after.Meta.Start) {
		t.Errorf("took %s: want the sum of the invocations' spans, less than start..end %s", took, after.Meta.End.Sub(after.Meta.Start))
	}
	if after.Summary == nil || len(after.Summary.Cases) != 2 {
		t.Fatalf("final summary: %+v", after.Summary)
	}
	for _, cs := range after.Summary.Cases {
		if cs.Status != results.StatusOK {
			t.Errorf("summary case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
		}
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s still exists after the resumed run", ns)
	}
}

// TestRunEveryModeIstio is issue 8's acceptance run: `meshbench run` takes a fortio chain through none, sidecar,
// ambient and waypoint on the local cluster with real istiod and istio-cni; every case is verified and measured,
// traffic flows in each mode, and run.json, summary.json and the report say per component what ran it: the sidecar
// real pilot-agent + upstream Envoy, ztunnel and waypoint test stand-ins.
func TestRunEveryModeIstio(t *testing.T) {
	t.Parallel() // after the sequential Istio tests (they stop istiod and the ztunnels, and restore them)
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-modes-" // namespaces are prefix + topology
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	path := quickstartVariant(t, "every-mode", func(spec map[string]any) {
		spec["modes"] = []string{"none", "sidecar", "ambient", "waypoint"}
		spec["workload"].(map[string]any)["namespacePrefix"] = prefix
		spec["load"].(map[string]any)["qps"] = []int{100}
		spec["windows"] = map[string]any{"idle": "10s", "load": "20s", "repetitions": 1, "settle": "2s"}
		spec["startup"] = map[string]any{"restartApp": true}
	})
	run, stdout := runScenario(ctx, t, c, path)
	ist := run.Meta.Cluster.Istio
	if ist == nil || ist.DataPlane != results.DataPlaneStandIn || ist.Revision != "default" || ist.RootNamespace != "istio-system" {
		t.Fatalf("run.json istio facts %+v, want data plane %q (its least representative component), revision default, root namespace istio-system", ist, results.DataPlaneStandIn)
	}
	wantDP := map[string]results.DataPlaneKind{string(results.ComponentSidecar): results.DataPlaneUpstreamEnvoy,
		string(results.ComponentZtunnel): results.DataPlaneStandIn, string(results.ComponentWaypoint): results.DataPlaneUpstreamEnvoy}
	for comp, k := range wantDP {
		if got, ok := results.DataPlaneOf(ist.DataPlanes, results.Component(comp)); !ok || got.Kind != k {
			t.Errorf("run.json data plane of %s: %+v, want %q", comp, got, k)
		}
	}
	if sc, _ := results.DataPlaneOf(ist.DataPlanes, results.ComponentSidecar); !strings.Contains(sc.Description, "upstream Envoy "+env.EnvoyVersion) {
		t.Errorf("run.json sidecar data plane %q does not name upstream Envoy %s", sc.Description, env.EnvoyVersion)
	}
	if d := run.Meta.Cluster.ClusterDomain; d != "cluster.local" {
		t.Errorf("cluster domain %q: want cluster.local, read from the kubelets' /configz", d)
	}
	notes := results.DataPlaneNotes(ist.DataPlanes, []results.Component{results.ComponentSidecar, results.ComponentZtunnel, results.ComponentWaypoint})
	if len(notes) != 3 {
		t.Errorf("data-plane notes %q: want one per component", notes)
	}
	for _, n := range notes {
		if !slices.Contains(run.Meta.Notes, n) {
			t.Errorf("run.json notes %q lack %q", run.Meta.Notes, n)
		}
	}
	if run.Summary == nil || run.Summary.DataPlane != results.DataPlaneStandIn || len(run.Summary.DataPlanes) != 3 || len(run.Summary.Notes) == 0 {
		t.Errorf("summary.json does not say the data plane per component: %+v", run.Summary)
	}
	idx := indexSamples(run.Samples)
	modes := map[string]bool{}
	var switches []string
	for _, cs := range run.Cases {
		modes[string(cs.Mode)] = true
		if cs.Status != results.StatusOK {
			t.Errorf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if cs.Facts["verified-pods"] != "3" {
			t.Errorf("case %s: verified pods %q, want 3 (the chain's 3 pods, every one proven)", cs.CaseID, cs.Facts["verified-pods"])
		}
		for _, comp := range results.DataPlaneComponentsOfMode(cs.Mode) {
			if got := cs.Facts[results.FactDataPlaneOf(comp)]; got != string(wantDP[string(comp)]) {
				t.Errorf("case %s: %s%s fact %q, want %q", cs.CaseID, results.FactDataPlanePrefix, comp, got, wantDP[string(comp)])
			}
		}
		if cs.Mode == "sidecar" && !strings.HasPrefix(cs.Facts[results.FactProxyConfig], "3 of 3 sampled proxies accepted") {
			t.Errorf("case %s: proxy-config fact %q, want all 3 proxies accepted", cs.CaseID, cs.Facts[results.FactProxyConfig])
		}
		if cs.Mode == "waypoint" && cs.Facts["waypoints"] == "" {
			t.Errorf("case %s: no waypoint verified: facts %v", cs.CaseID, cs.Facts)
		}
		// Only what serves the app counts: waypoint figures only in waypoint mode (its pods found by gateway-name),
		// ztunnel only in the ambient modes, istiod whenever there is a mesh, none of them without one.
		has := func(comp string) bool { return idx[cs.CaseID+"|load|"+comp+"|memory|avg"] > 0 }
		if has("waypoint") != (cs.Mode == "waypoint") || has("ztunnel") != (cs.Mode == "ambient" || cs.Mode == "waypoint") || has("istiod") != (cs.Mode != "none") {
			t.Errorf("case %s (%s): waypoint %v, ztunnel %v, istiod %v measured", cs.CaseID, cs.Mode, has("waypoint"), has("ztunnel"), has("istiod"))
		}
		if want := map[bool]string{true: "PERMISSIVE (no PeerAuthentication (Istio's default))", false: "none (no mesh)"}[cs.Mode != "none"]; cs.Facts["mtls"] != want {
			t.Errorf("case %s: mtls fact %q, want %q", cs.CaseID, cs.Facts["mtls"], want)
		}
		if q := idx[cs.CaseID+"|load|loadgen|qps|value"]; q < 90 || q > 105 {
			t.Errorf("case %s: achieved %.1f qps for a 100 qps target (traffic must flow through the chain in every mode)", cs.CaseID, q)
		}
		if e := cs.Facts["error-rate"]; e != "0.000%" {
			t.Errorf("case %s: error rate %s, want 0", cs.CaseID, e)
		}
		switches = append(switches, fmt.Sprintf("%s: %s -> %s switch %s, label->verified %s", cs.CaseID, cs.Facts["mode-from"], cs.Mode,
			cs.Timings["mode-switch"], cs.Facts["switch-label-to-verified"]))
		switches = append(switches, "  startup: "+checkPodStartups(t, cs))
	}
	if len(modes) != 4 || len(run.Cases) != 4 {
		t.Errorf("cases %d over modes %v, want one case in each of the 4 modes", len(run.Cases), modes)
	}
	t.Logf("mode switches:\n  %s", strings.Join(switches, "\n  "))
	for _, want := range []string{"ztunnel is a test stand-in", "sidecar is upstream Envoy", "| sidecar |", "| ambient |", "| waypoint |", "Pod startup per mode", "| waypoint | redirected by istio-cni | 3 of 3 |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("printed report lacks %q", want)
		}
	}
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	for _, n := range notes {
		if err != nil || !strings.Contains(string(md), n) {
			t.Errorf("report.md does not carry %q (err %v)", n, err)
		}
	}
	if !strings.Contains(string(md), "[built on a test stand-in, not Istio's cost: ztunnel; upstream Envoy, a lower bound of Istio's: sidecar]") {
		t.Errorf("report.md's ambient-vs-sidecar headline does not say what it is built on")
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, prefix+"single", metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %ssingle still exists after the run (teardown)", prefix)
	}
}

// checkPodStartups checks that case cs (startup.restartApp: its switch restarted the whole app) recorded the start
// of the chain's 3 pods in its mode: every phase in order, the proxy in sidecar mode only, istio-cni's redirection in
// the ambient modes only. It returns the pods' seconds to Ready for the log.
func checkPodStartups(t *testing.T, cs results.CaseResult) string {
	t.Helper()
	if len(cs.PodStartups) != 3 {
		t.Errorf("case %s: %d pod starts recorded, want the chain's 3: %+v", cs.CaseID, len(cs.PodStartups), cs.PodStartups)
	}
	var ready []string
	for _, p := range cs.PodStartups {
		s := p.Seconds
		_, proxy := s[results.PhaseProxyStarted]
		if proxy != (cs.Mode == results.ModeSidecar) || p.Redirected != (cs.Mode == results.ModeAmbient || cs.Mode == results.ModeWaypoint) {
			t.Errorf("case %s: pod %s proxy started %v, redirected %v", cs.CaseID, p.Pod, proxy, p.Redirected)
		}
		prev := 0.0
		for _, ph := range []results.StartupPhase{results.PhaseScheduled, results.PhaseInitialized, results.PhaseContainersStarted, results.PhaseReady} {
			v, ok := s[ph]
			if !ok || v < prev || v > 120 {
				t.Errorf("case %s: pod %s phase %s at %v s (reached %v, previous phase %v s)", cs.CaseID, p.Pod, ph, v, ok, prev)
			}
			prev = v
		}
		ready = append(ready, strconv.FormatFloat(s[results.PhaseReady], 'f', 0, 64))
	}
	return "ready after " + strings.Join(ready, ", ") + " s"
}

// counterAvg is the window average (millicores) of the summed counters selector picks, from their raw samples around
// the window, computed with the collector's own method (prom.CounterStats).
func counterAvg(ctx context.Context, c *Cluster, selector string, w results.Window, rng, step, guard time.Duration) (float64, error) {
	client, err := promapi.NewClient(promapi.Config{Address: c.PrometheusURL})
	if err != nil {
		return 0, err
	}
	if step <= 0 {
		step = 5 * time.Second
	}
	span := max(w.End.Sub(w.Start), rng) + 4*rng
	v, _, _, err := promv1.NewAPI(client).Query(ctx, fmt.Sprintf("%s[%ds]", selector, int(span.Seconds())), w.End.Add(2*rng))
	if err != nil {
		return 0, err
	}
	if guard <= 0 {
		guard = step
	}
	st, ok := prom.CounterStats(prom.SeriesOf(v, 1, true), w.Start, w.End, rng, step, guard)
	if !ok {
		return 0, fmt.Errorf("no series of two samples over the window")
	}
	return st.Avg * 1000, nil
}
