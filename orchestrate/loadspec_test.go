package orchestrate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// The load of a case goes to every endpoint with its weight and headers; login headers apply to every request; a
// catalog app's single endpoint stays unnamed (no target label, the agent command line of before).
func TestLoadSpec(t *testing.T) {
	t.Parallel()
	l := scenario.LoadSpec{Connections: 4, PayloadBytes: 10, Clients: 2, Jitter: true}
	req := runner.LoadRequest{Case: scenario.Case{QPS: scenario.QPS{Value: 400}}, LeadIn: time.Second, Window: time.Minute, CoolDown: 2 * time.Second}
	multi := target.Target{EntryURL: "http://web/", Headers: map[string]string{"Host": "shop", "Cookie": "stale"},
		LoadTargets: []target.LoadTarget{
			{Name: "web", URL: "http://web/", Protocol: "http", Weight: 3, Headers: map[string]string{"X-A": "1"}},
			{Name: "rpc", URL: "rpc:8079", Protocol: "grpc", Weight: 1},
		}}
	got := loadSpec(l, nil, multi, map[string]string{"Cookie": "session=1"}, req)
	want := loadgen.Spec{QPS: 400, Connections: 4, Duration: time.Minute, WarmUp: time.Second, CoolDown: 2 * time.Second, PayloadBytes: 10,
		Jitter: true, Clients: 2, Headers: map[string]string{"Host": "shop", "Cookie": "session=1"},
		Targets: []loadgen.LoadTarget{
			{Name: "web", URL: "http://web/", Protocol: "http", Weight: 3, Headers: map[string]string{"X-A": "1"}},
			{Name: "rpc", URL: "rpc:8079", Protocol: "grpc", Weight: 1},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spec\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}

	req.Case.QPS = scenario.MaxQPS
	catalog := target.Target{EntryService: "frontend", EntryURL: "http://frontend.mb-single.svc.cluster.local:80/home"}
	got = loadSpec(l, nil, catalog, nil, req)
	if got.QPS != 0 || len(got.Targets) != 1 || !reflect.DeepEqual(got.Targets[0], loadgen.LoadTarget{URL: catalog.EntryURL, Protocol: "http", Weight: 1}) {
		t.Errorf("catalog spec %+v: want max and one unnamed http target at the entry URL", got)
	}
	cs := got.ClientSpecs()
	if args := strings.Join(cs[0][0].Args(), " "); strings.Contains(args, "--target") || strings.Contains(args, "--protocol") {
		t.Errorf("a single http endpoint's command line %q names a target or protocol", args)
	}
}

func TestLoadFacts(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	res := loadgen.Result{ActualQPS: 99.5, Requests: 100, Errors: 1,
		Clients: []loadgen.ClientResult{{Client: "lg-a", Target: "web", Start: at, End: at.Add(time.Minute), ActualQPS: 99.5}},
		Targets: []loadgen.LoadTargetResult{{Name: "web", Protocol: "http", Weight: 3, Result: loadgen.Result{ActualQPS: 99.5, Requests: 100, Errors: 1}}}}
	f := loadFacts(res)
	if f["achieved-qps"] != "99.5" || f["error-rate"] != "1.000%" ||
		f["load-clients"] != "lg-a web 2026-12-01T10:00:00Z..2026-12-01T10:01:00Z 99.5 qps" ||
		f["load-targets"] != "web http weight 3 99.5 qps 1.000% errors" {
		t.Errorf("facts %v", f)
	}
	if _, ok := loadFacts(loadgen.Result{})["load-targets"]; ok {
		t.Error("a single-target run has a load-targets fact")
	}
}

// An enforce case's load: the first target again, as heavy as all of them, with the deny header; a single unnamed
// target named allowed; each slice's record apart.
func TestDeniedSlice(t *testing.T) {
	t.Parallel()
	got := withDeniedSlice([]loadgen.LoadTarget{{URL: "http://entry:8080/", Protocol: "http", Weight: 1}})
	want := []loadgen.LoadTarget{
		{Name: "allowed", URL: "http://entry:8080/", Protocol: "http", Weight: 1},
		{Name: "denied", URL: "http://entry:8080/", Protocol: "http", Weight: 1, Headers: map[string]string{"x-meshbench-deny": "yes"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("single target:\n got %+v\nwant %+v", got, want)
	}
	got = withDeniedSlice([]loadgen.LoadTarget{{Name: "web", URL: "http://web/", Weight: 2, Headers: map[string]string{"Cookie": "a"}}, {Name: "api", URL: "http://api/", Weight: 1}})
	if d := got[2]; len(got) != 3 || d.Name != "denied" || d.URL != "http://web/" || d.Weight != 3 || d.Headers["Cookie"] != "a" || d.Headers["x-meshbench-deny"] != "yes" || got[0].Headers["x-meshbench-deny"] != "" {
		t.Errorf("two targets: %+v", got)
	}
	// Through loadSpec, as an enforce case asks: the target's entry and its denied copy, recorded per second.
	c := scenario.Case{QPS: scenario.QPS{Value: 50}, Policy: scenario.CasePolicy{Load: &scenario.LoadPolicy{Window: time.Minute, PerSecond: true, DeniedSlice: true}}}
	spec := loadSpec(scenario.LoadSpec{Connections: 2}, nil, target.Target{EntryURL: "http://entry:8080/"}, nil, runner.LoadRequest{Case: c, Window: time.Minute})
	if len(spec.Targets) != 2 || spec.Targets[1].Name != "denied" || spec.Targets[1].Headers["x-meshbench-deny"] != "yes" || !spec.PerSecond {
		t.Errorf("an enforce case's load spec: %+v", spec)
	}
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	sec := func(n int64) []results.LoadSecond { return []results.LoadSecond{{Start: t0, Requests: n}} }
	res := loadgen.Result{Targets: []loadgen.LoadTargetResult{
		{Name: "web", Result: loadgen.Result{Clients: []loadgen.ClientResult{{Seconds: sec(3)}}}},
		{Name: "api", Result: loadgen.Result{Clients: []loadgen.ClientResult{{Seconds: sec(4)}}}},
		{Name: "denied", Result: loadgen.Result{Clients: []loadgen.ClientResult{{Seconds: sec(7)}}}},
	}}
	sl := loadSlices(res)
	if sl[results.SliceDenied][0].Requests != 7 || sl[results.SliceAllowed][0].Requests != 7 {
		t.Errorf("slices %+v", sl)
	}
	if loadSlices(loadgen.Result{Targets: res.Targets[:2]}) != nil {
		t.Error("a load without a denied slice has slices")
	}
}

// A load variant changes the case's load spec, and its settings are proven from the load's record: a refusal names
// the setting and what was seen.
func TestLoadVariantSpecAndProof(t *testing.T) {
	t.Parallel()
	no, body := false, 16384
	vl := &scenario.VariantLoad{KeepAlive: &no, PayloadBytes: &body, HTTP: scenario.HTTP2}
	s := &scenario.Spec{Variants: []scenario.Variant{{Name: "mtls", MTLS: scenario.MTLSStrict}, {Name: "shape", Load: vl}}}
	if variantLoad(s, "shape") != vl || variantLoad(s, "mtls") != nil || variantLoad(s, scenario.VariantNone) != nil {
		t.Fatal("variantLoad picks the wrong variant's load")
	}
	c := scenario.Case{QPS: scenario.QPS{Value: 50}, Variant: "shape"}
	spec := loadSpec(scenario.LoadSpec{Connections: 2, PayloadBytes: 10}, vl, target.Target{EntryURL: "http://entry:8080/"}, nil, runner.LoadRequest{Case: c, Window: time.Minute})
	if !spec.NoKeepAlive || !spec.HTTP2 || spec.PayloadBytes != body {
		t.Errorf("load spec %+v", spec)
	}
	if plain := loadSpec(scenario.LoadSpec{Connections: 2, PayloadBytes: 10}, nil, target.Target{EntryURL: "http://entry:8080/"}, nil, runner.LoadRequest{Case: c, Window: time.Minute}); plain.NoKeepAlive || plain.HTTP2 || plain.PayloadBytes != 10 {
		t.Errorf("plain load spec %+v", plain)
	}
	client := func(proto string, codes map[int]int64, sockets, h2 int64) loadgen.ClientResult {
		return loadgen.ClientResult{Protocol: proto, Codes: codes, Sockets: sockets, HTTP2Responses: h2}
	}
	for _, tc := range []struct {
		name    string
		clients []loadgen.ClientResult
		want    string // the proof, or the error's text
		ok      bool
	}{
		{"every setting took effect", []loadgen.ClientResult{client("http", map[int]int64{200: 90, 503: 5, -1: 5}, 101, 95)}, "101 sockets for 100 http requests; all 95 answers HTTP/2 (95 HTTP/2 responses counted, first calls included); every http request carried a 16384-byte body", true},
		{"a grpc target is not counted", []loadgen.ClientResult{client("http", map[int]int64{200: 10}, 10, 12), client("grpc", map[int]int64{200: 1000}, 1, 0)}, "10 sockets for 10 http requests; all 10 answers HTTP/2 (12 HTTP/2 responses counted, first calls included); every http request carried a 16384-byte body", true},
		{"connections kept alive", []loadgen.ClientResult{client("http", map[int]int64{200: 100}, 4, 100)}, "keepAlive false: 4 sockets for 100 http requests", false},
		{"answers in HTTP/1.1", []loadgen.ClientResult{client("http", map[int]int64{200: 100}, 100, 0)}, "http 2: 0 of 100 answers", false},
		{"no http request", []loadgen.ClientResult{client("tcp", map[int]int64{200: 100}, 1, 0)}, "no http request", false},
	} {
		proof, err := checkLoadShape(*vl, loadgen.Result{Clients: tc.clients})
		switch {
		case tc.ok && (err != nil || proof != tc.want):
			t.Errorf("%s: proof %q, err %v; want %q", tc.name, proof, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
