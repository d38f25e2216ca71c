package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
)

// parseWrk on wrk 4.1.0's report (Debian's wrk, captured against meshbench-agent serve): the rate and the count
// the CPU per request divides by.
func TestParseWrk(t *testing.T) {
	out, err := os.ReadFile("testdata/wrk.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.qps != 6783.78 || r.requests != 13724 {
		t.Errorf("got %.2f qps, %d requests; want 6783.78, 13724", r.qps, r.requests)
	}
	if _, err := parseWrk(bytes.ReplaceAll(out, []byte("requests in"), []byte("reqs in"))); err == nil {
		t.Error("no request count: want an error")
	}
}

func TestCPUPerRequest(t *testing.T) {
	for _, tc := range []struct {
		r    clientRun
		want float64
	}{
		{clientRun{requests: 100000, cpu: 2 * time.Second}, 20},
		{clientRun{requests: 3, cpu: 10 * time.Microsecond}, 10.0 / 3},
		{clientRun{requests: 0, cpu: time.Second}, 0},
	} {
		if got := tc.r.cpuPerRequestUS(); got != tc.want {
			t.Errorf("%+v: got %v µs/req, want %v", tc.r, got, tc.want)
		}
	}
}

// parseAgentReport counts every phase's requests for the CPU (they all used it) but takes rate and length from the
// measured phase only.
func TestParseAgentReport(t *testing.T) {
	rep := `{"phases":[` +
		`{"name":"warmup","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z","requests":1000,"actualQPS":1000},` +
		`{"name":"measured","start":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:06Z","requests":100000,"actualQPS":20000},` +
		`{"name":"cooldown","start":"2026-01-01T00:00:06Z","end":"2026-01-01T00:00:07Z","requests":500,"actualQPS":500}]}`
	r, err := parseAgentReport([]byte(rep))
	if err != nil {
		t.Fatal(err)
	}
	if r.qps != 20000 || r.measured != 100000 || r.requests != 101500 || r.elapsed != 5*time.Second {
		t.Errorf("got %+v", r)
	}
	if _, err := parseAgentReport([]byte(`{"phases":[{"name":"warmup","requests":3}]}`)); err == nil {
		t.Error("no measured phase: want an error")
	}
}

// The floor client against fortio's real echo server: it counts only complete 200 responses, refuses any other
// status, and prints the line parseFloor reads.
func TestFloorClient(t *testing.T) {
	_, addr := fhttp.ServeTCP("0", "")
	base := fmt.Sprintf("http://localhost:%d/", addr.Port)
	var out bytes.Buffer
	if err := runFloorClient(base+"?size=100", 2, 200*time.Millisecond, &out); err != nil {
		t.Fatal(err)
	}
	r, err := parseFloor(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if r.requests < 10 || r.qps <= 0 {
		t.Errorf("%q: got %d requests at %.0f qps; want a loaded server", out.String(), r.requests, r.qps)
	}
	out.Reset()
	if err := runFloorClient(base+"?status=503", 1, 50*time.Millisecond, &out); err == nil || !strings.Contains(err.Error(), "want 200") {
		t.Errorf("503: got %v, want a status error", err)
	}
	if _, err := parseFloor([]byte("12 requests\n")); err == nil {
		t.Error("no elapsed time: want an error")
	}
}

func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		r    clientRun
		want float64
	}{
		{clientRun{cpu: 4 * time.Second, wall: 5 * time.Second}, 0.8},
		{clientRun{cpu: time.Second}, 0},
	} {
		if got := tc.r.busy(); got != tc.want {
			t.Errorf("%+v: got %v, want %v", tc.r, got, tc.want)
		}
	}
}
