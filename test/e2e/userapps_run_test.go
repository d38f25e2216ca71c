//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/meshbench/meshbench/results"
)

// restartedAtAnnotation is the pod-template annotation `kubectl rollout restart` sets (and meshbench's mode switch
// sets to roll pods into a new mode): kubernetes/kubectl pkg/polymorphichelpers/objectrestarter.go.
const restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// writeScenarioFile writes a scenario YAML into a temporary directory and returns its path.
func writeScenarioFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// agentOverlay writes a kustomization over the repository's test app (workloads/testdata/manifests/kustomize-app)
// that points its image at the agent image the harness pushed to the local registry, as a team's overlay for its
// staging registry would. It returns the overlay directory.
func agentOverlay(t *testing.T, c *Cluster) string {
	t.Helper()
	ref := c.Image(t, "AGENT")
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon < slash {
		t.Fatalf("agent image %q has no tag", ref)
	}
	base, err := filepath.Abs("../../workloads/testdata/manifests/kustomize-app")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// kustomize takes a base only by a relative path (an absolute one "cannot be absolute" as a new root).
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: ghcr.io/meshbench/meshbench-agent
  newName: %s
  newTag: %q
`, rel, ref[:colon], ref[colon+1:])
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunManifestsEveryModeIstio is issue 14's acceptance run for a team's own app: the kustomization test app
// (frontend -> backend -> store, three agent services) goes through none, sidecar, ambient and waypoint; every case
// is verified and measured, and the summary and report carry per-workload figures for each of the three services.
func TestRunManifestsEveryModeIstio(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	const prefix = "mb-own-"
	deleteNamespaceAtEnd(t, c, prefix+"single")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	sc := writeScenarioFile(t, "own-every-mode", fmt.Sprintf(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: own-every-mode}
spec:
  profile: localcluster
  workload:
    app: manifests
    namespacePrefix: %s
    manifests:
      kustomization: %s
      scale: [frontend]
    replicas: 1
  modes: [none, sidecar, ambient, waypoint]
  load:
    qps: [50]
    connections: 2
    targets:
    - {service: frontend, port: 8080, path: /}
  windows: {idle: 10s, load: 20s, repetitions: 1, settle: 2s}
  prometheus: {url: %s}
  output: {dir: runs}
`, prefix, agentOverlay(t, c), c.PrometheusURL))
	run, _ := runScenario(ctx, t, c, sc)
	modes := map[string]bool{}
	for _, cs := range run.Cases {
		modes[string(cs.Mode)] = true
		if cs.Status != results.StatusOK {
			t.Errorf("case %s: %s %s", cs.CaseID, cs.Status, cs.Reason)
			continue
		}
		if cs.Facts["verified-pods"] != "3" {
			t.Errorf("case %s: verified pods %q, want 3 (frontend, backend, store, each proven)", cs.CaseID, cs.Facts["verified-pods"])
		}
		if e := cs.Facts["error-rate"]; e != "0.000%" {
			t.Errorf("case %s: error rate %s, want 0 (the chain frontend -> backend -> store must answer in every mode)", cs.CaseID, e)
		}
	}
	if len(modes) != 4 || len(run.Cases) != 4 {
		t.Errorf("cases %d over modes %v, want one case in each of the 4 modes", len(run.Cases), modes)
	}
	checkPerWorkload(t, run, []string{"frontend", "backend", "store"})
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, prefix+"single", metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %ssingle still exists after the run (teardown)", prefix)
	}
}

