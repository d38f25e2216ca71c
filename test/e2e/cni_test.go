//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// cniDuration is each sample's length in the full-table test (study B used 10s; MESHBENCH_E2E_CNI_DURATION overrides).
// 3 s (after a 1 s omit) is enough for what the test asserts, plausible figures and intervals per cell; the table's
// 48 samples are then 96 s shorter in every CI run than at 5 s.
func cniDuration() string {
	if d := os.Getenv("MESHBENCH_E2E_CNI_DURATION"); d != "" {
		return d
	}
	return "3s"
}

var (
	cniCLIOnce sync.Once
	cniCLIPath string
	cniCLIErr  error
)

// cniCLI builds the meshbench binary once per test process.
func cniCLI(t *testing.T) string {
	t.Helper()
	cniCLIOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meshbench-e2e-cni-")
		if err != nil {
			cniCLIErr = err
			return
		}
		cniCLIPath = filepath.Join(dir, "meshbench")
		// Stamped with the harness' version (cluster.env), so the images it derives are the ones the harness pushed.
		args := []string{"build", "-o", cniCLIPath}
		if cluster != nil && cluster.Env["MESHBENCH_VERSION"] != "" {
			args = append(args, "-ldflags", "-X github.com/meshbench/meshbench/internal/version.Version="+cluster.Env["MESHBENCH_VERSION"])
		}
		out, err := exec.Command("go", append(args, "../../cmd/meshbench")...).CombinedOutput()
		if err != nil {
			cniCLIErr = fmt.Errorf("go build ./cmd/meshbench: %v\n%s", err, out)
		}
	})
	if cniCLIErr != nil {
		t.Fatal(cniCLIErr)
	}
	return cniCLIPath
}

