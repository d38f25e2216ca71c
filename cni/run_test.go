package cni_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/cgroupstat"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// deps are what one bench run of these tests talks to: the bench's own (cni.Deps) and the store the runner
// records into.
type deps struct {
	Kube      *fake.Clientset
	Exec      kube.Execer
	Store     *fakeStore
	Resources cni.ResourceCollector
	Clock     clock.Clock
}

// Run is meshbench cni's path through the house on fakes: cni.New, the cases through runner.Runner
// (orchestrate.RunCNICases, the wiring the command uses), and the report computed from what the store recorded,
// as orchestrate.CNI computes it from the run directory.
func Run(ctx context.Context, cfg cni.Config, d deps) (*cni.Report, error) {
	b, err := cni.New(ctx, cfg, cni.Deps{Kube: d.Kube, Exec: d.Exec, Resources: d.Resources, Clock: d.Clock})
	if err != nil {
		return b.Report(results.Summary{}), err
	}
	_, err = orchestrate.RunCNICases(ctx, orchestrate.CNICases{Bench: b, RunID: cfg.RunID, Store: d.Store, Measured: d.Resources != nil,
		Keep: cfg.Keep, DeleteTimeout: cfg.DeleteTimeout, Clock: d.Clock})
	d.Store.mu.Lock()
	defer d.Store.mu.Unlock()
	sum := results.Summarize(results.RunMeta{RunID: cfg.RunID}, d.Store.samples, d.Store.cases, results.SummaryOptions{Confidence: cfg.Confidence})
	return b.Report(sum), err
}

const (
	testNS        = "mb-cni-unit"
	testClusterIP = "10.96.0.20"
)

// podIPs are what the fake "CNI" assigns; hostNetwork pods get their node's IP.
var podIPs = map[cni.Role]string{cni.RoleClient: "10.244.0.10", cni.RoleClientAgent: "10.244.0.11", cni.RoleServerLocal: "10.244.0.12",
	cni.RoleServerRemote: "10.244.1.20", cni.RoleHostClient: "172.30.0.1", cni.RoleHostServer: "172.30.0.2"}

// fakeCluster is a client-go fake whose pods become Ready on their affinity node at once, and whose Services get a
// ClusterIP and an EndpointSlice pointing at server-remote.
func fakeCluster(t *testing.T, nodes ...corev1.Node) *fake.Clientset {
	t.Helper()
	return fakeClusterWith(t, nil, nodes...)
}

// fakeClusterWith lets mutate change each created pod after the fake scheduler and kubelet did.
func fakeClusterWith(t *testing.T, mutate func(*corev1.Pod), nodes ...corev1.Node) *fake.Clientset {
	t.Helper()
	objs := []runtime.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: testNS}}}
	for i := range nodes {
		objs = append(objs, &nodes[i])
	}
	kc := fake.NewSimpleClientset(objs...)
	kc.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	kc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Spec.NodeName = p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIPs[cni.Role(p.Name)],
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if mutate != nil {
			mutate(p)
		}
		return false, p, nil
	})
	kc.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		s.Spec.ClusterIP = testClusterIP
		ready := true
		es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: s.Name + "-x", Namespace: s.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.Name}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{podIPs[cni.RoleServerRemote]}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
		if err := kc.Tracker().Add(es); err != nil {
			return true, nil, err
		}
		return false, s, nil
	})
	return kc
}

// fakeClock is a k8s.io/utils/clock.Clock that never waits: every timer fires at once and moves the time on by its
// duration (a pause or a poll interval passes in no wall time). onTimer, when set, sees each timer's duration and
// may hold it back (fire=false: it never fires, the caller's ctx must end the wait).
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	onTimer func(d time.Duration) (fire bool)
}

var _ clock.Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	ch := make(chan time.Time, 1)
	if c.onTimer == nil || c.onTimer(d) {
		c.advance(d)
		ch <- c.Now()
	}
	return fakeTimer{ch}
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }
func (c *fakeClock) Tick(d time.Duration) <-chan time.Time  { return c.NewTimer(d).C() }
func (c *fakeClock) Sleep(d time.Duration)                  { c.advance(d) }

type fakeTimer struct{ ch chan time.Time }

func (t fakeTimer) C() <-chan time.Time      { return t.ch }
func (t fakeTimer) Stop() bool               { return false }
func (t fakeTimer) Reset(time.Duration) bool { return false }

// fakeIperf3Version is `iperf3 --version` of Debian's 3.12 (internal/nettool/testdata/iperf3-version-full.txt).
const fakeIperf3Version = "iperf 3.12 (cJSON 1.7.15)\nLinux vm 6.18.44 #1 SMP x86_64\nOptional features available: CPU affinity setting\n"

// isTestExec reports whether a recorded exec ("pod/container: cmd") is an iperf3 test, not its version query.
func isTestExec(call string) bool {
	return strings.Contains(call, ": iperf3 ") && !strings.HasSuffix(call, strings.Join(nettool.Iperf3VersionArgs, " "))
}

