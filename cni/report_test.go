package cni

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

func f64(v float64) *float64 { return &v }

func tcpResult(gbps float64) *nettool.Result {
	return &nettool.Result{Tool: nettool.ToolIperf3, Test: scenario.CNITestTCP, BitsPerSecond: gbps * 1e9, Retransmits: 10, MeanRTTMicros: 150}
}

func rrResult(tps float64) *nettool.Result {
	return &nettool.Result{Tool: nettool.ToolBuiltin, Test: scenario.CNITestRR, TransactionsPerSecond: tps,
		Latency: &nettool.Latency{Mean: f64(0.05), P50: f64(0.04), P90: f64(0.06), P99: f64(0.2), P999: f64(1.5)}}
}

func TestMeasurementSamples(t *testing.T) {
	t.Parallel()
	c := pathTest{Path: scenario.CNIPathService, Test: scenario.CNITestUDP, Tool: nettool.ToolIperf3}
	w := results.Window{Kind: results.WindowTest, Start: time.Unix(10, 0), End: time.Unix(20, 0)}
	got := measurementSamples(c, 2, w, nettool.Result{Tool: nettool.ToolIperf3, BitsPerSecond: 723e6, SenderBitsPerSecond: 907e6, LossPercent: 20.2, JitterMs: 0.0008})
	var names []string
	for _, s := range got {
		names = append(names, string(s.Metric)+"/"+string(s.Stat)+"="+num(s.Value)+" "+string(s.Unit))
		if s.Repetition != 2 || s.Window != w || s.Component != results.ComponentCNITest || s.Source != "iperf3" ||
			s.Labels[labelPath] != "service" || s.Labels[labelTest] != "udp" || s.Labels[labelTool] != "iperf3" {
			t.Errorf("sample %+v", s)
		}
	}
	if want := "throughput/value=723.0 Mbit/s sent/value=907.0 Mbit/s loss/value=20.20 % jitter/value=0.0008 ms"; strings.Join(names, " ") != want {
		t.Errorf("samples %s", strings.Join(names, " "))
	}
	rr := measurementSamples(pathTest{Path: "host", Test: "crr", Tool: nettool.ToolBuiltin}, 1, w, *rrResult(5000))
	if rr[0].Metric != results.MetricCRR || rr[0].Unit != results.UnitTPS || rr[len(rr)-1].Metric != results.MetricErrors {
		t.Errorf("crr samples %+v", rr)
	}
}

