//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/results"
)

// TestRunStalledServer runs examples/stalled-server.yaml: the chain's leaf holds 2 % of its answers for 500 ms
// (fortio echo's delay=, fortio.org/fortio v1.75.3 fhttp/http_utils.go generateDelay), one connection at 50 qps.
// The service time (sent -> done) sees a stall only in the request that met it, so its p90 stays that of an
// unstalled request and its p99 is the stall; the response time (due -> done) also counts the requests due while
// the connection waited (about 12 of 25 per stall more than 250 ms late, some 25 % of all), so its p90 exceeds the
// service time's by most of the stall.
func TestRunStalledServer(t *testing.T) {
	t.Parallel()
	c := RequireCluster(t)
	deleteNamespaceAtEnd(t, c, "mb-stall-single")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	scenarioPath, _ := filepath.Abs("../../examples/stalled-server.yaml")
	run, stdout := runScenario(ctx, t, c, scenarioPath)
	if len(run.Cases) != 1 || run.Cases[0].Status != results.StatusOK {
		t.Fatalf("cases %+v, want one ok", run.Cases)
	}
	id := run.Cases[0].CaseID
	idx := indexSamples(run.Samples)
	get := func(m results.Metric, p string) float64 {
		return idx[id+"|load|loadgen|"+string(m)+"|"+p]
	}
	svc90, svc99 := get(results.MetricLatency, "p90"), get(results.MetricLatency, "p99")
	resp90, resp99 := get(results.MetricResponseTime, "p90"), get(results.MetricResponseTime, "p99")
	t.Logf("service time p90 %.1f ms, p99 %.1f ms; response time p90 %.1f ms, p99 %.1f ms", svc90, svc99, resp90, resp99)
	if !(svc90 > 0) || svc90 > 100 {
		t.Errorf("service time p90 %.1f ms: want an unstalled request's (0, 100 ms]", svc90)
	}
	if svc99 < 450 {
		t.Errorf("service time p99 %.1f ms: the 2 %% of stalled answers (500 ms) should show at p99", svc99)
	}
	if resp90-svc90 < 250 {
		t.Errorf("response time p90 %.1f ms exceeds the service time's %.1f ms by less than 250 ms: the requests due during a stall were not counted", resp90, svc90)
	}
	if resp99 < svc99 {
		t.Errorf("response time p99 %.1f ms below the service time's %.1f ms", resp99, svc99)
	}
	for _, want := range []string{"response time", "Service time"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the printed report does not show the %s", want)
		}
	}
}