// fakeExec answers the commands cni runs, like the real tools would on the paths it asks for.
type fakeExec struct {
	mu    sync.Mutex
	calls []string
	// block, when set, makes the exec of matching commands wait for the context (a test that never ends).
	block   func(pod string, cmd []string) bool
	started chan struct{}
	// fail, when it returns output, makes the command exit 1 with that output (an iperf3 error, say).
	fail func(pod string, cmd []string) []byte
	// cgroupsFail, when it returns an error, makes the `cgroups dump` of that pod fail.
	cgroupsFail func(pod string) error
	// clock, when set, moves on by testTime for every test (iperf3, agent) and records the last other exec (probes).
	clock     *fakeClock
	testTime  time.Duration
	lastProbe time.Time
}

func (f *fakeExec) Exec(ctx context.Context, ns, pod, container string, cmd []string, _ io.Reader) ([]byte, []byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, pod+"/"+container+": "+strings.Join(cmd, " "))
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, nil, err // a real exec cannot even start
	}
	if ns != testNS {
		return nil, nil, fmt.Errorf("namespace %s", ns)
	}
	if len(cmd) > 2 && cmd[1] == "cgroups" && cmd[2] == "dump" {
		return f.cgroupsDump(pod, container, cmd)
	}
	switch {
	case slices.Equal(cmd, nettool.Iperf3VersionArgs):
		return []byte(fakeIperf3Version), nil, nil
	case slices.Equal(cmd, nettool.NetperfVersionArgs):
		return nil, []byte("netperf: not found"), errors.New("command terminated with exit code 127")
	}
	if f.clock != nil {
		if cmd[0] == "iperf3" || cmd[0] == nettool.AgentBinary {
			f.clock.advance(f.testTime)
		} else {
			f.mu.Lock()
			f.lastProbe = f.clock.Now()
			f.mu.Unlock()
		}
	}
	if f.fail != nil {
		if out := f.fail(pod, cmd); out != nil {
			return out, nil, errors.New("command terminated with exit code 1")
		}
	}
	if f.block != nil && f.block(pod, cmd) {
		if f.started != nil {
			close(f.started)
			f.started = nil
		}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	switch {
	case cmd[0] == "which":
		return nil, []byte(""), errors.New("command terminated with exit code 1")
	case cmd[0] == "cat" && cmd[1] == "/proc/net/tcp":
		var b strings.Builder
		for i, p := range []int{5201, 25201} {
			fmt.Fprintf(&b, "   %d: 00000000:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65532 0 1 1\n", i, p)
		}
		return []byte(b.String()), nil, nil
	case cmd[0] == "cat" && cmd[1] == "/proc/net/route":
		return []byte(cni.ProcNetRoute), nil, nil
	case cmd[0] == "cat" && strings.HasSuffix(cmd[1], "/mtu"):
		return []byte("1500\n"), nil, nil
	case cmd[0] == "iperf3":
		return []byte(fakeIperf3(cmd)), nil, nil
	case cmd[0] == nettool.AgentBinary:
		test := nettool.BuiltinTestRR
		if cmd[1] == "crr" {
			test = nettool.BuiltinTestCRR
		}
		b, _ := json.Marshal(nettool.BuiltinResult{Tool: string(nettool.ToolBuiltin), Test: test, Target: cmd[3], Connections: 1,
			RequestBytes: 100, ResponseBytes: 100, Seconds: 1, Transactions: 20000, TransactionsPerSecond: 20000, Sockets: 1,
			LatencyMs: nettool.BuiltinLatency{Avg: 0.05, Min: 0.01, Max: 2, P50: 0.04, P90: 0.06, P99: 0.2, P999: 1}})
		return b, nil, nil
	}
	return nil, nil, fmt.Errorf("unexpected command %q", cmd)
}

// cgroupsDump answers `meshbench-agent cgroups dump --dir D --since S --until U` like the agent would: two
// containers per pod, sampled at the window's start, middle and end, each using 100 m of CPU and 8 MiB.
func (f *fakeExec) cgroupsDump(pod, container string, cmd []string) ([]byte, []byte, error) {
	want := []string{cni.CopiedAgent, "cgroups", "dump", "--dir", cni.CgroupsDir}
	if pod == string(cni.RoleClientAgent) {
		want[0] = nettool.AgentBinary // the agent image: its own binary
	}
	if !slices.Equal(cmd[:len(want)], want) || container == "" {
		return nil, []byte("bad command"), fmt.Errorf("unexpected dump command %q in %s/%s", cmd, pod, container)
	}
	if f.cgroupsFail != nil {
		if err := f.cgroupsFail(pod); err != nil {
			return nil, []byte("meshbench-agent cgroups: " + err.Error()), errors.New("command terminated with exit code 1")
		}
	}
	since, err1 := time.Parse(time.RFC3339Nano, cmd[slices.Index(cmd, "--since")+1])
	until, err2 := time.Parse(time.RFC3339Nano, cmd[slices.Index(cmd, "--until")+1])
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	d := cgroupstat.Dump{Containers: map[string][]cgroupstat.Sample{}}
	for _, c := range []string{"a", "b"} {
		var ss []cgroupstat.Sample
		for _, t := range []time.Time{since, since.Add(until.Sub(since) / 2), until} {
			ss = append(ss, cgroupstat.Sample{T: t, CPUNs: uint64(t.Sub(since).Seconds() * 100e6), MemBytes: 8 << 20})
		}
		d.Containers[c] = ss
	}
	b, err := json.Marshal(d)
	return b, nil, err
}

