package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/scenario"
)

// agentExec runs `meshbench-agent load ...` in this process, as the agent does (parseArgs, RunClient, the JSON
// report), so a cluster run goes through the real command line and real fortio clients.
type agentExec struct {
	mu   sync.Mutex
	cmds []string
}

func (a *agentExec) Exec(ctx context.Context, _, pod, _ string, cmd []string, _ io.Reader) ([]byte, []byte, error) {
	a.mu.Lock()
	a.cmds = append(a.cmds, pod+" "+strings.Join(cmd[2:], " "))
	a.mu.Unlock()
	c, _, err := parseArgs(cmd[2:])
	if err != nil {
		return nil, []byte(err.Error()), err
	}
	rep, err := RunClient(ctx, c)
	if err != nil {
		return nil, []byte(err.Error()), err
	}
	rep.Client = pod
	b, err := json.Marshal(rep)
	return b, nil, err
}

func readyClients(t *testing.T, names ...string) *fake.Clientset {
	t.Helper()
	kc := fake.NewClientset()
	for _, n := range names {
		p := clientPod(n, scenario.ModeNone, nil, []string{"loadgen"}, nil, true)
		p.Labels = (&Cluster{RunID: "r1"}).Labels()
		if _, err := kc.CoreV1().Pods("mb-single").Create(context.Background(), &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return kc
}

// Every pod runs one agent per target at once, with the target's share of the QPS (over the pods) and of the
// connections; the reports are merged per target and over all.
func TestClusterRunTargets(t *testing.T) {
	web, api := fortioHTTP(t), fortioHTTP(t)
	ex := &agentExec{}
	c := &Cluster{Kube: readyClients(t, "lg-a", "lg-b"), Exec: ex, RunID: "r1", Clients: 2}
	s := Spec{QPS: 200, Connections: 4, Duration: 500 * time.Millisecond, Clients: 2, Headers: map[string]string{"Cookie": "s=1"},
		Targets: []LoadTarget{
			{Name: "web", URL: web + "/echo", Protocol: ProtocolHTTP, Weight: 1},
			{Name: "api", URL: api + "/echo", Protocol: ProtocolHTTP, Weight: 3, Headers: map[string]string{"X-Api": "1"}},
		}}
	res, err := c.Run(context.Background(), "mb-single", scenario.ModeNone, s)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ex.cmds)
	want := []string{
		"lg-a --target api --url " + api + "/echo --qps 75 --connections 3 --duration 500ms --header Cookie: s=1 --header X-Api: 1 --json",
		"lg-a --target web --url " + web + "/echo --qps 25 --connections 1 --duration 500ms --header Cookie: s=1 --json",
		"lg-b --target api --url " + api + "/echo --qps 75 --connections 3 --duration 500ms --header Cookie: s=1 --header X-Api: 1 --json",
		"lg-b --target web --url " + web + "/echo --qps 25 --connections 1 --duration 500ms --header Cookie: s=1 --json",
	}
	if !slices.Equal(ex.cmds, want) {
		t.Errorf("commands\n%s\nwant\n%s", strings.Join(ex.cmds, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Clients) != 4 || len(res.Targets) != 2 || res.Targets[0].Name != "web" || res.Targets[1].Name != "api" {
		t.Fatalf("%d client runs, targets %+v", len(res.Clients), res.Targets)
	}
	w, a := res.Targets[0], res.Targets[1]
	if len(w.Clients) != 2 || len(a.Clients) != 2 || w.Requests+a.Requests != res.Requests || res.Errors != 0 {
		t.Errorf("web %d runs %d requests, api %d runs %d requests, run %d requests %d errors", len(w.Clients), w.Requests, len(a.Clients), a.Requests, res.Requests, res.Errors)
	}
	if ratio := float64(a.Requests) / float64(w.Requests); math.Abs(ratio-3) > 0.4 {
		t.Errorf("api:web requests %d:%d = %.2f, want 3 +- 0.4", a.Requests, w.Requests, ratio)
	}
	if w.RequestedQPS != 50 || a.RequestedQPS != 150 {
		t.Errorf("requested qps web %v api %v, want 50 and 150", w.RequestedQPS, a.RequestedQPS)
	}
}

// A report that names another target than the one asked for is refused (it would be merged into the wrong target).
func TestClusterRunRefusesWrongTarget(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", captures[0])) // an unnamed target's report
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Kube: readyClients(t, "lg-a"), Exec: &replayExec{out: map[string][]byte{"lg-a": b}}, RunID: "r1", Clients: 1}
	_, err = c.Run(context.Background(), "mb-single", scenario.ModeNone, Spec{QPS: 10, Connections: 2, Duration: time.Second, Clients: 1,
		Targets: []LoadTarget{{Name: "a", URL: "http://a/", Weight: 1}, {Name: "b", URL: "http://b/", Weight: 1}}})
	if err == nil || !strings.Contains(err.Error(), "lg-a target a") || !strings.Contains(err.Error(), `report is for target ""`) {
		t.Errorf("got %v, want the pod, the target and the mismatch named", err)
	}
}
