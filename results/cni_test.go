package results

import (
	"maps"
	"strings"
	"testing"
)

func TestParseCNICaseID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, path, test string
		ok             bool
	}{
		{"same-node/tcp", "same-node", "tcp", true},   // what meshbench cni records
		{"cross-node.crr", "cross-node", "crr", true}, // the plan form of earlier versions
		{"cni/service/udp", "service", "udp", true},   // a run holding mesh and network cases
		{"idle", "", "", false},
		{"single.sidecar.q100.r2", "", "", false}, // a mesh case ID
		{"single/none/1000/r1", "", "", false},
		{"host.", "", "", false},
		{"/tcp", "", "", false},
	}
	for _, tt := range tests {
		path, test, ok := ParseCNICaseID(tt.id)
		if path != tt.path || test != tt.test || ok != tt.ok {
			t.Errorf("ParseCNICaseID(%q) = %q, %q, %v; want %q, %q, %v", tt.id, path, test, ok, tt.path, tt.test, tt.ok)
		}
	}
}

func TestParseLabelsInvertsCanonical(t *testing.T) {
	t.Parallel()
	for _, l := range []map[string]string{
		{}, {"path": "same-node"}, {"path": "a,b", "test": "x=y", `we\ird`: ""}, {"node": "n1", "series": "cadvisor-root", "path": "all"},
	} {
		got := ParseLabels(CanonicalLabels(l))
		if CanonicalLabels(got) != CanonicalLabels(l) || len(got) != len(l) {
			t.Errorf("ParseLabels(%q) = %v, want %v", CanonicalLabels(l), got, l)
		}
	}
}

func cniSample(caseID, path, test string, metric Metric, stat Stat, unit Unit, rep int, v float64) Sample {
	return Sample{CaseID: caseID, Repetition: rep, Window: Window{Kind: WindowTest}, Component: ComponentCNITest, Source: "iperf3",
		Metric: metric, Stat: stat, Unit: unit, Value: v, Labels: map[string]string{CNILabelPath: path, CNILabelTest: test, CNILabelTool: "iperf3"}}
}

func TestCNIRows(t *testing.T) {
	t.Parallel()
	samples := []Sample{
		cniSample("same-node/tcp", "same-node", "tcp", "throughput", "value", "Gbit/s", 1, 9),
		cniSample("same-node/tcp", "same-node", "tcp", "throughput", "value", "Gbit/s", 2, 11),
		cniSample("same-node/tcp", "same-node", "tcp", "retransmits", "value", "count", 1, 4),
		cniSample("same-node/tcp", "same-node", "tcp", "retransmits", "value", "count", 2, 6),
		cniSample("service/udp", "service", "udp", "throughput", "value", "Mbit/s", 1, 480),
		// A failed case's samples never make a figure of its row.
		cniSample("host/tcp", "host", "tcp", "throughput", "value", "Gbit/s", 1, 10),
	}
	cases := []CaseResult{
		{CaseID: "cross-node/rr", Status: StatusSkipped, Reason: "only one node"},
		{CaseID: "same-node/tcp", Status: StatusOK, SampleWarnings: []string{"sample 1: w1", "sample 2: w2"}},
		{CaseID: "service/udp", Status: StatusOK, Partial: "sample 2: boom"},
		{CaseID: "host/tcp", Status: StatusFailed, Reason: "sample 2: lost"},
		{CaseID: "idle", Status: StatusOK},
		{CaseID: "single.none.q100.r1", Mode: "none", Status: StatusFailed, Reason: "mesh"},
		{CaseID: "host.rr", Status: StatusOK}, // the old plan form, no samples: not measured
	}
	rows := CNIRows(Summarize(RunMeta{RunID: "r"}, samples, cases, SummaryOptions{}))
	var got []string
	for _, r := range rows {
		got = append(got, r.Path+"/"+r.Test+":"+r.Status)
	}
	if want := "cross-node/rr:skipped same-node/tcp:ok service/udp:partial host/tcp:failed host/rr:failed"; strings.Join(got, " ") != want {
		t.Fatalf("rows %s, want %s", strings.Join(got, " "), want)
	}
	tcp := rows[1]
	if tcp.Metric != "throughput" || tcp.Unit != "Gbit/s" || tcp.N != 2 || tcp.Mean != 10 || tcp.CI == nil || tcp.Tool != "iperf3" ||
		tcp.Detail() != "retransmits 5, 2 warning(s)" || tcp.CaseID != "same-node/tcp" {
		t.Errorf("same-node/tcp %+v (detail %q)", tcp, tcp.Detail())
	}
	if udp := rows[2]; udp.Reason != "sample 2: boom" || udp.N != 1 || udp.CI != nil || udp.Unit != "Mbit/s" {
		t.Errorf("service/udp %+v", udp)
	}
	if host := rows[3]; host.N != 0 || host.Reason != "sample 2: lost" {
		t.Errorf("host/tcp %+v", host)
	}
	if rr := rows[4]; rr.N != 0 || !strings.Contains(rr.Reason, "no rr sample recorded") {
		t.Errorf("host/rr %+v", rr)
	}
	if skipped := rows[0]; skipped.Reason != "only one node" || skipped.Metric != "rr" || skipped.Unit != "tps" {
		t.Errorf("skipped %+v", skipped)
	}
}