// fakeIperf3 is an iperf3 -J result for the command: the client dialled -c, and the server that answered is the
// ClusterIP's backend or the dialled address itself.
func fakeIperf3(cmd []string) string {
	host := cmd[slices.Index(cmd, "-c")+1]
	backend := host
	if host == testClusterIP {
		backend = podIPs[cni.RoleServerRemote]
	}
	proto, target := "TCP", "0"
	if slices.Contains(cmd, "-u") {
		proto, target = "UDP", "1000000000"
	}
	return fmt.Sprintf(`{"start":{"connected":[{"local_host":"10.244.0.10","local_port":40000,"remote_host":%q,"remote_port":5201}],
"version":"iperf 3.12","test_start":{"protocol":%q,"num_streams":1,"blksize":1448,"omit":0,"duration":1,"reverse":0,"target_bitrate":%s}},
"end":{"streams":[{"sender":{"mean_rtt":100,"min_rtt":50,"max_rtt":300}}],
"sum_sent":{"seconds":1,"bytes":125000000,"bits_per_second":1000000000,"retransmits":3,"packets":86000},
"sum_received":{"seconds":1,"bytes":100000000,"bits_per_second":800000000,"packets":86000,"lost_packets":17200,"lost_percent":20,"jitter_ms":0.01},
"cpu_utilization_percent":{"host_total":10,"remote_total":20}},
"server_output_json":{"start":{"connected":[{"local_host":%q,"local_port":5201,"remote_host":"10.244.0.10","remote_port":40000}]}}}`,
		host, proto, target, backend)
}

type fakeStore struct {
	mu      sync.Mutex
	cases   []results.CaseResult
	samples []results.Sample
}

func (s *fakeStore) AppendCase(res results.CaseResult, samples []results.Sample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cases = append(s.cases, res)
	s.samples = append(s.samples, samples...)
	return nil
}

type fakeResources struct{}

func (fakeResources) Collect(_ context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
	var out podset.Collected
	for _, s := range sets {
		for _, st := range []string{"min", "avg", "max"} {
			out.Samples = append(out.Samples, results.Sample{Window: w, Source: prom.SourceKubelet, Component: s.Component,
				Metric: "cpu", Stat: results.Stat(st), Value: 100, Unit: "millicores"},
				results.Sample{Window: w, Source: prom.SourceKubelet, Component: s.Component,
					Metric: "memory", Stat: results.Stat(st), Value: 20, Unit: "MiB"})
		}
	}
	return out, nil
}

func testConfig(t *testing.T) cni.Config {
	return cni.Config{
		RunID: "cni-unit", Namespace: testNS, RunDir: t.TempDir(),
		CNI: scenario.CNI{Tests: scenario.AllCNITests, Paths: scenario.AllCNIPaths, Duration: scenario.D(time.Second),
			Samples: 2, Streams: 1, UDPBitrate: "1G", RequestBytes: 100, ResponseBytes: 100, RRTool: scenario.RRToolAuto},
		Images:       cni.Images{Network: "net:1", Agent: "agent:1", PullPolicy: "IfNotPresent"},
		ReadyTimeout: 5 * time.Second, DeleteTimeout: 5 * time.Second, IdleWindow: 10 * time.Millisecond,
	}
}

func namespaceGone(t *testing.T, kc *fake.Clientset) {
	t.Helper()
	_, err := kc.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s not deleted: %v", testNS, err)
	}
}