func cniScenario(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cni.yaml")
	doc := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: e2e-cni\nspec:\n  profile: localcluster\n  cni:\n" + body
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func cniCommand(ctx context.Context, c *Cluster, cli string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	return cmd
}

// TestCNIFullTable runs `meshbench cni` on every path and test of study B plus the host baseline and checks every
// cell, the placement, the Service path, and the cleanup.
func TestCNIFullTable(t *testing.T) {
	c := RequireCluster(t)
	if len(c.Nodes) < 2 {
		t.Skipf("the full table needs two nodes, the cluster has %v", c.Nodes)
	}
	cli := cniCLI(t)
	out := t.TempDir()
	sc := cniScenario(t, fmt.Sprintf(`    tests: [tcp, udp, rr, crr]
    paths: [same-node, cross-node, service, host]
    duration: %s
    samples: 3
    omit: 1s
    udpBitrate: "500M"
    placement: {clientNode: %s, serverNode: %s}
`, cniDuration(), c.Nodes[0], c.Nodes[1]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := cniCommand(ctx, c, cli, "cni", "-f", sc, "--output-dir", out, "-o", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stderr:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("meshbench cni: %v\nstdout:\n%s", err, stdout.String())
	}
	var rep cni.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, stdout.String())
	}
	t.Logf("table:\n%s", rep.Table())

	// Every cell is a measurement: 4 paths x 4 tests, 3 samples each, positive values, the right units.
	if len(rep.Rows) != 16 {
		t.Fatalf("%d rows, want 16", len(rep.Rows))
	}
	for _, row := range rep.Rows {
		name := row.Path + "/" + row.Test
		if row.Status != cni.RowOK || row.N != 3 || !(row.Mean > 0) || row.CI == nil {
			t.Errorf("%s: status %s n=%d mean=%v ci=%v reason %q", name, row.Status, row.N, row.Mean, row.CI, row.Reason)
			continue
		}
		secondary := map[string]cni.Stat{}
		for _, s := range row.Secondary {
			secondary[s.Name] = s
		}
		switch scenario.CNITest(row.Test) {
		case scenario.CNITestTCP:
			if row.Unit != results.UnitGbps || row.Mean < 0.1 || row.Tool != string(nettool.ToolIperf3) {
				t.Errorf("%s: %v %s with %s", name, row.Mean, row.Unit, row.Tool)
			}
		case scenario.CNITestUDP:
			loss, ok := secondary["loss value"]
			if row.Unit != results.UnitMbps || !ok || loss.N != 3 || row.Mean > 500*1.01 {
				t.Errorf("%s: delivered %v %s (target 500), loss %+v", name, row.Mean, row.Unit, loss)
			}
		case scenario.CNITestRR, scenario.CNITestCRR:
			if row.Unit != results.UnitTPS || row.Tool == "" {
				t.Errorf("%s: %v %s with %q", name, row.Mean, row.Unit, row.Tool)
			}
			if p99, ok := secondary["latency p99"]; !ok || !(p99.Mean > 0) {
				t.Errorf("%s: no p99 latency %+v", name, p99)
			}
		}
	}

	// Placement as asked and verified: same-node pods share node A, the remote and host servers are on node B.
	want := map[cni.Role]string{cni.RoleClient: c.Nodes[0], cni.RoleServerLocal: c.Nodes[0], cni.RoleHostClient: c.Nodes[0],
		cni.RoleServerRemote: c.Nodes[1], cni.RoleHostServer: c.Nodes[1]}
	if rep.RRTool == nettool.ToolBuiltin {
		want[cni.RoleClientAgent] = c.Nodes[0]
	}
	seen := map[cni.Role]bool{}
	for _, p := range rep.Pods {
		seen[p.Role] = true
		if p.Node != want[p.Role] {
			t.Errorf("pod %s ran on %s, want %s", p.Role, p.Node, want[p.Role])
		}
		if host := p.Role == cni.RoleHostClient || p.Role == cni.RoleHostServer; host != p.HostNetwork {
			t.Errorf("pod %s hostNetwork=%v", p.Role, p.HostNetwork)
		}
	}
	for role := range want {
		if !seen[role] {
			t.Errorf("pod %s not reported", role)
		}
	}

	// The ClusterIP path went through the Service: check the raw iperf3 outputs independently of meshbench.
	run, err := results.Read(rep.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var backend string
	for _, p := range rep.Pods {
		if p.Role == cni.RoleServerRemote {
			backend = p.IP
		}
	}
	checked := 0
	for _, cs := range run.Cases {
		if cs.CaseID != "service/tcp" && cs.CaseID != "service/udp" {
			continue
		}
		if cs.Facts["target"] != rep.Facts.ServiceClusterIP || cs.Facts["backend"] != backend || rep.Facts.ServiceClusterIP == backend {
			t.Errorf("%s facts %v (ClusterIP %s, backend %s)", cs.CaseID, cs.Facts, rep.Facts.ServiceClusterIP, backend)
		}
		for n := 1; n <= 3; n++ {
			raw, err := os.ReadFile(filepath.Join(rep.RunDir, cs.Facts[results.FactKey(fmt.Sprintf("raw.%d", n))]))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Start struct {
					Connected []struct {
						RemoteHost string `json:"remote_host"`
					} `json:"connected"`
				} `json:"start"`
				Server struct {
					Start struct {
						Connected []struct {
							LocalHost string `json:"local_host"`
						} `json:"connected"`
					} `json:"start"`
				} `json:"server_output_json"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatalf("%s sample %d: %v", cs.CaseID, n, err)
			}
			if len(doc.Start.Connected) == 0 || doc.Start.Connected[0].RemoteHost != rep.Facts.ServiceClusterIP ||
				len(doc.Server.Start.Connected) == 0 || doc.Server.Start.Connected[0].LocalHost != backend {
				t.Errorf("%s sample %d: client dialled %+v, server saw %+v; want ClusterIP %s and backend %s",
					cs.CaseID, n, doc.Start.Connected, doc.Server.Start.Connected, rep.Facts.ServiceClusterIP, backend)
			}
			checked++
		}
	}
	if checked != 6 {
		t.Errorf("checked %d Service samples, want 6", checked)
	}
	if len(run.Samples) == 0 || run.Meta.Command != "cni" || run.Summary == nil {
		t.Errorf("run dir: %d samples, command %q, summary %v", len(run.Samples), run.Meta.Command, run.Summary != nil)
	}
	// Every case has cgroup-1s CPU of its path's test pods together, whatever its length: the wrapper read the pods'
	// own cgroups every second (v1 on the local cluster's nodes).
	cgroupCPU := map[string]float64{}
	for _, s := range run.Samples {
		if s.Labels[results.CNILabelSource] == results.CNISourceCgroup && s.Metric == results.MetricCPU && s.Stat == "avg" &&
			s.Labels[results.CNILabelPod] == "" && s.Window.Kind == results.WindowTest {
			cgroupCPU[s.CaseID] = s.Value
		}
	}
	for _, row := range rep.Rows {
		id := row.Path + "/" + row.Test
		if v, ok := cgroupCPU[id]; !ok || !(v > 0) {
			t.Errorf("%s: cgroup-1s CPU %v (recorded %v), want > 0", id, v, ok)
		}
	}
	cniNamespaceGone(t, c, rep.Namespace)
}

func cniNamespaceGone(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ns == "" {
		t.Fatal("no namespace name")
	}
	_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s still exists after meshbench exited (err %v)", ns, err)
	}
}

var (
	cniNamespaceRE = regexp.MustCompile(`creating the run namespace"? namespace=(\S+)`)
	cniRunningRE   = regexp.MustCompile(`msg=running case=(\S+)`)
)

// TestCNICtrlC interrupts `meshbench cni` with SIGINT while a test runs: it must exit 130 (128+SIGINT: interrupted,
// not 1, a failed run), say it was interrupted, mark run.json, and leave no namespace behind.
func TestCNICtrlC(t *testing.T) {
	c := RequireCluster(t)
	cli := cniCLI(t)
	sc := cniScenario(t, `    tests: [tcp]
    paths: [same-node]
    duration: 60s
    samples: 1
`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	outDir := t.TempDir()
	cmd := cniCommand(ctx, c, cli, "cni", "-f", sc, "--output-dir", outDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		ns      string
		log     strings.Builder
		running = make(chan string, 1)
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := cniNamespaceRE.FindStringSubmatch(line); m != nil {
				ns = m[1]
			}
			if m := cniRunningRE.FindStringSubmatch(line); m != nil {
				select {
				case running <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	exited := make(chan error, 1)
	go func() {
		<-scanned // Wait closes the pipe: read everything first
		exited <- cmd.Wait()
	}()
	select {
	case cs := <-running:
		time.Sleep(5 * time.Second) // inside the 60 s iperf3 test
		t.Logf("sending SIGINT during %s", cs)
	case err := <-exited:
		t.Fatalf("meshbench cni exited (%v) before a test started:\n%s", err, log.String())
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("no test started within 5 minutes:\n%s", log.String())
	}
	interrupted := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	t.Logf("exited %v after SIGINT; stderr:\n%s", time.Since(interrupted).Round(time.Second), log.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want code 130", err)
	}
	if run, err := results.Read(onlyRunDir(t, outDir)); err != nil {
		t.Error(err)
	} else if in := run.Meta.Interrupted; in == nil || in.Signal != "SIGINT" || in.Phase != "load" || len(in.NotRun) == 0 {
		t.Errorf("run.json interrupted: %+v, want SIGINT in the load step of the running case", in)
	}
	if !strings.Contains(log.String(), "interrupted") {
		t.Error("stderr does not say the run was interrupted")
	}
	if time.Since(interrupted) > 2*time.Minute {
		t.Errorf("took %s to stop", time.Since(interrupted))
	}
	cniNamespaceGone(t, c, ns)
}
