package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// The lines client-go logged on every Ctrl-C during an exec (k8s.io/client-go v0.37.2 tools/remotecommand/v2.go
// copyStderr: runtime.HandleErrorWithLogger(logger, err, "Copying stderr failed"); websocket.go heartbeat:
// h.logger.Error(err, "Websocket Ping failed")), logged the same way, through klog's global logger.
func logLikeClientGo() {
	err := errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection")
	utilruntime.HandleErrorWithLogger(klog.Background(), err, "Copying stderr failed")
	klog.Background().Error(err, "Websocket Ping failed")
	klog.ErrorS(err, "klog.ErrorS line")
	klog.Warning("klog.Warning line")
	klog.Flush()
}

const childEnv = "MESHBENCH_TEST_KLOG_CHILD"

// TestMain lets the test binary act as the child process the klog tests inspect: klog writes to the real stderr, so
// only a separate process shows what a user would see.
func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "quiet":
		quietKlog()
		logLikeClientGo()
		os.Exit(0)
	case "quiet-debug": // what -v would give if the CLI made its debug logger the default
		quietKlog()
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
		logLikeClientGo()
		os.Exit(0)
	case "raw":
		logLikeClientGo()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child(t *testing.T, mode string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("child %s: %v; stderr:\n%s", mode, err, stderr.String())
	}
	if stdout.Len() > 0 {
		t.Errorf("child %s wrote to stdout: %q", mode, stdout.String())
	}
	return stderr.String()
}

func TestKlogDoesNotReachStderr(t *testing.T) {
	// Without quietKlog the lines do reach stderr: the test can tell the difference.
	if raw := child(t, "raw"); !strings.Contains(raw, "Copying stderr failed") || !strings.Contains(raw, "Websocket Ping failed") {
		t.Fatalf("control: klog's default output should show client-go's lines on stderr, got:\n%s", raw)
	}
	if got := child(t, "quiet"); got != "" {
		t.Errorf("with quietKlog at default verbosity, klog still wrote to stderr:\n%s", got)
	}
}

func TestKlogAtDebugLevel(t *testing.T) {
	got := child(t, "quiet-debug")
	for _, want := range []string{"level=DEBUG msg=\"Copying stderr failed\"", "Websocket Ping failed", "lib=klog", "klog_level=ERROR"} {
		if !strings.Contains(got, want) {
			t.Errorf("with a debug default logger, want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, " level=ERROR") {
		t.Errorf("klog's errors must arrive at debug level, got:\n%s", got)
	}
}
