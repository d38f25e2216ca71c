package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	utilexec "k8s.io/client-go/util/exec"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

func TestDeploymentGolden(t *testing.T) {
	t.Parallel()
	c := &Cluster{RunID: "quickstart-20261201-1000", Image: "meshbench.local/agent:dev", PullPolicy: corev1.PullIfNotPresent, Clients: 2,
		NodeSelector: map[string]string{"meshbench.dev/bench": "true"},
		Tolerations:  []corev1.Toleration{{Key: "meshbench.dev/bench", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
	b, err := yaml.Marshal(c.Deployment("mb-single", scenario.ModeSidecar))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "deployment.golden.yaml", string(b))
	if got := c.Selector(); got != "app.kubernetes.io/component=loadgen,app.kubernetes.io/managed-by=meshbench,app.kubernetes.io/name=meshbench-loadgen,meshbench.dev/run=quickstart-20261201-1000" {
		t.Errorf("selector %q", got)
	}
}

func clientPod(name string, mode scenario.Mode, annotations map[string]string, containers, inits []string, ready bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mb-single",
		Annotations: map[string]string{ModeAnnotation: string(mode)}}}
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	for _, c := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c})
	}
	p.Status.Phase = corev1.PodRunning
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func TestCheckClientPod(t *testing.T) {
	t.Parallel()
	injected := map[string]string{sidecarStatusAnnotation: "{}"}
	captured := map[string]string{redirectionAnnotation: "enabled"}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		mode scenario.Mode
		ok   bool
	}{
		{"none ok", clientPod("a", "none", nil, []string{"loadgen"}, nil, true), scenario.ModeNone, true},
		{"not ready", clientPod("a", "none", nil, []string{"loadgen"}, nil, false), scenario.ModeNone, false},
		{"native sidecar", clientPod("a", "sidecar", injected, []string{"loadgen"}, []string{"istio-proxy"}, true), scenario.ModeSidecar, true},
		{"classic sidecar", clientPod("a", "sidecar", injected, []string{"loadgen", "istio-proxy"}, nil, true), scenario.ModeSidecar, true},
		{"sidecar missing", clientPod("a", "sidecar", nil, []string{"loadgen"}, nil, true), scenario.ModeSidecar, false},
		{"ambient captured", clientPod("a", "ambient", captured, []string{"loadgen"}, nil, true), scenario.ModeAmbient, true},
		{"ambient pending", clientPod("a", "ambient", map[string]string{redirectionAnnotation: "pending"}, []string{"loadgen"}, nil, true), scenario.ModeAmbient, false},
		{"waypoint captured", clientPod("a", "waypoint", captured, []string{"loadgen"}, nil, true), scenario.ModeWaypoint, true},
		{"ambient with sidecar", clientPod("a", "ambient", map[string]string{redirectionAnnotation: "enabled", sidecarStatusAnnotation: "{}"}, []string{"loadgen", "istio-proxy"}, nil, true), scenario.ModeAmbient, false},
		{"none but captured", clientPod("a", "none", captured, []string{"loadgen"}, nil, true), scenario.ModeNone, false},
	} {
		if err := checkClientPod(tc.pod, tc.mode); (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

// replayExec answers `meshbench-agent load` with captured reports and records the commands.
type replayExec struct {
	mu   sync.Mutex
	cmds [][]string
	out  map[string][]byte // pod -> stdout
	fail map[string]error
}

func (r *replayExec) Exec(_ context.Context, ns, pod, container string, cmd []string, _ io.Reader) ([]byte, []byte, error) {
	r.mu.Lock()
	r.cmds = append(r.cmds, append([]string{ns + "/" + pod + "/" + container}, cmd...))
	r.mu.Unlock()
	if err := r.fail[pod]; err != nil {
		return nil, []byte("boom"), err
	}
	return r.out[pod], nil, nil
}

func TestClusterRunSplitsAndMerges(t *testing.T) {
	t.Parallel()
	var pods []any
	for _, n := range []string{"lg-b", "lg-a", "other"} {
		p := clientPod(n, scenario.ModeNone, nil, []string{"loadgen"}, nil, true)
		c := &Cluster{RunID: "r1"}
		if n != "other" {
			p.Labels = c.Labels()
		}
		pods = append(pods, &p)
	}
	kc := fake.NewClientset()
	for _, p := range pods {
		if _, err := kc.CoreV1().Pods("mb-single").Create(context.Background(), p.(*corev1.Pod), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string][]byte{}
	for i, n := range []string{"lg-a", "lg-b"} {
		b, err := os.ReadFile(filepath.Join("testdata", captures[i]))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = b
	}
	ex := &replayExec{out: out}
	c := &Cluster{Kube: kc, Exec: ex, RunID: "r1", Clients: 2}
	res, err := c.Run(context.Background(), "mb-single", scenario.ModeNone, Spec{URL: "http://entry:8080/", QPS: 400, Connections: 2,
		Duration: 30 * time.Second, WarmUp: 20 * time.Second, CoolDown: 2 * time.Second, Clients: 99})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clients) != 2 || res.RequestedQPS != 400 || res.Requests != 400 {
		t.Errorf("merged %d clients, requested %v, %d requests", len(res.Clients), res.RequestedQPS, res.Requests)
	}
	slices.SortFunc(ex.cmds, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	want := "mb-single/lg-a/loadgen /usr/local/bin/meshbench-agent load --url http://entry:8080/ --qps 200 --connections 2 --duration 30s --warmup 20s --cooldown 2s --json"
	if len(ex.cmds) != 2 || strings.Join(ex.cmds[0], " ") != want {
		t.Errorf("commands %q\nwant %q (the QPS split over the 2 ready pods, not over spec.Clients)", ex.cmds, want)
	}
	ex.fail = map[string]error{"lg-b": errors.New("command terminated with exit code 1")}
	if _, err := c.Run(context.Background(), "mb-single", scenario.ModeNone, Spec{URL: "http://e/", QPS: 10, Connections: 1, Duration: time.Second, Clients: 1}); err == nil || !strings.Contains(err.Error(), "lg-b") {
		t.Errorf("a failing client must fail the run and be named: %v", err)
	}
	if _, err := c.Run(context.Background(), "mb-single", scenario.ModeSidecar, Spec{URL: "http://e/", QPS: 10, Connections: 1, Duration: time.Second, Clients: 1}); err == nil {
		t.Error("clients created for another mode must not be used")
	}
}

// ExecAgent runs the agent in the first ready client pod of the mode (its traffic is in the data plane measured) and
// names the pod and the subcommand, never the arguments, on failure.
func TestClusterExecAgent(t *testing.T) {
	t.Parallel()
	c := &Cluster{RunID: "r1"}
	kc := fake.NewClientset()
	for _, n := range []string{"lg-b", "lg-a"} {
		p := clientPod(n, scenario.ModeNone, nil, []string{"loadgen"}, nil, true)
		p.Labels = c.Labels()
		if _, err := kc.CoreV1().Pods("mb-single").Create(context.Background(), &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ex := &replayExec{out: map[string][]byte{"lg-a": []byte(`{"status": 200}`)}}
	c.Kube, c.Exec, c.Clients = kc, ex, 2
	out, err := c.ExecAgent(context.Background(), "mb-single", scenario.ModeNone, []string{"curl", "--json", "http://userservice:8080/login?password=secret"})
	if err != nil || string(out) != `{"status": 200}` {
		t.Fatalf("got %q, %v", out, err)
	}
	if want := "mb-single/lg-a/loadgen /usr/local/bin/meshbench-agent curl --json http://userservice:8080/login?password=secret"; len(ex.cmds) != 1 || strings.Join(ex.cmds[0], " ") != want {
		t.Errorf("commands %q, want %q", ex.cmds, want)
	}
	ex.fail = map[string]error{"lg-a": errors.New("command terminated with exit code 1")}
	_, err = c.ExecAgent(context.Background(), "mb-single", scenario.ModeNone, []string{"curl", "http://userservice:8080/login?password=secret"})
	if err == nil || !strings.Contains(err.Error(), "lg-a") || !strings.Contains(err.Error(), "boom") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %v: want the pod and stderr named, the arguments not", err)
	}
	if _, err := c.ExecAgent(context.Background(), "mb-single", scenario.ModeSidecar, []string{"curl", "http://x/"}); err == nil {
		t.Error("clients prepared for another mode must not be used")
	}
	if _, err := c.ExecAgent(context.Background(), "mb-single", scenario.ModeNone, nil); err == nil {
		t.Error("no subcommand must be refused")
	}
}

// TestClusterExecThroughDeadKubelet: a client's exec that fails on its way through the node's kubelet (refused, the
// stream broken) comes back as a *target.KubeletError naming the pod's node, through Run's joining of the clients'
// errors and from ExecAgent, with the text it had; a non-zero exit of the agent does not (the kubelet ran it), nor
// does a client whose node is unknown.
func TestClusterExecThroughDeadKubelet(t *testing.T) {
	t.Parallel()
	c := &Cluster{RunID: "r1"}
	kc := fake.NewClientset()
	for _, n := range []string{"lg-a", "lg-b", "lg-c"} {
		p := clientPod(n, scenario.ModeNone, nil, []string{"loadgen"}, nil, true)
		p.Labels = c.Labels()
		p.Spec.NodeName = map[string]string{"lg-a": "node1", "lg-b": "node2"}[n] // lg-c: not scheduled as far as we know
		if _, err := kc.CoreV1().Pods("mb-single").Create(context.Background(), &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := os.ReadFile(filepath.Join("testdata", captures[0]))
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New(`exec "meshbench-agent load" in mb-single/lg-b: error dialing backend: dial tcp 172.18.0.3:10250: connect: connection refused (stderr: )`)
	exit := fmt.Errorf("exec \"meshbench-agent load\" in mb-single/lg-b: %w (stderr: boom)",
		utilexec.CodeExitError{Err: errors.New("command terminated with exit code 1"), Code: 1})
	spec := Spec{URL: "http://e/", QPS: 30, Connections: 1, Duration: time.Second, Clients: 1}
	for _, tc := range []struct {
		name      string
		fail      map[string]error
		wantNodes []string
		wantText  string
	}{
		{"refused", map[string]error{"lg-b": refused}, []string{"node2"}, "client lg-b (node node2): " + refused.Error()},
		{"non-zero exit", map[string]error{"lg-b": exit}, nil, "client lg-b (node node2): " + exit.Error()},
		{"node unknown", map[string]error{"lg-c": refused}, nil, "client lg-c: " + refused.Error()},
	} {
		ex := &replayExec{out: map[string][]byte{"lg-a": out, "lg-b": out, "lg-c": out}, fail: tc.fail}
		c.Kube, c.Exec, c.Clients = kc, ex, 3
		_, err := c.Run(context.Background(), "mb-single", scenario.ModeNone, spec)
		if err == nil || err.Error() != tc.wantText {
			t.Errorf("%s: error %v\nwant %s", tc.name, err, tc.wantText)
		}
		var ke *target.KubeletError
		if found := errors.As(err, &ke); found != (tc.wantNodes != nil) || !slices.Equal(target.FailedNodes(err), tc.wantNodes) {
			t.Errorf("%s: KubeletError found %v, nodes %v, want %v", tc.name, found, target.FailedNodes(err), tc.wantNodes)
		}
	}
	// ExecAgent (the login's exec) runs in the first client pod, lg-a on node1.
	ex := &replayExec{fail: map[string]error{"lg-a": refused}}
	c.Exec = ex
	_, err = c.ExecAgent(context.Background(), "mb-single", scenario.ModeNone, []string{"curl", "http://x/"})
	if got := target.FailedNodes(err); !slices.Equal(got, []string{"node1"}) || !strings.HasPrefix(err.Error(), "client lg-a: meshbench-agent curl: ") {
		t.Errorf("ExecAgent: nodes %v, error %v", got, err)
	}
	ex.fail = map[string]error{"lg-a": exit}
	if _, err = c.ExecAgent(context.Background(), "mb-single", scenario.ModeNone, []string{"curl", "http://x/"}); err == nil || target.FailedNodes(err) != nil {
		t.Errorf("ExecAgent, non-zero exit: %v blames nodes %v", err, target.FailedNodes(err))
	}
}
