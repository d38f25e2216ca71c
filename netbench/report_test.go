package netbench

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	netcol "github.com/meshbench/meshbench/collectors/net"
	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

func f64(v float64) *float64 { return &v }

func tcpResult(gbps float64) *netcol.Result {
	return &netcol.Result{Tool: netcol.ToolIperf3, Test: scenario.CNITestTCP, BitsPerSecond: gbps * 1e9, Retransmits: 10, MeanRTTMicros: 150}
}

func rrResult(tps float64) *netcol.Result {
	return &netcol.Result{Tool: netcol.ToolBuiltin, Test: scenario.CNITestRR, TransactionsPerSecond: tps,
		Latency: &netcol.Latency{Mean: f64(0.05), P50: f64(0.04), P90: f64(0.06), P99: f64(0.2), P999: f64(1.5)}}
}

func TestMeasurementSamples(t *testing.T) {
	t.Parallel()
	c := Case{Path: scenario.CNIPathService, Test: scenario.CNITestUDP, Tool: netcol.ToolIperf3}
	w := results.Window{Kind: results.WindowTest, Start: time.Unix(10, 0), End: time.Unix(20, 0)}
	got := MeasurementSamples(c, 2, w, netcol.Result{Tool: netcol.ToolIperf3, BitsPerSecond: 723e6, SenderBitsPerSecond: 907e6, LossPercent: 20.2, JitterMs: 0.0008})
	var names []string
	for _, s := range got {
		names = append(names, s.Metric+"/"+s.Stat+"="+num(s.Value)+" "+s.Unit)
		if s.Repetition != 2 || s.Window != w || s.Component != results.ComponentCNITest || s.Source != "iperf3" ||
			s.Labels[LabelPath] != "service" || s.Labels[LabelTest] != "udp" || s.Labels[LabelTool] != "iperf3" {
			t.Errorf("sample %+v", s)
		}
	}
	if want := "throughput/value=723.0 Mbit/s sent/value=907.0 Mbit/s loss/value=20.20 % jitter/value=0.0008 ms"; strings.Join(names, " ") != want {
		t.Errorf("samples %s", strings.Join(names, " "))
	}
	rr := MeasurementSamples(Case{Path: "host", Test: "crr", Tool: netcol.ToolBuiltin}, 1, w, *rrResult(5000))
	if rr[0].Metric != MetricCRR || rr[0].Unit != UnitTPS || rr[len(rr)-1].Metric != MetricErrors {
		t.Errorf("crr samples %+v", rr)
	}
}