func TestRunTwoNodes(t *testing.T) {
	t.Parallel()
	kc := fakeCluster(t, cni.Node("node1"), cni.Node("node2"))
	ex := &fakeExec{}
	st := &fakeStore{}
	cfg := testConfig(t)
	rep, err := Run(context.Background(), cfg, deps{Kube: kc, Exec: ex, Store: st, Resources: fakeResources{}})
	if err != nil {
		t.Fatalf("Run: %v\ncalls:\n%s", err, strings.Join(ex.calls, "\n"))
	}
	namespaceGone(t, kc)
	if rep.RRTool != nettool.ToolBuiltin || len(rep.Rows) != 16 {
		t.Fatalf("tool %s, %d rows", rep.RRTool, len(rep.Rows))
	}
	for _, row := range rep.Rows {
		if row.Status != cni.RowOK || row.N != 2 || row.Mean <= 0 {
			t.Errorf("%s/%s: %s %s n=%d mean=%v", row.Path, row.Test, row.Status, row.Reason, row.N, row.Mean)
		}
	}
	// Placement: same-node pods on node1, cross-node servers on node2. Every deployed pod is listed (the built-in
	// RR tool adds client-agent; the host path adds host-client and host-server), so an empty list cannot pass.
	var roles []cni.Role
	for _, p := range rep.Pods {
		roles = append(roles, p.Role)
	}
	if want := []cni.Role{cni.RoleClient, cni.RoleClientAgent, cni.RoleServerLocal, cni.RoleServerRemote, cni.RoleHostClient, cni.RoleHostServer}; !slices.Equal(roles, want) {
		t.Fatalf("pods %v, want %v", roles, want)
	}
	for _, p := range rep.Pods {
		want := "node1"
		if p.Role == cni.RoleServerRemote || p.Role == cni.RoleHostServer {
			want = "node2"
		}
		if p.Node != want {
			t.Errorf("%s on %s", p.Role, p.Node)
		}
	}
	// The Service path dialled the ClusterIP; the host path used the host ports.
	joined := strings.Join(ex.calls, "\n")
	for _, want := range []string{
		"client/net: iperf3 -J -c " + testClusterIP + " -p 5201",
		"client-agent/agent: meshbench-agent crr --target " + testClusterIP + ":8078",
		"host-client/net: iperf3 -J -c 172.30.0.2 -p 25201",
		"host-client/agent: meshbench-agent rr --target 172.30.0.2:28078",
		"client/net: iperf3 -J -c 10.244.0.12 -p 5201 -t 1 -u -b 1G --get-server-output",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no exec %q in\n%s", want, joined)
		}
	}
	// Store: idle + 16 cases, samples labelled, raw outputs kept.
	if len(st.cases) != 17 || st.cases[0].CaseID != "idle" {
		t.Fatalf("%d cases, first %s", len(st.cases), st.cases[0].CaseID)
	}
	var svcTCP *results.CaseResult
	for i := range st.cases {
		if st.cases[i].CaseID == "service/tcp" {
			svcTCP = &st.cases[i]
		}
	}
	if svcTCP == nil || svcTCP.Status != results.StatusOK || svcTCP.Facts["target"] != testClusterIP || svcTCP.Facts["backend"] != podIPs[cni.RoleServerRemote] {
		t.Fatalf("service/tcp case %+v", svcTCP)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.RunDir, svcTCP.Facts["raw.2"]))
	if err != nil || !strings.Contains(string(raw), testClusterIP) {
		t.Errorf("raw output %s: %v", svcTCP.Facts["raw.2"], err)
	}
	var cpu, cgroupCPU, tput int
	for _, s := range st.samples {
		if s.Metric == "cpu" && s.Window.Kind == results.WindowTest && s.Labels[cni.LabelTest] != "" {
			if s.Labels[results.CNILabelSource] == results.CNISourceCgroup {
				cgroupCPU++
			} else {
				cpu++
			}
		}
		if s.Metric == results.MetricThroughput && s.Labels[cni.LabelPath] == "service" && s.Labels[cni.LabelTest] == "udp" && s.Unit == results.UnitMbps {
			tput++
		}
	}
	if cpu != 16*2*3 || tput != 2 {
		t.Errorf("%d test-window cpu samples, %d service udp throughput samples", cpu, tput)
	}
	// cgroup-1s: min/avg/max of the path's pods together and of each pod; 12 pod-network cases with client,
	// client-agent and the server, 4 host cases with host-client and host-server.
	if want := 12*(1+3)*3 + 4*(1+2)*3; cgroupCPU != want {
		t.Errorf("%d cgroup-1s test-window cpu samples, want %d", cgroupCPU, want)
	}
	if len(rep.Resources) == 0 || len(rep.Facts.MTU) != 4 || rep.Facts.ServiceClusterIP != testClusterIP {
		t.Errorf("resources %d, mtu %+v, clusterIP %s", len(rep.Resources), rep.Facts.MTU, rep.Facts.ServiceClusterIP)
	}
}

func TestRunSingleNodeSkips(t *testing.T) {
	t.Parallel()
	kc := fakeCluster(t, cni.Node("node1"), cni.Node("node2", cni.NotReady))
	st := &fakeStore{}
	rep, err := Run(context.Background(), testConfig(t), deps{Kube: kc, Exec: &fakeExec{}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	namespaceGone(t, kc)
	for _, row := range rep.Rows {
		switch {
		case scenario.CNIPath(row.Path) == scenario.CNIPathSameNode && row.Status != cni.RowOK:
			t.Errorf("same-node %s: %s", row.Test, row.Status)
		case scenario.CNIPath(row.Path) != scenario.CNIPathSameNode && (row.Status != results.CNIRowSkipped || !strings.Contains(row.Reason, "only one Ready schedulable node")):
			t.Errorf("%s/%s: %s %q", row.Path, row.Test, row.Status, row.Reason)
		}
	}
	for _, p := range rep.Pods {
		if p.HostNetwork || p.Role == cni.RoleServerRemote {
			t.Errorf("pod %s deployed on a single node", p.Role)
		}
	}
	skipped := 0
	for _, c := range st.cases {
		if c.Status == results.StatusSkipped {
			skipped++
		}
	}
	if skipped != 12 {
		t.Errorf("%d skipped cases recorded, want 12", skipped)
	}
}

func TestRunInterruptedCleansUp(t *testing.T) {
	t.Parallel()
	kc := fakeCluster(t, cni.Node("node1"), cni.Node("node2"))
	started := make(chan struct{})
	ex := &fakeExec{started: started, block: func(pod string, cmd []string) bool {
		return cmd[0] == "iperf3" && slices.Contains(cmd, "-u") // the udp test never ends
	}}
	st := &fakeStore{}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	rep, err := Run(ctx, testConfig(t), deps{Kube: kc, Exec: ex, Store: st})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	namespaceGone(t, kc)
	// same-node/tcp finished before the interruption and is recorded; the interrupted udp sample is not a measurement.
	var ids []string
	for _, c := range st.cases {
		ids = append(ids, c.CaseID)
	}
	if !slices.Contains(ids, "same-node/tcp") || slices.Contains(ids, "same-node/udp") {
		t.Errorf("recorded %v", ids)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Status != cni.RowOK {
		t.Errorf("rows %+v", rep.Rows)
	}
}

func TestRunBrokenPodFailsItsCases(t *testing.T) {
	t.Parallel()
	kc := fakeClusterWith(t, func(p *corev1.Pod) {
		if p.Name == string(cni.RoleHostServer) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = nil
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: cni.ContainerIperf3,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: "hostNetwork forbidden"}}}}
		}
	}, cni.Node("node1"), cni.Node("node2"))
	rep, err := Run(context.Background(), testConfig(t), deps{Kube: kc, Exec: &fakeExec{}, Store: &fakeStore{}})
	var cf *cni.CasesFailedError
	if !errors.As(err, &cf) || len(cf.Cases) != 4 {
		t.Fatalf("err = %v", err)
	}
	namespaceGone(t, kc)
	for _, row := range rep.Rows {
		if scenario.CNIPath(row.Path) == scenario.CNIPathHost && (row.Status != results.CNIRowFailed || !strings.Contains(row.Reason, "host-server")) {
			t.Errorf("host/%s: %s %q", row.Test, row.Status, row.Reason)
		}
		if scenario.CNIPath(row.Path) != scenario.CNIPathHost && row.Status != cni.RowOK {
			t.Errorf("%s/%s: %s", row.Path, row.Test, row.Status)
		}
	}
}

