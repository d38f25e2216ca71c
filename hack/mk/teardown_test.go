package mk

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	return root
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
}

// run runs cmd in dir with MESHBENCH_CLUSTER_DIR=stateDir and returns stdout, stderr and the exit code.
func run(t *testing.T, dir, stateDir string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MESHBENCH_CLUSTER_DIR="+stateDir, "MESHBENCH_ISTIO_DIR=", "MAKEFLAGS=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out.String(), errOut.String(), code
}

// fence puts stand-ins for every host-changing command of the Istio teardown (host-cleanup.sh: netfilter, netns,
// mounts) first on PATH: they only log their name and fail. So a regression that reaches the host cleanup from a
// unit test changes nothing on the machine (a local cluster with Istio may be running) and is reported. Returns the log.
func fence(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "fence.log")
	for _, name := range []string{"ip", "nft", "iptables", "iptables-nft", "iptables-legacy", "iptables-save", "ip6tables",
		"ip6tables-nft", "ip6tables-legacy", "ip6tables-save", "ipset", "nsenter", "mount", "umount", "conntrack", "curl"} {
		script := "#!/bin/sh\necho \"" + name + " $*\" >>" + logFile + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return logFile
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestIstioDownNeverBuilt is the newcomer's path: `make demo` never builds the local Istio, then `make cluster-down`
// runs istio-down first. On an empty state dir it must succeed at once, say why it did nothing, create nothing, and
// not try to read or download the istio.io/istio module (it used to fail with "cannot read istio.io/istio ...
// VERSION (go mod download in hack/localistio?)" and leave the cluster running).
func TestIstioDownNeverBuilt(t *testing.T) {
	need(t, "bash", "go")
	root, state := repoRoot(t), t.TempDir()
	// No proxy: an attempt to fetch the module fails instead of passing quietly.
	t.Setenv("GOPROXY", "off")
	fenceLog := fence(t)
	_, stderr, code := run(t, root, state, "bash", "hack/localistio/istio-down.sh")
	if code != 0 {
		t.Fatalf("istio-down on a state dir where Istio was never built: exit %d, want 0; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "never built or installed") || !strings.Contains(stderr, "nothing to remove") {
		t.Errorf("istio-down must say it had nothing to remove; stderr:\n%s", stderr)
	}
	if strings.Contains(stderr, "ERROR") || strings.Contains(stderr, "VERSION") {
		t.Errorf("istio-down reported an error on the no-op path; stderr:\n%s", stderr)
	}
	if got := entries(t, state); len(got) > 0 {
		t.Errorf("istio-down created %v in a state dir it had nothing to remove from", got)
	}
	if b, _ := os.ReadFile(fenceLog); len(b) > 0 {
		t.Errorf("istio-down ran host commands although Istio was never built (stopped by the test's fence):\n%s", b)
	}
}

// TestClusterDownAfterDemoWithoutIstio runs `make cluster-down` as a newcomer would after `make demo`, with the real
// istio-down on an empty state dir and a stand-in for the cluster's own down.sh (the real one tears down host-wide
// state and must never run from a unit test): istio-down is a no-op and the cluster step runs.
func TestClusterDownAfterDemoWithoutIstio(t *testing.T) {
	need(t, "bash", "make", "go")
	root, state := repoRoot(t), t.TempDir()
	t.Setenv("GOPROXY", "off")
	fenceLog := fence(t)
	stdout, stderr, code := run(t, root, state, "make", "-s", "cluster-down", "CLUSTER_DOWN=echo CLUSTER-DOWN-RAN")
	if code != 0 {
		t.Fatalf("make cluster-down: exit %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "CLUSTER-DOWN-RAN") {
		t.Errorf("make cluster-down did not reach the cluster's down step; stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "nothing to remove") {
		t.Errorf("istio-down's no-op line is missing; stderr:\n%s", stderr)
	}
	if b, _ := os.ReadFile(fenceLog); len(b) > 0 {
		t.Errorf("cluster-down's istio step ran host commands although Istio was never built:\n%s", b)
	}
}

// TestClusterDownNeverStopsAtIstioDown: whatever state makes istio-down fail, cluster-down still stops the cluster,
// and its exit status reports the failed step.
func TestClusterDownNeverStopsAtIstioDown(t *testing.T) {
	need(t, "bash", "make")
	root, state := repoRoot(t), t.TempDir()
	for _, tc := range []struct {
		name, istio, cluster string
		wantCode             bool // a non-zero exit
		wantRan              bool
	}{
		{"istio-down fails", "false", "echo CLUSTER-DOWN-RAN", true, true},
		{"both succeed", "true", "echo CLUSTER-DOWN-RAN", false, true},
		{"cluster down fails", "true", "false", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, root, state, "make", "-s", "cluster-down", "ISTIO_DOWN="+tc.istio, "CLUSTER_DOWN="+tc.cluster)
			if (code != 0) != tc.wantCode {
				t.Errorf("exit %d, want non-zero=%v; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if ran := strings.Contains(stdout, "CLUSTER-DOWN-RAN"); ran != tc.wantRan {
				t.Errorf("cluster down step ran=%v, want %v; stdout:\n%s\nstderr:\n%s", ran, tc.wantRan, stdout, stderr)
			}
			if tc.istio == "false" && !strings.Contains(stderr, "stopping the cluster anyway") {
				t.Errorf("the failed istio-down is not reported; stderr:\n%s", stderr)
			}
		})
	}
}
