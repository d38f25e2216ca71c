package scenario

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// TestCheckFilesHostile: the files spec.prometheus names are checked for what the run will do with them, not only
// that they exist: a token file that is a directory, a FIFO or empty, a CA file that is a directory, above the cap or
// not PEM, each a problem at its field with a hint; a real token file and a PEM CA pass.
func TestCheckFilesHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := httptest.NewTLSServer(nil) // only for a real certificate
	srv.Close()
	ca := write("ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	token := write("token", "s3cret\n")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, nil, 0o600); err != nil || os.Truncate(big, inputfile.MaxPrometheusCA+1) != nil {
		t.Fatalf("big file: %v", err)
	}
	tests := []struct {
		class      string
		token, ca  string
		path, want string
	}{
		{"token file is a directory", dir, "", "spec.prometheus.bearerTokenFile", "a directory, not a regular file; a Prometheus bearer token file is a regular file of at most 65536 bytes (64 KiB): name the token file itself"},
		{"token file is a FIFO", fifo, "", "spec.prometheus.bearerTokenFile", "a named pipe (FIFO), not a regular file"},
		{"token file is empty", write("empty", ""), "", "spec.prometheus.bearerTokenFile", "is empty"},
		{"token file missing", filepath.Join(dir, "nope"), "", "spec.prometheus.bearerTokenFile", "cannot read"},
		{"CA file is a directory", "", dir, "spec.prometheus.caFile", "a directory, not a regular file"},
		{"CA file is not PEM", "", token, "spec.prometheus.caFile", "holds no PEM certificate"},
		{"CA file above the cap", "", big, "spec.prometheus.caFile", "a Prometheus CA file is a regular file of at most 1048576 bytes (1 MiB)"},
		{"CA file is a FIFO", "", fifo, "spec.prometheus.caFile", "a named pipe (FIFO), not a regular file"},
		{"token and CA as they should be", token, ca, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.class, func(t *testing.T) {
			t.Parallel()
			s := &Scenario{}
			s.Spec.Prometheus = Prometheus{URL: "https://prom:9090", BearerTokenFile: tc.token, CAFile: tc.ca}
			ps := checkFiles(s)
			if tc.path == "" {
				if len(ps) > 0 {
					t.Fatalf("want no problem, got %v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Path != tc.path || !strings.Contains(ps[0].Message, tc.want) {
				t.Fatalf("want one problem at %s holding %q, got %v", tc.path, tc.want, ps)
			}
		})
	}
}