func TestRunClientPodBrokenFailsEveryCell(t *testing.T) {
	t.Parallel()
	kc := fakeClusterWith(t, func(p *corev1.Pod) {
		if p.Name == string(cni.RoleClient) {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: cni.ContainerNet,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}}
		}
	}, cni.Node("node1"), cni.Node("node2"))
	st := &fakeStore{}
	rep, err := Run(context.Background(), testConfig(t), deps{Kube: kc, Exec: &fakeExec{}, Store: st})
	// Every case is recorded failed (the first with the deploy error, the others as not measured because of it).
	var cf *cni.CasesFailedError
	if !errors.As(err, &cf) || len(cf.Cases) != 16 {
		t.Fatalf("err = %v", err)
	}
	namespaceGone(t, kc)
	if len(rep.Rows) != 16 || len(st.cases) != 16 {
		t.Fatalf("%d rows, %d recorded cases", len(rep.Rows), len(st.cases))
	}
	for _, row := range rep.Rows {
		if row.Status != results.CNIRowFailed || !strings.Contains(row.Reason, "ErrImagePull") {
			t.Errorf("%s/%s: %s %q", row.Path, row.Test, row.Status, row.Reason)
		}
	}
}

// The CPU figures of a window reach one rate range back before its start: the idle window waits that long after the
// deploy's probes, and a case too short to keep them inside its own traffic has its CPU left out, with a warning.
func TestRunResourceWindowsSeeOnlyTheirOwnActivity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		rateRange time.Duration
		wantCPU   bool
	}{
		// Each case runs 2 samples of 1 s (fake clock): 2 s of traffic.
		{name: "case of exactly two rate ranges keeps its CPU", rateRange: time.Second, wantCPU: true},
		{name: "case shorter than two rate ranges", rateRange: 1500 * time.Millisecond},
		{name: "case shorter than one rate range", rateRange: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			ex := &fakeExec{clock: clk, testTime: time.Second}
			st := &fakeStore{}
			cfg := testConfig(t)
			cfg.RateRange = tt.rateRange
			rep, err := Run(context.Background(), cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: ex,
				Store: st, Resources: fakeResources{}, Clock: clk})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(st.cases) != 17 || st.cases[0].CaseID != "idle" {
				t.Fatalf("%d cases, first %s", len(st.cases), st.cases[0].CaseID)
			}
			idle := st.cases[0].Windows[0]
			if quiet := idle.Start.Sub(ex.lastProbe); quiet < tt.rateRange {
				t.Errorf("idle window starts %s after the last deploy probe, want at least the rate range %s", quiet, tt.rateRange)
			}
			if got := idle.End.Sub(idle.Start); got != cfg.IdleWindow {
				t.Errorf("idle window %s, want %s", got, cfg.IdleWindow)
			}
			caseStart := map[string]time.Time{}
			for _, c := range st.cases[1:] {
				caseStart[c.CaseID] = c.Start
				warned := strings.Contains(strings.Join(c.SampleWarnings, "; "), "CPU not attributable to this test") &&
					strings.Contains(c.Facts["resources"], "lengthen cni.duration or samples")
				if warned == tt.wantCPU {
					t.Errorf("%s: warnings %q, resources %q", c.CaseID, c.SampleWarnings, c.Facts["resources"])
				}
			}
			var cpu, mem int
			cgroupCPU := map[string]int{}
			for _, s := range st.samples {
				if s.Window.Kind != results.WindowTest || s.Labels[cni.LabelTest] == "" {
					continue
				}
				if s.Labels[results.CNILabelSource] == results.CNISourceCgroup {
					// 1 s samples inside the window: the CPU of every case, whatever the rate range
					if s.Metric == "cpu" && s.Stat == "avg" && s.Labels[results.CNILabelPod] == "" {
						cgroupCPU[s.Labels[cni.LabelPath]+"/"+s.Labels[cni.LabelTest]]++
					}
					continue
				}
				if (s.Metric == "cpu" || s.Metric == "memory") && s.Labels[results.CNILabelSource] != prom.SourceKubelet {
					t.Errorf("collector sample with source label %q", s.Labels[results.CNILabelSource])
				}
				id := s.Labels[cni.LabelPath] + "/" + s.Labels[cni.LabelTest]
				switch s.Metric {
				case "cpu":
					cpu++
					if back := s.Window.Start.Add(-tt.rateRange); back.Before(caseStart[id]) {
						t.Errorf("%s: cpu window from %s reaches back to %s, before the case started at %s", id, s.Window.Start, back, caseStart[id])
					}
				case "memory":
					mem++
				}
			}
			wantCPU := 0
			if tt.wantCPU {
				wantCPU = 16 * 2 * 3
			}
			if cpu != wantCPU || mem != 16*2*3 {
				t.Errorf("%d test-window cpu samples (want %d), %d memory samples (want %d)", cpu, wantCPU, mem, 16*2*3)
			}
			if len(cgroupCPU) != 16 {
				t.Errorf("cgroup-1s path-total CPU averages for %d cases, want all 16: %v", len(cgroupCPU), cgroupCPU)
			}
			for id, n := range cgroupCPU {
				if n != 1 {
					t.Errorf("%s: %d cgroup-1s path-total CPU averages, want 1", id, n)
				}
			}
			for _, row := range rep.Rows {
				if warned := slices.ContainsFunc(row.Warnings, func(w string) bool { return strings.Contains(w, "shorter than the rate range") }); warned == tt.wantCPU {
					t.Errorf("%s/%s: warnings %q", row.Path, row.Test, row.Warnings)
				}
			}
			noted := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "CPU of 16 case(s) not recorded") })
			if noted == tt.wantCPU {
				t.Errorf("notes %q", rep.Notes)
			}
			stillGiven := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "still gives the CPU of 16 of them") })
			if stillGiven == tt.wantCPU {
				t.Errorf("notes %q: the cgroup-1s CPU of the short cases should be noted", rep.Notes)
			}
		})
	}
}

