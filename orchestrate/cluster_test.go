package orchestrate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
)

func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + server + "\"}}]\n" +
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConnect(t *testing.T) {
	t.Parallel()
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	t.Cleanup(answering.Close)
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) }) // runs first: the hanging handlers return, then Close

	tests := []struct {
		name, kubeconfig, want, version string
	}{
		{"answers", kubeconfigFor(t, answering.URL), "", "v1.37.2"},
		{"no kubeconfig", filepath.Join(t.TempDir(), "nonexistent"), "nothing was changed", ""},
		{"refused", kubeconfigFor(t, "http://127.0.0.1:1"), "does not answer", ""},
		{"hangs", kubeconfigFor(t, hanging.URL), "does not answer", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, v, err := Connect(context.Background(), tc.kubeconfig, "", 500*time.Millisecond)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Connect took %s with a 500ms timeout", took)
			}
			var ie *InputError
			switch {
			case tc.want == "" && (err != nil || v != tc.version):
				t.Errorf("version %q, err %v", v, err)
			case tc.want != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err %v, want an InputError with %q", err, tc.want)
			}
		})
	}
}

func TestServerVersionFake(t *testing.T) {
	t.Parallel()
	v, err := serverVersion(context.Background(), fake.NewClientset(), time.Second)
	if err != nil || v == "" {
		t.Errorf("version %q, err %v", v, err)
	}
}

// TestReach: the clients a caller built are checked and handed back as they are (run and cni build them once); the
// error of building them is an *InputError.
func TestReach(t *testing.T) {
	t.Parallel()
	clients := &kube.Clients{Kube: fake.NewClientset()}
	got, v, err := Reach(context.Background(), clients, nil, time.Second)
	if got != clients || v == "" || err != nil {
		t.Errorf("Reach = %p, %q, %v; want the same clients %p and a version", got, v, err, clients)
	}
	var ie *InputError
	if _, _, err := Reach(context.Background(), nil, errors.New("load kubeconfig: bad"), time.Second); !errors.As(err, &ie) ||
		err.Error() != "load kubeconfig: bad (nothing was changed)" {
		t.Errorf("a kubeconfig that did not load: %v; want an InputError saying nothing was changed", err)
	}
}
