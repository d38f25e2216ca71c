package orchestrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// An L7 variant is proven by a request its rules refuse: the probe goes to the first http load target's address with
// the probe path, is retried until the proxy answers 403, and fails with what it saw when it never does.
func TestDenyProbe(t *testing.T) {
	t.Parallel()
	tgt := target.Target{LoadTargets: []target.LoadTarget{
		{Name: "grpc", URL: "entry.ns.svc:8079", Protocol: scenario.ProtocolGRPC},
		{Name: "web", URL: "http://web.ns.svc:80/home?user=a#x", Protocol: scenario.ProtocolHTTP},
	}}
	if u, ok := probeURL(tgt); !ok || u != "http://web.ns.svc:80/meshbench-variant-probe" {
		t.Errorf("probe URL %q %v", u, ok)
	}
	if _, ok := probeURL(target.Target{LoadTargets: tgt.LoadTargets[:1]}); ok {
		t.Error("a load without an http target has a probe URL")
	}
	answers := func(statuses ...int) (probeFunc, *[]string) {
		var urls []string
		return func(_ context.Context, _ target.Target, mode scenario.Mode, u string, _ ...string) (int, error) {
			urls = append(urls, string(mode)+" "+u)
			if len(urls) > len(statuses) {
				return statuses[len(statuses)-1], nil
			}
			if statuses[len(urls)-1] < 0 {
				return 0, errors.New("exec: pod not ready")
			}
			return statuses[len(urls)-1], nil
		}, &urls
	}
	probe, urls := answers(-1, 200, 403)
	said, err := denyProbe(context.Background(), probe, tgt, scenario.ModeWaypoint, 10*time.Second)
	if err != nil || said != "GET /meshbench-variant-probe refused (403)" || len(*urls) != 3 || (*urls)[0] != "waypoint http://web.ns.svc:80/meshbench-variant-probe" {
		t.Errorf("refused after retries: %q, %v, requests %q", said, err, *urls)
	}
	probe, _ = answers(200)
	if _, err := denyProbe(context.Background(), probe, tgt, scenario.ModeSidecar, 1200*time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "the L7 rules are not enforced: GET http://web.ns.svc:80/meshbench-variant-probe answered 200, want 403") {
		t.Errorf("never refused: %v", err)
	}
	if said, err := denyProbe(context.Background(), probe, target.Target{LoadTargets: tgt.LoadTargets[:1]}, scenario.ModeSidecar, time.Second); said != "" || err != nil {
		t.Errorf("no http target: %q %v", said, err)
	}
}