// A namespace the run created is deleted even when the wait for its ServiceAccount fails; one that already existed
// is left alone.
func TestRunNamespaceCleanupOnCreateFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		existing   bool // the namespace is there before the run
		cancelInSA bool // Ctrl-C while waiting for the default ServiceAccount
		wantErr    string
		wantGone   bool
	}{
		// Interrupted: the case is not recorded (the runner's semantics), the error says so.
		{name: "interrupted while waiting for the ServiceAccount", cancelInSA: true, wantErr: "cases: context canceled", wantGone: true},
		// The deploy error is every case's recorded reason.
		{name: "namespace already exists", existing: true, wantErr: "deploy: create namespace mb-cni-unit: namespaces \"mb-cni-unit\" already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kc := fakeCluster(t, cni.Node("node1"), cni.Node("node2"))
			if tt.existing {
				if err := kc.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelInSA {
				kc.PrependReactor("get", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
					cancel()
					return true, nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), "default")
				})
			}
			rep, err := Run(ctx, testConfig(t), deps{Kube: kc, Exec: &fakeExec{}, Store: &fakeStore{}})
			if err == nil {
				t.Fatal("no error")
			}
			said := []string{err.Error()}
			for _, row := range rep.Rows {
				said = append(said, row.Reason)
			}
			if !strings.Contains(strings.Join(said, "\n"), tt.wantErr) {
				t.Fatalf("err = %v, rows %+v, want %q", err, rep.Rows, tt.wantErr)
			}
			if tt.wantGone {
				namespaceGone(t, kc)
			} else if _, err := kc.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{}); err != nil {
				t.Errorf("the namespace that existed before the run: %v", err)
			}
		})
	}
}

