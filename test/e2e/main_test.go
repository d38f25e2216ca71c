//go:build e2e

// Package e2e holds end-to-end tests against the real local two-node cluster (make cluster-up; see
// hack/localcluster/README.md). Run them with `make e2e` (go test -tags e2e ./test/e2e/...).
//
// The cluster is found through MESHBENCH_KUBECONFIG, else through $MESHBENCH_CLUSTER_DIR/cluster.env (default
// /var/lib/meshbench/localcluster). Without a reachable cluster every test skips with a clear message, except
// when CI=true: then a missing cluster is a failure.
//
// Helpers for other e2e files (all in this package):
//
//	c := RequireCluster(t)                       // *Cluster: Client, Config, PrometheusURL, Nodes, RunID, Env
//	ns := c.CreateNamespace(t, "mytest")         // labelled namespace, deleted when the test ends
//	pods, err := c.WaitPodsReady(ctx, ns, "app=web", 2)
//	stdout, stderr, err := c.Exec(ctx, ns, pod, container, "sh", "-c", "...")
//	samples, err := c.PromQuery(ctx, `up`)       // instant query
//	samples, err := c.WaitPromSeries(ctx, query, 1)
//	labels := c.Labels(map[string]string{"app": "web"}) // managed-by + run labels merged in
package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshbench/meshbench/internal/version"
	"github.com/meshbench/meshbench/scenario"
)

const (
	// DefaultClusterDir is where hack/localcluster keeps its state (MESHBENCH_CLUSTER_DIR overrides it).
	DefaultClusterDir = "/var/lib/meshbench/localcluster"
	// DefaultPrometheusURL is the harness's Prometheus when cluster.env does not name one.
	DefaultPrometheusURL = "http://127.0.0.1:19090"

	// LabelManagedBy and LabelRun are put on everything the tests create (the project's convention).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelRun       = "meshbench.dev/run"
	ManagedByValue = "meshbench"
)

// Cluster is the connection to the local cluster shared by all tests of one `go test` process.
type Cluster struct {
	Kubeconfig    string
	Config        *rest.Config
	Client        kubernetes.Interface
	PrometheusURL string
	// Nodes are the node names from cluster.env (node1, node2), or from the API when only a kubeconfig was given.
	Nodes []string
	// RunID is "e2e-<random>", the value of the meshbench.dev/run label on everything this process creates.
	RunID string
	// Env is cluster.env as key/value pairs (empty when MESHBENCH_KUBECONFIG was used without it).
	Env map[string]string
}

var (
	cluster    *Cluster
	clusterErr error
)

func TestMain(m *testing.M) {
	cluster, clusterErr = connect()
	if cluster != nil {
		// The harness pushed meshbench's images tagged with the version of the CLI it built (cluster.env): the
		// images this process derives from spec.images.registry must carry that tag, as they would for a
		// released CLI and its pushed images.
		if v := cluster.Env["MESHBENCH_VERSION"]; v != "" {
			version.Version = v
		}
	}
	code := m.Run()
	if cluster != nil {
		cluster.deleteRunNamespaces()
	}
	// The CLI cniCLI built (140 MB) lives in a temp dir of this process: without this every e2e run left one in /tmp.
	if cniCLIPath != "" {
		_ = os.RemoveAll(filepath.Dir(cniCLIPath))
	}
	os.Exit(code)
}

// RequireCluster returns the shared cluster, or skips the test (fails it when CI=true) if there is none.
func RequireCluster(t testing.TB) *Cluster {
	t.Helper()
	if clusterErr != nil {
		msg := fmt.Sprintf("local cluster not available (start it with `make cluster-up`): %v", clusterErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " [CI=true: a missing cluster is a failure]")
		}
		t.Skip(msg)
	}
	return cluster
}

// connect finds the kubeconfig and Prometheus, builds the clients and checks the apiserver answers.
func connect() (*Cluster, error) {
	c := &Cluster{Env: map[string]string{}, RunID: "e2e-" + randomSuffix(6)}
	dir := os.Getenv("MESHBENCH_CLUSTER_DIR")
	if dir == "" {
		dir = DefaultClusterDir
	}
	envFile := filepath.Join(dir, "cluster.env")
	if env, err := readEnvFile(envFile); err == nil {
		c.Env = env
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", envFile, err)
	}
	c.Kubeconfig = firstNonEmpty(os.Getenv("MESHBENCH_KUBECONFIG"), c.Env["MESHBENCH_KUBECONFIG"], c.Env["KUBECONFIG"])
	if c.Kubeconfig == "" {
		return nil, fmt.Errorf("no MESHBENCH_KUBECONFIG and no %s", envFile)
	}
	c.PrometheusURL = firstNonEmpty(os.Getenv("MESHBENCH_PROMETHEUS_URL"), c.Env["MESHBENCH_PROMETHEUS_URL"], DefaultPrometheusURL)

	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", c.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	c.Config = cfg
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("build clientset: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver of %s not ready: %w", c.Kubeconfig, err)
	}
	if strings.TrimSpace(string(body)) != "ok" {
		return nil, fmt.Errorf("apiserver of %s not ready: %q", c.Kubeconfig, body)
	}
	if nodes := c.Env["MESHBENCH_NODES"]; nodes != "" {
		c.Nodes = strings.Split(nodes, ",")
	} else {
		list, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		for _, n := range list.Items {
			c.Nodes = append(c.Nodes, n.Name)
		}
	}
	return c, nil
}

// Image returns the ref of a harness image from cluster.env (MESHBENCH_IMAGE_<NAME>: AGENT, MESHBENCH, IPERF3,
// TOOLBOX, POSTGRES, ...): every image is pushed to the harness registry and pulled by the nodes, so its ref names
// the registry. Missing: the test is skipped (fails with CI=true), since the cluster was built without it.
func (c *Cluster) Image(t testing.TB, name string) string {
	t.Helper()
	ref := c.Env["MESHBENCH_IMAGE_"+name]
	if ref == "" {
		msg := fmt.Sprintf("cluster.env has no MESHBENCH_IMAGE_%s (re-run `make cluster-up`)", name)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return ref
}

// readEnvFile parses KEY=VALUE lines (comments, blank and `export ...` lines ignored; optional quotes removed).
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			continue
		}
		env[k] = strings.Trim(v, `"'`)
	}
	return env, sc.Err()
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func randomSuffix(n int) string {
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)[:n]
}

// setDefaults is scenario.SetDefaults with the images the harness pushed: spec.images.tag is the version of the
// harness' CLI (cluster.env MESHBENCH_VERSION), as `meshbench` fills it from its own version.
func setDefaults(s *scenario.Scenario) {
	if cluster != nil && s.Spec.Images.Tag == "" {
		s.Spec.Images.Tag = cluster.Env["MESHBENCH_VERSION"]
	}
	scenario.SetDefaults(s)
}