// checkPerWorkload asserts that every measured case has a load-window app CPU figure for each named workload, that
// the sidecar modes have each workload's sidecar figure, and that the report has its per-workload section.
func checkPerWorkload(t *testing.T, run *results.Run, names []string) {
	t.Helper()
	got := map[string]bool{} // case|component|workload name
	for _, s := range run.Samples {
		w := s.Labels[results.LabelWorkload]
		if w == "" || s.Window.Kind != results.WindowLoad || s.Metric != "cpu" || s.Value <= 0 {
			continue
		}
		for _, n := range names {
			if strings.HasSuffix(w, "/"+n) {
				got[s.CaseID+"|"+string(s.Component)+"|"+n] = true
			}
		}
	}
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK {
			continue
		}
		for _, n := range names {
			if !got[cs.CaseID+"|"+string(results.ComponentAppByWorkload)+"|"+n] {
				t.Errorf("case %s: no per-workload app CPU for %s", cs.CaseID, n)
			}
			if cs.Mode == "sidecar" && !got[cs.CaseID+"|"+string(results.ComponentSidecarByWorkload)+"|"+n] {
				t.Errorf("case %s: no per-workload sidecar CPU for %s", cs.CaseID, n)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(run.Dir, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Per workload") {
		t.Error("report.md has no per-workload section")
	}
	for _, n := range names {
		if !strings.Contains(string(md), n) {
			t.Errorf("report.md does not name workload %s", n)
		}
	}
}

// userApp deploys frontend -> backend -> store (the agent serving fortio's echo, each forwarding to the next) into
// ns with plain client-go, as a team's own deployment would be: none of meshbench's labels. frontend's pod
// template carries an earlier `kubectl rollout restart` annotation, which must come back exactly.
func userApp(ctx context.Context, t *testing.T, c *Cluster, ns string) {
	t.Helper()
	userAppWith(ctx, t, c, ns, nil)
}

// userAppWith is userApp whose pods also carry podAnnotations.
func userAppWith(ctx context.Context, t *testing.T, c *Cluster, ns string, podAnnotations map[string]string) {
	t.Helper()
	image := c.Image(t, "AGENT")
	next := map[string]string{"frontend": "backend", "backend": "store", "store": ""}
	for _, name := range []string{"frontend", "backend", "store"} {
		args := []string{"serve", "--http-port", "8080"}
		if n := next[name]; n != "" {
			args = append(args, "--forward", "http://"+n+":8080")
		}
		tmpl := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: image, Args: args, ImagePullPolicy: corev1.PullIfNotPresent,
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
			}}},
		}
		if name == "frontend" {
			tmpl.Annotations = map[string]string{restartedAtAnnotation: "2026-11-30T08:00:00Z"}
		}
		for k, v := range podAnnotations {
			if tmpl.Annotations == nil {
				tmpl.Annotations = map[string]string{}
			}
			tmpl.Annotations[k] = v
		}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name, "team": "payments"}},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: tmpl},
		}
		if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{
				Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), AppProtocol: ptr.To("http")}}},
		}
		if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"frontend", "backend", "store"} {
		if err := waitDeploymentAvailable(ctx, c, ns, name); err != nil {
			t.Fatal(err)
		}
	}
}