func TestCNIResourceRows(t *testing.T) {
	t.Parallel()
	res := func(comp Component, metric Metric, stat Stat, v float64, labels map[string]string) Sample {
		return Sample{CaseID: "idle", Window: Window{Kind: WindowIdle}, Component: comp, Metric: metric, Stat: stat, Value: v, Unit: "cores", Labels: labels}
	}
	node := map[string]string{CNILabelPath: "all", "node": "node-a", "series": "cadvisor-root"}
	pods := map[string]string{CNILabelPath: "same-node"}
	tests := []struct {
		name          string
		min, avg, max float64
		sparse        bool
	}{
		{"consistent", 0.49, 0.51, 0.53, false},
		{"the demo's idle row: avg above max", 0.492, 0.549, 0.528, true},
		{"avg below min", 0.6, 0.55, 0.7, true},
		{"avg equal to max up to rounding", 0.5, 0.53 * (1 + 1e-12), 0.53, false},
	}
	for _, tt := range tests {
		samples := []Sample{
			res(ComponentNode, "cpu", "min", tt.min, node), res(ComponentNode, "cpu", "avg", tt.avg, node), res(ComponentNode, "cpu", "max", tt.max, node),
			res(ComponentCNITest, "memory", "avg", 12, pods),
			{CaseID: "x", Window: Window{Kind: WindowIdle}, Component: ComponentApp, Metric: "cpu", Stat: "avg", Value: 1, Unit: "cores"},
		}
		rows := CNIResourceRows(Summarize(RunMeta{}, samples, nil, SummaryOptions{}))
		if len(rows) != 2 {
			t.Fatalf("%s: rows %+v", tt.name, rows)
		}
		var n CNIResourceRow
		for _, r := range rows {
			if r.Component == ComponentNode {
				n = r
			}
		}
		if n.TooSparse != tt.sparse || n.Node != "node-a" || n.Series != "cadvisor-root" || n.Path != "all" || n.Min == nil || *n.Avg != tt.avg {
			t.Errorf("%s: %+v (sparse %v, want %v)", tt.name, n, n.TooSparse, tt.sparse)
		}
	}
}

// TestCNIResourceRowsSources: the same path's figures from two sources, and one pod's, are separate rows.
func TestCNIResourceRowsSources(t *testing.T) {
	t.Parallel()
	res := func(v float64, labels map[string]string) Sample {
		return Sample{CaseID: "same-node/tcp", Window: Window{Kind: WindowTest}, Component: ComponentCNITest, Metric: "cpu", Stat: "avg", Value: v, Unit: "millicores", Labels: labels}
	}
	samples := []Sample{
		res(100, map[string]string{CNILabelPath: "same-node", CNILabelTest: "tcp", CNILabelSource: "prometheus"}),
		res(120, map[string]string{CNILabelPath: "same-node", CNILabelTest: "tcp", CNILabelSource: CNISourceCgroup}),
		res(70, map[string]string{CNILabelPath: "same-node", CNILabelTest: "tcp", CNILabelSource: CNISourceCgroup, CNILabelPod: "client"}),
	}
	rows := CNIResourceRows(Summarize(RunMeta{}, samples, nil, SummaryOptions{}))
	got := map[string]float64{}
	for _, r := range rows {
		got[r.Source+"/"+r.Pod] = *r.Avg
	}
	want := map[string]float64{"prometheus/": 100, CNISourceCgroup + "/": 120, CNISourceCgroup + "/client": 70}
	if len(rows) != 3 || !maps.Equal(got, want) {
		t.Fatalf("rows by source/pod %v, want %v", got, want)
	}
}
