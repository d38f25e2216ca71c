package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// kubeconfigFixture is a kubeconfig client-go accepts.
const kubeconfigFixture = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

// hostileKubeconfigs are the files LoadConfig must refuse without reading: a FIFO (client-go's read would block for
// ever: the test would hang), a directory, /dev/zero and a sparse file above the cap.
func hostileKubeconfigs(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, inputfile.MaxKubeconfig+1); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"fifo": fifo, "directory": dir, "over the cap": big, "/dev/zero": "/dev/zero"}
}

func wantKubeconfigRefused(t *testing.T, err error, path string) {
	t.Helper()
	var fe *inputfile.Error
	if !errors.As(err, &fe) || fe.Kind != inputfile.Kubeconfig || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "4194304 bytes (4 MiB)") {
		t.Errorf("%s: %v; want an *inputfile.Error naming the file and the 4 MiB cap", path, err)
	}
}

func TestLoadConfigRefusesHostileKubeconfig(t *testing.T) {
	t.Parallel()
	for name, path := range hostileKubeconfigs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadConfig(path, "")
			wantKubeconfigRefused(t, err, path)
		})
	}
	good := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(good, []byte(kubeconfigFixture), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := LoadConfig(good, ""); err != nil || cfg.Host != "https://127.0.0.1:1" {
		t.Errorf("a good kubeconfig: %v", err)
	}
}

// TestLoadConfigChecksEveryKUBECONFIGFile: each file of $KUBECONFIG is checked (client-go merges them all); missing
// ones are skipped as client-go skips them. Not parallel: it sets KUBECONFIG.
func TestLoadConfigChecksEveryKUBECONFIGFile(t *testing.T) {
	good := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(good, []byte(kubeconfigFixture), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for name, path := range hostileKubeconfigs(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", strings.Join([]string{good, missing, path}, string(filepath.ListSeparator)))
			_, err := LoadConfig("", "")
			wantKubeconfigRefused(t, err, path)
		})
	}
	t.Setenv("KUBECONFIG", strings.Join([]string{missing, good}, string(filepath.ListSeparator)))
	if _, err := LoadConfig("", ""); err != nil {
		t.Errorf("good and missing files: %v", err)
	}
}
