package kwokfleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KwokArgs are kwok's flags for this tool: out of cluster against the given kubeconfig, managing only the nodes
// labelled FakeNodeLabel=true (pkg/kwok/cmd/root.go at v0.8.0: --manage-all-nodes, --manage-nodes-with-label-selector,
// --manage-single-node, --node-lease-duration-seconds, --config; docs/user/kwok-out-cluster.md). --cidr is only the
// fallback for nodes without a podCIDR (ours all have one); --server-address "" keeps kwok from serving its own port.
// It is pure.
func KwokArgs(kubeconfig, stagesFile string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + stagesFile,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=",
		"--manage-nodes-with-label-selector=" + FakeNodeLabel + "=true",
		"--manage-single-node=",
		"--cidr=10.244.255.0/24",
		"--node-ip=10.244.255.1",
		"--node-lease-duration-seconds=40",
		"--server-address=",
	}
}

// Kwok is the kwok process the tool started.
type Kwok struct {
	cmd     *exec.Cmd
	done    chan error
	pidFile string
}

// StartKwok writes kwok's default stages (kwok-stages) into dir, then starts kwok with its log in dir/kwok.log and
// its pid in dir/kwok.pid (so a later run can end a kwok that outlived a killed harness). kwok gets SIGKILL when the
// harness dies (Pdeathsig) and runs in its own process group.
func StartKwok(ctx context.Context, kwokDir, dir, kubeconfig string) (*Kwok, error) {
	stages, err := exec.CommandContext(ctx, filepath.Join(kwokDir, "kwok-stages")).Output()
	if err != nil {
		return nil, fmt.Errorf("kwok-stages: %w", err)
	}
	stagesFile := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(stagesFile, stages, 0o644); err != nil {
		return nil, fmt.Errorf("write kwok stages: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		return nil, fmt.Errorf("kwok log: %w", err)
	}
	cmd := exec.Command(filepath.Join(kwokDir, "kwok"), KwokArgs(kubeconfig, stagesFile)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	k := &Kwok{cmd: cmd, done: make(chan error, 1), pidFile: filepath.Join(dir, "kwok.pid")}
	_ = os.WriteFile(k.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	go func() { k.done <- cmd.Wait(); _ = logf.Close() }()
	return k, nil
}

// Exited reports kwok's exit, if it has exited.
func (k *Kwok) Exited() (error, bool) {
	select {
	case err := <-k.done:
		k.done <- err
		if err == nil {
			err = errors.New("kwok exited")
		}
		return err, true
	default:
		return nil, false
	}
}

// Stop ends kwok: SIGTERM to its process group, SIGKILL after 10 s.
func (k *Kwok) Stop() error {
	if k == nil || k.cmd.Process == nil {
		return nil
	}
	defer os.Remove(k.pidFile)
	if _, exited := k.Exited(); exited {
		return nil
	}
	pgid := k.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-k.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-k.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("kwok (pid %d) did not exit after SIGKILL", pgid)
	}
}

// StopStaleKwok ends a kwok a killed earlier run left: the pid in dir/kwok.pid, only if that process is still our
// kwok binary managing our label (its command line says so), never by name.
func StopStaleKwok(dir, kwokDir string, log *slog.Logger) {
	pidFile := filepath.Join(dir, "kwok.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	defer os.Remove(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	if len(args) == 0 || string(args[0]) != filepath.Join(kwokDir, "kwok") ||
		!bytes.Contains(cmdline, []byte("--manage-nodes-with-label-selector="+FakeNodeLabel+"=true")) {
		return
	}
	log.Warn("stopping the kwok a killed earlier run left", "pid", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for range 50 {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