func TestCheckConnection(t *testing.T) {
	t.Parallel()
	res := func(dialled, serverLocal string) netcol.Result {
		return netcol.Result{Tool: netcol.ToolIperf3,
			Connected:       []netcol.Endpoint{{LocalHost: "10.244.0.5", RemoteHost: dialled}},
			ServerConnected: []netcol.Endpoint{{LocalHost: serverLocal, RemoteHost: "10.244.0.5"}}}
	}
	svc := Expect{Dialled: "10.96.0.20", Backend: "10.244.1.7", Service: true}
	tests := []struct {
		name string
		r    netcol.Result
		e    Expect
		err  string
	}{
		{"service ok", res("10.96.0.20", "10.244.1.7"), svc, ""},
		{"service ok, v4-mapped server address", res("10.96.0.20", "::ffff:10.244.1.7"), svc, ""},
		{"service bypassed", res("10.244.1.7", "10.244.1.7"), svc, "not 10.96.0.20"},
		{"wrong backend answered", res("10.96.0.20", "10.244.1.99"), svc, "not on the backend address 10.244.1.7"},
		{"no server record", netcol.Result{Tool: netcol.ToolIperf3, Connected: res("10.96.0.20", "").Connected}, svc, "no server-side record"},
		{"service expectation misconfigured", res("10.244.1.7", "10.244.1.7"), Expect{Dialled: "10.244.1.7", Backend: "10.244.1.7", Service: true}, "directly"},
		{"pod to pod", res("10.244.1.7", "10.244.1.7"), Expect{Dialled: "10.244.1.7", Backend: "10.244.1.7"}, ""},
		{"builtin has no records", netcol.Result{Tool: netcol.ToolBuiltin}, svc, ""},
	}
	for _, tt := range tests {
		err := CheckConnection(tt.r, tt.e)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestBuildRow(t *testing.T) {
	t.Parallel()
	c := Case{Path: scenario.CNIPathCrossNode, Test: scenario.CNITestTCP, Tool: netcol.ToolIperf3}
	row := BuildRow(c, []Outcome{{N: 1, Result: tcpResult(9)}, {N: 2, Result: tcpResult(10)}, {N: 3, Result: tcpResult(11)}}, 0.95)
	if row.Status != RowOK || row.N != 3 || row.Mean != 10 || row.Unit != UnitGbps || row.CI == nil {
		t.Fatalf("row %+v", row)
	}
	// t(0.975, 2) = 4.303; sd = 1; half width 4.303/sqrt(3) = 2.484
	if math.Abs(row.CI.High-12.484) > 0.01 || math.Abs(row.CI.Low-7.516) > 0.01 {
		t.Errorf("CI %+v", row.CI)
	}
	if d := row.Detail(); d != "retransmits 10, rtt 0.15 ms" {
		t.Errorf("detail %q", d)
	}
	partial := BuildRow(c, []Outcome{{N: 1, Result: tcpResult(9)}, {N: 2, Err: errors.New("iperf3: boom")}}, 0.95)
	if partial.Status != RowPartial || partial.N != 1 || partial.CI != nil || !strings.Contains(partial.Reason, "sample 2: iperf3: boom") {
		t.Errorf("partial %+v", partial)
	}
	failed := BuildRow(c, []Outcome{{N: 1, Err: errors.New("x")}}, 0.95)
	if failed.Status != RowFailed || failed.Reason != "sample 1: x" {
		t.Errorf("failed %+v", failed)
	}
	skipped := BuildRow(Case{Path: "host", Test: "rr", SkipReason: "only one node"}, nil, 0.95)
	if skipped.Status != RowSkipped || skipped.Reason != "only one node" || skipped.Metric != MetricRR {
		t.Errorf("skipped %+v", skipped)
	}
	if none := BuildRow(c, nil, 0.95); none.Status != RowFailed || none.Reason == "" {
		t.Errorf("no samples %+v", none)
	}
}

func TestReportRendering(t *testing.T) {
	t.Parallel()
	conf := 0.95
	rep := &Report{
		RunID: "cni-20261201-000000-abcd", Namespace: "mb-cni-20261201-000000-abcd", Confidence: conf,
		Placement: Placement{ClientNode: "node1", ServerNode: "node2"}, RRTool: netcol.ToolBuiltin,
		Facts: Facts{KubernetesVersion: "v1.37.2", CNISource: "no known CNI DaemonSet", ServiceClusterIP: "10.96.0.20",
			MTU: []MTUFact{{Node: "node1", Scope: "pod", Interface: "eth0", MTU: 1500}, {Node: "node1", Scope: "node", Interface: "mbnode2", MTU: 1500}}},
		Rows: []Row{
			BuildRow(Case{Path: "same-node", Test: "tcp", Tool: netcol.ToolIperf3}, []Outcome{{N: 1, Result: tcpResult(20)}, {N: 2, Result: tcpResult(21)}, {N: 3, Result: tcpResult(19.5)}}, conf),
			BuildRow(Case{Path: "same-node", Test: "udp", Tool: netcol.ToolIperf3}, []Outcome{{N: 1, Result: &netcol.Result{Tool: netcol.ToolIperf3, BitsPerSecond: 723e6, SenderBitsPerSecond: 907e6, LossPercent: 20.2, JitterMs: 0.0008}}}, conf),
			BuildRow(Case{Path: "cross-node", Test: "rr", Tool: netcol.ToolBuiltin}, []Outcome{{N: 1, Result: rrResult(21380)}, {N: 2, Result: rrResult(22005)}}, conf),
			BuildRow(Case{Path: "service", Test: "crr", Tool: netcol.ToolBuiltin}, []Outcome{{N: 1, Err: errors.New("no transaction completed")}}, conf),
			BuildRow(Case{Path: "host", Test: "tcp", Tool: netcol.ToolIperf3, SkipReason: "only one Ready schedulable node (node1)"}, nil, conf),
		},
		Resources: ResourceRows([]results.Sample{
			{Window: results.Window{Kind: "idle"}, Component: "cni-test", Metric: "cpu", Stat: "min", Value: 1, Unit: "millicores", Labels: map[string]string{LabelPath: "same-node"}},
			{Window: results.Window{Kind: "idle"}, Component: "cni-test", Metric: "cpu", Stat: "avg", Value: 2, Unit: "millicores", Labels: map[string]string{LabelPath: "same-node"}},
			{Window: results.Window{Kind: "test"}, Component: "node", Metric: "memory", Stat: "max", Value: 12345, Unit: "MiB", Labels: map[string]string{LabelPath: "same-node", LabelTest: "tcp", prom.LabelNode: "node1", prom.LabelSeries: prom.NodeSeriesNodeExporter}},
			{Window: results.Window{Kind: "test"}, Component: "node", Metric: "cpu", Stat: "avg", Value: 1500, Unit: "millicores", Labels: map[string]string{LabelPath: "cross-node", LabelTest: "rr", prom.LabelNode: "node1", prom.LabelSeries: prom.NodeSeriesCadvisor}},
			{Window: results.Window{Kind: "test"}, Component: "node", Metric: "cpu", Stat: "avg", Value: 900, Unit: "millicores", Labels: map[string]string{LabelPath: "cross-node", LabelTest: "rr", prom.LabelNode: "node2", prom.LabelSeries: prom.NodeSeriesCadvisor}},
			{Window: results.Window{Kind: "test"}, Component: "node", Metric: "latency", Stat: "max", Value: 1, Unit: "ms"},
		}),
		Notes: []string{"the network image has no netperf"},
	}
	golden(t, "report-table.txt", []byte(rep.Table()))
	csv, err := rep.CSV()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.csv", []byte(csv))
	if len(rep.Resources) != 4 || rep.Resources[0].Max != nil || *rep.Resources[0].Avg != 2 || rep.Resources[3].Node != "node2" || *rep.Resources[3].Avg != 900 {
		t.Errorf("resources %+v", rep.Resources)
	}
}
