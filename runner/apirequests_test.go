package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// apiMesh is the fake mesh that, like the real switcher, talks to an API server: each Apply patches the namespace
// and each Verify lists pods, through a client whose transport the run's counter wraps.
type apiMesh struct {
	fakeMesh
	client *http.Client
	url    string
}

func (m apiMesh) do(method, path string) {
	req, _ := http.NewRequest(method, m.url+path, nil)
	if resp, err := m.client.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

func (m apiMesh) Apply(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, error) {
	m.do(http.MethodPatch, "/api/v1/namespaces/mb-single")
	return m.fakeMesh.Apply(ctx, t, mode)
}

func (m apiMesh) Verify(ctx context.Context, t target.Target, mode scenario.Mode) (map[results.FactKey]string, error) {
	m.do(http.MethodGet, "/api/v1/namespaces/mb-single/pods")
	m.do(http.MethodGet, "/api/v1/namespaces/mb-single/pods")
	return m.fakeMesh.Verify(ctx, t, mode)
}

// Each recorded case carries the API requests sent while it ran: the cases that switch the mode have the patch and
// the pod lists, the others (the next load level, the same mode again after the serpentine turn) none.
func TestCasesRecordAPIRequests(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	counter := kube.NewRequestCounter()
	h := newHarness(t, "[none, sidecar]", "")
	h.r.Mesh = apiMesh{fakeMesh: fakeMesh{h.calls, ""}, client: &http.Client{Transport: counter.Wrap(http.DefaultTransport)}, url: srv.URL}
	h.r.Requests = counter
	if _, err := h.r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, c := range h.store.cases {
		if c.APIRequests == nil {
			t.Fatalf("%s: no apiRequests", c.CaseID)
		}
		a := c.APIRequests
		sum += a.Total
		switch _, switched := c.Timings["mode-switch"]; {
		case switched: // the first case of a mode: the switch and its verification
			if a.Total != 3 || a.ByVerbResource["patch namespaces"] != 1 || a.ByVerbResource["list pods"] != 2 {
				t.Errorf("%s: %+v, want 1 patch namespaces + 2 list pods", c.CaseID, a)
			}
		default:
			if a.Total != 0 || len(a.ByVerbResource) != 0 {
				t.Errorf("%s: %+v, want none (same mode, no switch)", c.CaseID, a)
			}
		}
	}
	if total, _ := counter.Counts(); sum != total {
		t.Errorf("cases add up to %d requests, the counter saw %d", sum, total)
	}
}
