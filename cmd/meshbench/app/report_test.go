package app

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestReportWritesFiles(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, errOut := run(t, "report", fixtureRun("sample"), "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, name := range []string{"report.md", "report.html", "series.csv", "deltas.csv", "cases.csv", "charts/cni-tcp-throughput.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !strings.Contains(stdout, filepath.Join(out, name)) {
			t.Errorf("stdout does not list %s", name)
		}
	}
}

func TestReportStandInWarnsAndPushes(t *testing.T) {
	t.Parallel()
	var pushes atomic.Int32
	var path atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		pushes.Add(1)
		path.Store(r.URL.Path)
	}))
	defer srv.Close()
	code, _, errOut := run(t, "report", fixtureRun("aa-1"), "--no-files", "--push", srv.URL, "--push-job", "nightly", "--push-instance", "ci")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "figures are not Istio's") {
		t.Errorf("no stand-in warning on stderr:\n%s", errOut)
	}
	if pushes.Load() != 1 || path.Load() != "/metrics/job/nightly/instance/ci" {
		t.Errorf("pushes %d to %v", pushes.Load(), path.Load())
	}
}

func TestReportBadInput(t *testing.T) {
	t.Parallel()
	code, _, _ := run(t, "report", fixtureRun("missing"), "--no-files")
	if code != ExitBadInput {
		t.Errorf("missing run dir: exit %d, want %d", code, ExitBadInput)
	}
}
