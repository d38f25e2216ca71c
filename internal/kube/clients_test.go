package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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

// TestLoadConfigChecksReferencedFiles: the files the chosen context's cluster and user name (client-go reads the
// token file while building the config, the certificates while building the transport) follow the same rule; a
// relative path is the kubeconfig's directory's; another context's files are not read, so not checked.
func TestLoadConfigChecksReferencedFiles(t *testing.T) {
	t.Parallel()
	fields := map[string]string{
		"tokenFile":             "users: [{name: u, user: {tokenFile: %q}}]",
		"client-certificate":    "users: [{name: u, user: {client-certificate: %q, client-key: ok.pem}}]",
		"client-key":            "users: [{name: u, user: {client-certificate: ok.pem, client-key: %q}}]",
		"certificate-authority": "users: [{name: u, user: {token: t}}]\ncaPath: %q",
	}
	for field, user := range fields {
		for name, path := range hostileKubeconfigs(t) {
			t.Run(field+"/"+name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "ok.pem"), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
				// A relative path: the FIFO linked into the kubeconfig's directory.
				rel := "ref"
				if err := os.Symlink(path, filepath.Join(dir, rel)); err != nil {
					t.Fatal(err)
				}
				cluster := `clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]`
				users := strings.Replace(user, "%q", strconv.Quote(rel), 1)
				if strings.Contains(users, "caPath") {
					cluster = `clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", certificate-authority: ` +
						strconv.Quote(rel) + `}}]`
					users = strings.SplitN(users, "\n", 2)[0]
				}
				cfg := "apiVersion: v1\nkind: Config\n" + cluster + "\n" + users + "\n" +
					"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
				kc := filepath.Join(dir, "config")
				if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
				_, err := LoadConfig(kc, "")
				var fe *inputfile.Error
				if !errors.As(err, &fe) || fe.Kind != inputfile.KubeconfigFile ||
					!strings.Contains(err.Error(), filepath.Join(dir, rel)) || !strings.Contains(err.Error(), "1 MiB") {
					t.Errorf("%v; want an *inputfile.Error naming %s and the 1 MiB cap", err, filepath.Join(dir, rel))
				}
			})
		}
	}

	// Another context's hostile file is not read by client-go, so it is not refused.
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := "apiVersion: v1\nkind: Config\n" +
		`clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]` + "\n" +
		"users: [{name: u, user: {token: t}}, {name: v, user: {tokenFile: " + strconv.Quote(fifo) + "}}]\n" +
		"contexts: [{name: one, context: {cluster: c, user: u}}, {name: two, context: {cluster: c, user: v}}]\n" +
		"current-context: two\n"
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(kc, "one"); err != nil {
		t.Errorf("--context one, whose user has no file: %v", err)
	}
	if _, err := LoadConfig(kc, ""); err == nil || !strings.Contains(err.Error(), fifo) {
		t.Errorf("current context two, whose tokenFile is a FIFO: %v; want it refused", err)
	}
}

// countingRules are the default loading rules, counting how often client-go loads (parses) the kubeconfig files.
type countingRules struct {
	*clientcmd.ClientConfigLoadingRules
	loads int
}

func (r *countingRules) Load() (*clientcmdapi.Config, error) {
	r.loads++
	return r.ClientConfigLoadingRules.Load()
}

// TestLoadConfigParsesOnce: the kubeconfig is parsed once, whether it loads or not (a file that does not parse or
// does not exist is reported with the flags' hint, from that one load).
func TestLoadConfigParsesOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, broken := filepath.Join(dir, "good"), filepath.Join(dir, "broken")
	if err := os.WriteFile(good, []byte(kubeconfigFixture), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte("apiVersion: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, wantErr string }{
		{good, ""},
		{broken, "did not find expected node content"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
	} {
		rules := &countingRules{ClientConfigLoadingRules: clientcmd.NewDefaultClientConfigLoadingRules()}
		rules.ExplicitPath = tc.path
		cfg, err := loadConfig(rules, "")
		switch {
		case tc.wantErr == "" && (err != nil || cfg.Host != "https://127.0.0.1:1"):
			t.Errorf("%s: %v", tc.path, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) ||
			!strings.Contains(err.Error(), "use --kubeconfig/--context or $KUBECONFIG")):
			t.Errorf("%s: %v; want %q with the flags' hint", tc.path, err, tc.wantErr)
		}
		if rules.loads != 1 {
			t.Errorf("%s: parsed %d times, want once", tc.path, rules.loads)
		}
	}
}