// Ctrl-C during the pause before a retry ends the sample: no further exec, and the raw output of the attempt that
// really failed is kept.
func TestRunInterruptedRetryKeepsRealOutput(t *testing.T) {
	t.Parallel()
	const refused = `{"start":{"connected":[],"version":"iperf 3.12"},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}`
	ex := &fakeExec{fail: func(_ string, cmd []string) []byte {
		if cmd[0] == "iperf3" {
			return []byte(refused)
		}
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pauses []time.Duration
	clk := newFakeClock()
	clk.onTimer = func(d time.Duration) bool {
		pauses = append(pauses, d)
		cancel() // Ctrl-C lands in the retry pause (the polls before it succeed at their first check: no timer)
		return false
	}
	cfg := testConfig(t)
	_, err := Run(ctx, cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: ex, Store: &fakeStore{}, Clock: clk})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(pauses) != 1 || pauses[0] != 2*time.Second {
		t.Errorf("pauses %v, want one retry pause of 2s", pauses)
	}
	var iperf3 int
	for _, c := range ex.calls {
		if isTestExec(c) {
			iperf3++
		}
	}
	if iperf3 != 1 {
		t.Errorf("%d iperf3 execs, want 1 (no retry after the interruption):\n%s", iperf3, strings.Join(ex.calls, "\n"))
	}
	raw, err := os.ReadFile(filepath.Join(cfg.RunDir, "raw", "same-node-tcp-1.json"))
	if err != nil || string(raw) != refused {
		t.Errorf("raw output %q (%v), want the failed attempt's own output", raw, err)
	}
}

// nodeRecorder records the node set of every resource window and answers like the Prometheus collector: per test
// node, labelled with the node and the series.
type nodeRecorder struct {
	mu  sync.Mutex
	got [][]podset.NodeRef
}

func (n *nodeRecorder) Collect(_ context.Context, w results.Window, sets []podset.PodSet) (podset.Collected, error) {
	var out podset.Collected
	for _, s := range sets {
		if s.Component != results.ComponentNode {
			continue
		}
		out.Warnings = append(out.Warnings, s.Notes...) // as the collectors pass a set's notes on
		n.mu.Lock()
		n.got = append(n.got, s.Nodes)
		n.mu.Unlock()
		for _, ref := range s.Nodes {
			out.Samples = append(out.Samples, results.Sample{Window: w, Source: prom.SourcePrometheus, Component: s.Component, Metric: "cpu", Stat: "avg",
				Value: 100, Unit: "millicores", Labels: map[string]string{prom.LabelNode: ref.Name, prom.LabelSeries: prom.NodeSeriesCadvisor}})
		}
	}
	return out, nil
}

// TestRunNodeSetsAreTheTestNodes checks that the whole-node component of each window is the nodes its pods run on
// (same-node: node A; the other paths and the idle window: A and B), never the cluster's third node, with the
// nodes' addresses, and that a node sample keeps the collector's node and series labels next to the case's.
func TestRunNodeSetsAreTheTestNodes(t *testing.T) {
	t.Parallel()
	withIP := func(ip string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		}
	}
	kc := fakeCluster(t, cni.Node("node1", withIP("10.0.0.1")), cni.Node("node2", withIP("10.0.0.2")), cni.Node("node3", withIP("10.0.0.3")))
	cfg := testConfig(t)
	cfg.CNI.Placement = scenario.CNIPlacement{ClientNode: "node1", ServerNode: "node2"}
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP}
	rec := &nodeRecorder{}
	st := &fakeStore{}
	rep, err := Run(context.Background(), cfg, deps{Kube: kc, Exec: &fakeExec{}, Store: st, Resources: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"idle": {"node1", "node2"}, "same-node/tcp": {"node1"}, "cross-node/tcp": {"node1", "node2"},
		"service/tcp": {"node1", "node2"}, "host/tcp": {"node1", "node2"}}
	seen := map[string][]string{}
	for _, s := range st.samples {
		if s.Component != results.ComponentNode {
			continue
		}
		id := s.Labels[cni.LabelPath] + "/" + s.Labels[cni.LabelTest]
		if s.Window.Kind == results.WindowIdle {
			id = "idle"
			if s.Labels[cni.LabelPath] != "all" {
				t.Errorf("idle node sample labels %v", s.Labels)
			}
		}
		if s.Labels[prom.LabelSeries] != prom.NodeSeriesCadvisor {
			t.Errorf("sample %s lost the collector's series label: %v", id, s.Labels)
		}
		seen[id] = append(seen[id], s.Labels[prom.LabelNode])
	}
	for id, nodes := range want {
		if !slices.Equal(seen[id], nodes) {
			t.Errorf("%s: node samples for %v, want %v", id, seen[id], nodes)
		}
	}
	for _, set := range rec.got {
		for _, ref := range set {
			if ref.Name == "node3" {
				t.Errorf("node3 runs no test pod but was measured")
			}
			if len(ref.Addresses) != 1 || ref.Addresses[0] != "10.0.0."+ref.Name[4:] {
				t.Errorf("node %s has addresses %v: want its InternalIP", ref.Name, ref.Addresses)
			}
		}
	}
	// The report keeps one row per node.
	var rows []string
	for _, rr := range rep.Resources {
		if rr.Component == results.ComponentNode && rr.Window == "test" && scenario.CNIPath(rr.Path) == scenario.CNIPathCrossNode {
			rows = append(rows, rr.Node+" "+rr.Series)
		}
	}
	if !slices.Equal(rows, []string{"node1 cadvisor-root", "node2 cadvisor-root"}) {
		t.Errorf("cross-node node rows %q", rows)
	}
}

// absentNodes answers every node set like the Prometheus collector does when no series names the node.
type absentNodes struct{}

func (absentNodes) Collect(_ context.Context, _ results.Window, sets []podset.PodSet) (podset.Collected, error) {
	var out podset.Collected
	for _, s := range sets {
		for _, n := range s.Nodes {
			out.Warnings = append(out.Warnings, podset.NodeNotCollected+n.Name+" not collected: no series identifies it (...)")
		}
	}
	return out, nil
}

