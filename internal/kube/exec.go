package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// Execer runs commands in pods. The narrow interface lets collectors be tested without a cluster.
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader) (stdout, stderr []byte, err error)
}

// PodExecer implements Execer with the pods/exec subresource (WebSocket, falling back to SPDY like kubectl).
type PodExecer struct {
	Config *rest.Config
	Kube   kubernetes.Interface
}

// Exec runs cmd in the container and returns its output. A non-zero exit is an error that includes stderr.
func (e PodExecer) Exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader) ([]byte, []byte, error) {
	req := e.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: cmd, Stdin: stdin != nil, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", req.URL().String())
	if err != nil {
		return nil, nil, fmt.Errorf("exec in %s/%s: websocket executor: %w", namespace, pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return nil, nil, fmt.Errorf("exec in %s/%s: spdy executor: %w", namespace, pod, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return nil, nil, fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.Bytes(), stderr.Bytes(), fmt.Errorf("exec %q in %s/%s: %w (stderr: %s)",
			strings.Join(cmd, " "), namespace, pod, err, strings.TrimSpace(tail(stderr.String(), 500)))
	}
	return stdout.Bytes(), stderr.Bytes(), nil
}

// ExecPathFailed reports whether err, an Exec error, is the exec's way to the pod (API server to kubelet) failing
// rather than an answer: a refused dial or a broken stream, not a non-zero exit, a 4xx or an ended context
// (docs/reliability.md). A kubelet's own error stream message counts: it cannot be told from a broken stream.
func ExecPathFailed(err error) bool {
	if err == nil {
		return false
	}
	var exit utilexec.ExitError
	if errors.As(err, &exit) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code == 0 || code >= 500
	}
	return true
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