func TestCheckConnection(t *testing.T) {
	t.Parallel()
	res := func(dialled, serverLocal string) nettool.Result {
		return nettool.Result{Tool: nettool.ToolIperf3,
			Connected:       []nettool.Endpoint{{LocalHost: "10.244.0.5", RemoteHost: dialled}},
			ServerConnected: []nettool.Endpoint{{LocalHost: serverLocal, RemoteHost: "10.244.0.5"}}}
	}
	svc := expect{Dialled: "10.96.0.20", Backend: "10.244.1.7", Service: true}
	tests := []struct {
		name string
		r    nettool.Result
		e    expect
		err  string
	}{
		{"service ok", res("10.96.0.20", "10.244.1.7"), svc, ""},
		{"service ok, v4-mapped server address", res("10.96.0.20", "::ffff:10.244.1.7"), svc, ""},
		{"service bypassed", res("10.244.1.7", "10.244.1.7"), svc, "not 10.96.0.20"},
		{"wrong backend answered", res("10.96.0.20", "10.244.1.99"), svc, "not on the backend address 10.244.1.7"},
		{"no server record", nettool.Result{Tool: nettool.ToolIperf3, Connected: res("10.96.0.20", "").Connected}, svc, "no server-side record"},
		{"service expectation misconfigured", res("10.244.1.7", "10.244.1.7"), expect{Dialled: "10.244.1.7", Backend: "10.244.1.7", Service: true}, "directly"},
		{"pod to pod", res("10.244.1.7", "10.244.1.7"), expect{Dialled: "10.244.1.7", Backend: "10.244.1.7"}, ""},
		{"builtin has no records", nettool.Result{Tool: nettool.ToolBuiltin}, svc, ""},
	}
	for _, tt := range tests {
		err := checkConnection(tt.r, tt.e)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// recordedCase is a case as runCase records it: its status from the outcomes, its measurement samples.
func recordedCase(c pathTest, outs []outcome) (results.CaseResult, []results.Sample) {
	res := results.CaseResult{CaseID: c.id(), Facts: factsOf(c.labels()), Status: results.StatusOK}
	if c.SkipReason != "" {
		res.Status, res.Reason = results.StatusSkipped, c.SkipReason
		return res, nil
	}
	status, reason, warnings := caseStatus(outs)
	switch status {
	case rowPartial:
		res.Partial = reason
	case rowFailed:
		res.Status, res.Reason = results.StatusFailed, reason
	}
	res.SampleWarnings = warnings
	var samples []results.Sample
	for _, o := range outs {
		if o.Result != nil {
			for _, s := range measurementSamples(c, o.N, results.Window{Kind: results.WindowTest}, *o.Result) {
				s.CaseID = c.id()
				samples = append(samples, s)
			}
		}
	}
	return res, samples
}

type outcomes struct {
	c    pathTest
	outs []outcome
}

// tableOf computes the rows and resource rows as Run does: the recorded cases and samples through results.Summarize.
func tableOf(conf float64, extra []results.Sample, cs ...outcomes) ([]row, []resourceRow) {
	var cases []results.CaseResult
	var samples []results.Sample
	for _, c := range cs {
		res, smp := recordedCase(c.c, c.outs)
		cases, samples = append(cases, res), append(samples, smp...)
	}
	sum := results.Summarize(results.RunMeta{RunID: "r"}, append(samples, extra...), cases, results.SummaryOptions{Confidence: conf})
	return results.CNIRows(sum), results.CNIResourceRows(sum)
}

func TestCaseRows(t *testing.T) {
	t.Parallel()
	c := pathTest{Path: scenario.CNIPathCrossNode, Test: scenario.CNITestTCP, Tool: nettool.ToolIperf3}
	rows, _ := tableOf(0.95, nil, outcomes{c, []outcome{{N: 1, Result: tcpResult(9)}, {N: 2, Result: tcpResult(10)}, {N: 3, Result: tcpResult(11)}}})
	row := rows[0]
	if row.Status != RowOK || row.N != 3 || row.Mean != 10 || row.Unit != results.UnitGbps || row.CI == nil || row.Tool != "iperf3" {
		t.Fatalf("row %+v", row)
	}
	// t(0.975, 2) = 4.303; sd = 1; half width 4.303/sqrt(3) = 2.484
	if math.Abs(row.CI.High-12.484) > 0.01 || math.Abs(row.CI.Low-7.516) > 0.01 {
		t.Errorf("CI %+v", row.CI)
	}
	if d := row.Detail(); d != "retransmits 10, rtt 0.15 ms" {
		t.Errorf("detail %q", d)
	}
	rows, _ = tableOf(0.95, nil,
		outcomes{c, []outcome{{N: 1, Result: tcpResult(9)}, {N: 2, Err: errors.New("iperf3: boom")}}},
		outcomes{pathTest{Path: "same-node", Test: "tcp", Tool: nettool.ToolIperf3}, []outcome{{N: 1, Err: errors.New("x")}}},
		outcomes{pathTest{Path: "host", Test: "rr", SkipReason: "only one node"}, nil},
		outcomes{pathTest{Path: "service", Test: "tcp", Tool: nettool.ToolIperf3}, nil})
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	if partial := rows[0]; partial.Status != rowPartial || partial.N != 1 || partial.CI != nil || !strings.Contains(partial.Reason, "sample 2: iperf3: boom") {
		t.Errorf("partial %+v", partial)
	}
	if failed := rows[1]; failed.Status != rowFailed || failed.Reason != "sample 1: x" || failed.N != 0 {
		t.Errorf("failed %+v", failed)
	}
	if skipped := rows[2]; skipped.Status != rowSkipped || skipped.Reason != "only one node" || skipped.Metric != results.MetricRR {
		t.Errorf("skipped %+v", skipped)
	}
	if none := rows[3]; none.Status != rowFailed || none.Reason == "" {
		t.Errorf("no samples %+v", none)
	}
}

func TestReportRendering(t *testing.T) {
	t.Parallel()
	conf := 0.95
	res := func(kind, comp, metric, stat string, v float64, unit string, labels map[string]string) results.Sample {
		return results.Sample{CaseID: "idle", Window: results.Window{Kind: kind}, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Value: v, Unit: results.Unit(unit), Labels: labels}
	}
	sameNode := map[string]string{labelPath: "same-node", results.CNILabelSource: prom.SourcePrometheus}
	cg := func(pod string) map[string]string {
		l := map[string]string{labelPath: "same-node", labelTest: "tcp", results.CNILabelSource: results.CNISourceCgroup}
		if pod != "" {
			l[results.CNILabelPod] = pod
		}
		return l
	}
	rows, resources := tableOf(conf, []results.Sample{
		res("idle", "cni-test", "cpu", "min", 1, "millicores", sameNode),
		res("idle", "cni-test", "cpu", "avg", 2, "millicores", sameNode),
		// The demo's impossible row: avg above max (sparse counter samples). Min and max are not figures.
		res("idle", "node", "cpu", "min", 492, "millicores", map[string]string{labelPath: "all", prom.LabelNode: "node1"}),
		res("idle", "node", "cpu", "avg", 549, "millicores", map[string]string{labelPath: "all", prom.LabelNode: "node1"}),
		res("idle", "node", "cpu", "max", 528, "millicores", map[string]string{labelPath: "all", prom.LabelNode: "node1"}),
		res("test", "node", "memory", "max", 12345, "MiB", map[string]string{labelPath: "same-node", labelTest: "tcp", prom.LabelNode: "node1", prom.LabelSeries: prom.NodeSeriesNodeExporter}),
		res("test", "node", "cpu", "avg", 1500, "millicores", map[string]string{labelPath: "cross-node", labelTest: "rr", prom.LabelNode: "node1", prom.LabelSeries: prom.NodeSeriesCadvisor}),
		res("test", "node", "cpu", "avg", 900, "millicores", map[string]string{labelPath: "cross-node", labelTest: "rr", prom.LabelNode: "node2", prom.LabelSeries: prom.NodeSeriesCadvisor}),
		res("test", "node", "latency", "max", 1, "ms", nil),
		// cgroup-1s: the path's pods together and one pod, beside the collector's figures
		res("test", "cni-test", "cpu", "min", 800, "millicores", cg("")),
		res("test", "cni-test", "cpu", "avg", 950, "millicores", cg("")),
		res("test", "cni-test", "cpu", "max", 1100, "millicores", cg("")),
		res("test", "cni-test", "cpu", "avg", 600, "millicores", cg("client")),
	},
		outcomes{pathTest{Path: "host", Test: "tcp", Tool: nettool.ToolIperf3, SkipReason: "only one Ready schedulable node (node1)"}, nil},
		outcomes{pathTest{Path: "same-node", Test: "tcp", Tool: nettool.ToolIperf3}, []outcome{{N: 1, Result: tcpResult(20)}, {N: 2, Result: tcpResult(21)}, {N: 3, Result: tcpResult(19.5)}}},
		outcomes{pathTest{Path: "same-node", Test: "udp", Tool: nettool.ToolIperf3}, []outcome{{N: 1, Result: &nettool.Result{Tool: nettool.ToolIperf3, BitsPerSecond: 723e6, SenderBitsPerSecond: 907e6, LossPercent: 20.2, JitterMs: 0.0008}}}},
		outcomes{pathTest{Path: "cross-node", Test: "rr", Tool: nettool.ToolBuiltin}, []outcome{{N: 1, Result: rrResult(21380)}, {N: 2, Result: rrResult(22005)}}},
		outcomes{pathTest{Path: "service", Test: "crr", Tool: nettool.ToolBuiltin}, []outcome{{N: 1, Err: errors.New("no transaction completed")}}},
	)
	rep := &Report{
		RunID: "cni-20261201-000000-abcd", Namespace: "mb-cni-20261201-000000-abcd", Confidence: conf,
		Placement: placement{ClientNode: "node1", ServerNode: "node2"}, RRTool: nettool.ToolBuiltin,
		Facts: Facts{KubernetesVersion: "v1.37.2", CNISource: "no known CNI DaemonSet", ServiceClusterIP: "10.96.0.20",
			MTU: []MTUFact{{Node: "node1", Scope: "pod", Interface: "eth0", MTU: 1500}, {Node: "node1", Scope: "node", Interface: "mbnode2", MTU: 1500}},
			// The local cluster: both nodes on one machine (same machine and boot ID).
			Nodes: []results.NodeFacts{
				{Name: "node1", InternalIP: "172.30.0.1", KernelVersion: "6.18.0", ContainerRuntime: "containerd://2.2.0", CPU: "2", Memory: "3904Mi", MachineID: "4c1f0e9d2b7a4e6f", BootID: "b0071d00-0001"},
				{Name: "node2", InternalIP: "172.30.0.2", KernelVersion: "6.18.0", ContainerRuntime: "containerd://2.2.0", CPU: "2", Memory: "3904Mi", MachineID: "4c1f0e9d2b7a4e6f", BootID: "b0071d00-0001"},
			}},
		Rows: rows, Resources: resources,
		Notes: []string{"the network image has no netperf"},
	}
	rep.NodeTotals = results.CNINodeTotals(rep.Resources, rep.Facts.Nodes)
	golden(t, "report-table.txt", []byte(rep.Table()))
	csv, err := rep.CSV()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.csv", []byte(csv))
	if len(rep.Resources) != 7 {
		t.Fatalf("resources %+v", rep.Resources)
	}
	byKey := map[string]resourceRow{}
	for _, rr := range rep.Resources {
		byKey[rr.Window+" "+rr.Path+" "+resourceComponent(rr)+" "+rr.Node+" "+rr.Source+" "+string(rr.Metric)] = rr
	}
	if r := byKey["idle same-node cni-test  prometheus cpu"]; r.Max != nil || r.Avg == nil || *r.Avg != 2 || r.TooSparse {
		t.Errorf("idle cni-test %+v", r)
	}
	if r := byKey["idle all node node1  cpu"]; !r.TooSparse {
		t.Errorf("avg 549 outside [492, 528] is not marked too sparse: %+v", r)
	}
	if r := byKey["test cross-node node node2  cpu"]; r.Avg == nil || *r.Avg != 900 {
		t.Errorf("node2 %+v", r)
	}
	// cross-node/rr: node1 1500 and node2 900 are one machine's: the total is node1's, not 2400.
	var cross *nodeTotal
	for i, nt := range rep.NodeTotals {
		if nt.Path == "cross-node" && nt.Metric == "cpu" {
			cross = &rep.NodeTotals[i]
		}
	}
	if cross == nil || cross.Avg != 1500 || !slices.Equal(cross.Nodes, []string{"node1", "node2"}) || !slices.Equal(cross.Counted, []string{"node1"}) {
		t.Errorf("cross-node node total %+v: want node1's 1500 standing for the shared host", cross)
	}
	if r := byKey["test same-node cni-test pod client  cgroup-1s cpu"]; r.Avg == nil || *r.Avg != 600 {
		t.Errorf("cgroup-1s client pod %+v", r)
	}
	if r := byKey["test same-node cni-test  cgroup-1s cpu"]; r.Min == nil || *r.Min != 800 || *r.Max != 1100 {
		t.Errorf("cgroup-1s path total %+v", r)
	}
	if tab := rep.Table(); !strings.Contains(tab, results.TooSparse) || !strings.Contains(tab, "549") || strings.Contains(tab, "528") {
		t.Errorf("the impossible row is shown as a figure:\n%s", tab)
	}
}

// factsOf types a map of labels as case facts.
func factsOf(m map[string]string) map[results.FactKey]string {
	out := make(map[results.FactKey]string, len(m))
	for k, v := range m {
		out[results.FactKey(k)] = v
	}
	return out
}