// TestRunNodeAbsentNoteOnce checks that the reason a test node has no figures is a note of the run, once per node,
// besides each case's facts.
func TestRunNodeAbsentNoteOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP}
	st := &fakeStore{}
	rep, err := Run(context.Background(), cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: &fakeExec{}, Store: st, Resources: absentNodes{}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range rep.Notes {
		if strings.HasPrefix(n, podset.NodeNotCollected) {
			got = append(got, n)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], "node1 not collected") || !strings.Contains(got[1], "node2 not collected") {
		t.Errorf("run notes %q: want one per node", got)
	}
	if f := st.cases[1].Facts["resources"]; !strings.Contains(f, podset.NodeNotCollected) {
		t.Errorf("case %s facts %q: want the reason there too", st.cases[1].CaseID, f)
	}
}

// TestRunSharedHostCountedOnce checks the local cluster's case: two test nodes with one machine ID and boot ID. The
// run's notes and every case measuring both say so, and the node totals name both nodes but add one figure.
func TestRunSharedHostCountedOnce(t *testing.T) {
	t.Parallel()
	oneHost := func(n *corev1.Node) {
		n.Status.NodeInfo.MachineID, n.Status.NodeInfo.BootID = "4c1f0e9d2b7a4e6f8a3b", "b0071d00-0000-4000"
	}
	cfg := testConfig(t)
	cfg.CNI.Placement = scenario.CNIPlacement{ClientNode: "node1", ServerNode: "node2"}
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP}
	st := &fakeStore{}
	rep, err := Run(context.Background(), cfg, deps{Kube: fakeCluster(t, cni.Node("node1", oneHost), cni.Node("node2", oneHost), cni.Node("node3")),
		Exec: &fakeExec{}, Store: st, Resources: &nodeRecorder{}})
	if err != nil {
		t.Fatal(err)
	}
	const warning = "node figures of node1 and node2 are the same machine's (machineID 4c1f0e9d…, bootID b0071d00…): whole-node totals count it once"
	if !slices.Contains(rep.Notes, warning) {
		t.Errorf("run notes %q: want %q", rep.Notes, warning)
	}
	for _, c := range st.cases {
		both := c.CaseID != "same-node/tcp"
		if got := strings.Contains(c.Facts["resources"], warning); got != both {
			t.Errorf("case %s resources fact %q: has the shared-host warning %v, want %v", c.CaseID, c.Facts["resources"], got, both)
		}
	}
	var idle *results.CNINodeTotal
	for i, nt := range rep.NodeTotals {
		if len(nt.Nodes) == 0 {
			t.Errorf("node total %+v names no node", nt)
		}
		if nt.Window == results.WindowIdle {
			idle = &rep.NodeTotals[i]
		}
	}
	// nodeRecorder gives every node 100 m: the shared host counts once.
	if idle == nil || idle.Path != "all" || idle.Avg != 100 || !slices.Equal(idle.Nodes, []string{"node1", "node2"}) || !slices.Equal(idle.Counted, []string{"node1"}) {
		t.Errorf("idle node total %+v: want 100 over node1 and node2, node1 counted", idle)
	}
	if tab := rep.Table(); !strings.Contains(tab, "node totals") || !strings.Contains(tab, "nodes node1, node2 share one host") {
		t.Errorf("the table has no node totals with the host note:\n%s", tab)
	}
}

// A test pod whose cgroup samples cannot be read is a note in the case's resources fact, never a failed case; the
// other pods keep their cgroup-1s figures and the path total (which would be a part only) is left out.
func TestRunCgroupSourceFailureIsANote(t *testing.T) {
	t.Parallel()
	ex := &fakeExec{cgroupsFail: func(pod string) error {
		if pod == string(cni.RoleServerLocal) {
			return errors.New("no sample files in /meshbench/cgroups")
		}
		return nil
	}}
	st := &fakeStore{}
	cfg := testConfig(t)
	cfg.CNI.Paths = []scenario.CNIPath{scenario.CNIPathSameNode}
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP}
	rep, err := Run(context.Background(), cfg, deps{Kube: fakeCluster(t, cni.Node("node1"), cni.Node("node2")), Exec: ex, Store: st, Resources: fakeResources{}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Status != cni.RowOK {
		t.Fatalf("rows %+v", rep.Rows)
	}
	var tcp results.CaseResult
	for _, c := range st.cases {
		if c.CaseID == "same-node/tcp" {
			tcp = c
		}
	}
	if !strings.Contains(tcp.Facts["resources"], "cgroup-1s cni-test resource use incomplete (server-local: cgroups dump: meshbench-agent cgroups: no sample files") {
		t.Fatalf("resources fact %q", tcp.Facts["resources"])
	}
	pods := map[string]bool{}
	for _, s := range st.samples {
		if s.CaseID == "same-node/tcp" && s.Labels[results.CNILabelSource] == results.CNISourceCgroup {
			pods[s.Labels[results.CNILabelPod]] = true
		}
	}
	if want := map[string]bool{"client": true}; !maps.Equal(pods, want) {
		t.Fatalf("cgroup-1s samples of pods %v, want %v (no total, no server-local)", pods, want)
	}
}