func waitDeploymentAvailable(ctx context.Context, c *Cluster, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	for {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
			d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s/%s not rolled out: %w (last error %v)", ns, name, ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// userState is what meshbench may change on an existing app and must give back: the namespace's labels and each
// Deployment's pod-template annotations and replicas.
type userState struct {
	labels      map[string]string
	annotations map[string]map[string]string
	replicas    map[string]int32
}

func readUserState(ctx context.Context, t *testing.T, c *Cluster, ns string) userState {
	t.Helper()
	n, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := userState{labels: n.Labels, annotations: map[string]map[string]string{}, replicas: map[string]int32{}}
	deps, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		st.annotations[d.Name] = d.Spec.Template.Annotations
		st.replicas[d.Name] = *d.Spec.Replicas
	}
	return st
}

func (s userState) diff(o userState) []string {
	var out []string
	if !maps.Equal(s.labels, o.labels) {
		out = append(out, fmt.Sprintf("namespace labels %v, want %v", o.labels, s.labels))
	}
	if len(s.replicas) != len(o.replicas) {
		out = append(out, fmt.Sprintf("deployments %v, want %v", o.replicas, s.replicas))
	}
	for name, r := range s.replicas {
		if o.replicas[name] != r {
			out = append(out, fmt.Sprintf("deployment %s: replicas %d, want %d", name, o.replicas[name], r))
		}
		if !maps.Equal(s.annotations[name], o.annotations[name]) {
			out = append(out, fmt.Sprintf("deployment %s: template annotations %v, want %v", name, o.annotations[name], s.annotations[name]))
		}
	}
	return out
}

// waitNoSidecars waits until every pod of ns is back without an istio-proxy container and the app is rolled out
// again (restoring the template annotation rolls the pods once more, into the namespace's original mode).
func waitNoSidecars(ctx context.Context, t *testing.T, c *Cluster, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	for {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		meshed := 0
		if err == nil {
			for _, p := range pods.Items {
				for _, ct := range append(p.Spec.InitContainers, p.Spec.Containers...) {
					if ct.Name == "istio-proxy" {
						meshed++
					}
				}
			}
		}
		if err == nil && meshed == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pods of %s still carry %d istio-proxy containers after the restore: %v", ns, meshed, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	for _, name := range []string{"frontend", "backend", "store"} {
		if err := waitDeploymentAvailable(ctx, c, ns, name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunExistingAppRestoresExactly is issue 14's acceptance for app existing: a team's app already deployed in a
// namespace labelled istio-injection=disabled (and an unrelated team label) goes through meshbench three times,
// and each time the namespace labels and the Deployments' pod-template annotations are back exactly as they were,
// the app is never deleted or scaled, and its pods return without sidecars:
//   - a run that succeeds (none, then sidecar);
//   - a run whose case fails (sidecar with a ready timeout too short for the rollout);
//   - a run interrupted with SIGINT during the sidecar case.
func TestRunExistingAppRestoresExactly(t *testing.T) {
	t.Parallel()
	env := RequireIstio(t)
	c := env.Cluster
	ns := "mb-e2e-exist-" + randomSuffix(4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"istio-injection": "disabled", "team": "payments"}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = c.DeleteNamespace(ctx, ns)
	})
	userApp(ctx, t, c, ns)
	before := readUserState(ctx, t, c, ns)
	t.Logf("before: labels %v, template annotations %v", before.labels, before.annotations)
	scenarioFor := func(name string, modes string) string {
		return writeScenarioFile(t, name, fmt.Sprintf(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: %s}
spec:
  profile: localcluster
  workload:
    app: existing
    existing: {namespaces: [%s]}
  modes: %s
  load:
    qps: [20]
    connections: 1
    targets:
    - {service: frontend, port: 8080, path: /}
  windows: {idle: 15s, load: 15s, repetitions: 1, settle: 2s}
  prometheus: {url: %s}
  output: {dir: runs}
`, name, ns, modes, c.PrometheusURL))
	}
	check := func(when string) {
		t.Helper()
		waitNoSidecars(ctx, t, c, ns)
		after := readUserState(ctx, t, c, ns)
		for _, d := range before.diff(after) {
			t.Errorf("after %s: %s", when, d)
		}
	}

	// 1. Success.
	work := t.TempDir()
	stdout, stderr, code := runCLI(ctx, t, c, work, "run", "-f", scenarioFor("existing-ok", "[none, sidecar]"),
		"--allow-existing-namespaces", "--output-dir", "runs")
	t.Logf("successful run, stderr (tail):\n%s", tail(stderr, 2500))
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s", code, stdout)
	}
	run, err := results.Read(onlyRunDir(t, filepath.Join(work, "runs")))
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range run.Cases {
		if cs.Status != results.StatusOK || cs.Facts["verified-pods"] != "3" {
			t.Errorf("case %s: %s %s, verified pods %q", cs.CaseID, cs.Status, cs.Reason, cs.Facts["verified-pods"])
		}
	}
	check("a successful run")

	// 2. A failed case: the rollout into sidecar mode (about 6 s here) cannot be ready within 1 s.
	work = t.TempDir()
	stdout, stderr, code = runCLI(ctx, t, c, work, "run", "-f", scenarioFor("existing-fail", "[sidecar]"),
		"--allow-existing-namespaces", "--output-dir", "runs", "--ready-timeout", "1s")
	t.Logf("failing run, stderr (tail):\n%s", tail(stderr, 2500))
	if code != 1 {
		t.Fatalf("run with a failing case exited %d, want 1\nstdout:\n%s", code, stdout)
	}
	run, err = results.Read(onlyRunDir(t, filepath.Join(work, "runs")))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cases) != 1 || run.Cases[0].Status != results.StatusFailed {
		t.Errorf("cases %+v, want the one sidecar case failed", run.Cases)
	}
	check("a failed case")

	// 3. SIGINT while the namespace is switched to sidecar.
	work = t.TempDir()
	cmd := exec.CommandContext(ctx, cniCLI(t), "run", "-f", scenarioFor("existing-sigint", "[sidecar, ambient]"),
		"--allow-existing-namespaces", "--output-dir", "runs")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	exited := make(chan error, 1)
	go func() {
		<-scanned
		exited <- cmd.Wait()
	}()
	switched := false
	for deadline := time.Now().Add(8 * time.Minute); !switched && time.Now().Before(deadline); {
		n, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil && n.Labels["istio-injection"] != "disabled" {
			switched = true
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("meshbench exited (%v) before switching the namespace:\n%s", err, log.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if !switched {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the namespace was never switched to sidecar:\n%s", log.String())
	}
	time.Sleep(5 * time.Second) // inside the rollout into sidecar mode
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	t.Logf("exited (%v) after SIGINT; stderr (tail):\n%s", err, tail(log.String(), 2500))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v after SIGINT, want 130 (128+SIGINT: interrupted, not failed)", err)
	}
	if !strings.Contains(log.String(), "interrupted") {
		t.Error("stderr does not say the run was interrupted")
	}
	// run.json marks the run interrupted by SIGINT, the sidecar case (interrupted mid-switch) first among those not run.
	if run, err := results.Read(onlyRunDir(t, filepath.Join(work, "runs"))); err != nil {
		t.Error(err)
	} else if in := run.Meta.Interrupted; in == nil || in.Signal != "SIGINT" || in.Planned != 2 || len(in.NotRun) == 0 || in.Completed+len(in.NotRun) != in.Planned {
		t.Errorf("run.json interrupted: %+v", in)
	}
	check("SIGINT")
}
