package cni

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Label keys of every sample.
const (
	labelPath = "path"
	labelTest = "test"
	labelTool = "tool"
)

// headline is the metric a table cell shows for a test (results.CNIHeadline).
func headline(t scenario.CNITest) (results.Metric, results.Unit) {
	return results.CNIHeadline(string(t))
}

// labels of a case's samples.
func (c pathTest) labels() map[string]string {
	return map[string]string{labelPath: string(c.Path), labelTest: string(c.Test), labelTool: string(c.Tool)}
}

// measurementSamples turns one parsed sample into results samples. It is pure.
func measurementSamples(c pathTest, n int, w results.Window, r nettool.Result) []results.Sample {
	var out []results.Sample
	add := func(metric results.Metric, stat results.Stat, v float64, unit results.Unit) {
		out = append(out, results.Sample{Repetition: n, Window: w, Source: string(r.Tool), Component: results.ComponentCNITest,
			Metric: metric, Stat: stat, Value: v, Unit: unit, Labels: c.labels()})
	}
	switch c.Test {
	case scenario.CNITestTCP:
		add(results.MetricThroughput, results.StatValue, r.BitsPerSecond/1e9, results.UnitGbps)
		add(results.MetricRetransmits, results.StatValue, float64(r.Retransmits), results.UnitCount)
		if r.MeanRTTMicros > 0 {
			add(results.MetricRTT, results.StatAvg, r.MeanRTTMicros/1e3, results.UnitMs)
		}
	case scenario.CNITestUDP:
		add(results.MetricThroughput, results.StatValue, r.BitsPerSecond/1e6, results.UnitMbps)
		add(results.MetricSent, results.StatValue, r.SenderBitsPerSecond/1e6, results.UnitMbps)
		add(results.MetricLoss, results.StatValue, r.LossPercent, results.UnitPct)
		add(results.MetricJitter, results.StatValue, r.JitterMs, results.UnitMs)
	case scenario.CNITestRR, scenario.CNITestCRR:
		metric, unit := headline(c.Test)
		add(metric, results.StatValue, r.TransactionsPerSecond, unit)
		for _, s := range r.Latency.Stats() {
			add(results.MetricLatency, results.Stat(s.Name), s.Value, results.UnitMs)
		}
		add(results.MetricErrors, results.StatValue, float64(r.Errors), results.UnitCount)
	}
	return out
}

// expect is what the connection of a sample must look like.
type expect struct {
	// Dialled is the address the client connects to (pod IP, ClusterIP or node IP).
	Dialled string
	// Backend is the server's own address: for the Service path the backend pod's IP, never the ClusterIP.
	Backend string
	// Service marks the Service path: the server must see the connection on the backend address while the client
	// dialled the ClusterIP.
	Service bool
}

// checkConnection verifies, from iperf3's own records, that the connection went where the path says: the client
// dialled Expect.Dialled and the server that answered saw it on Expect.Backend (which, for the Service path, proves
// kube-proxy's DNAT to the backend). Results of other tools carry no such records and pass. It is pure.
func checkConnection(r nettool.Result, e expect) error {
	if r.Tool != nettool.ToolIperf3 {
		return nil
	}
	var errs []error
	if len(r.Connected) == 0 {
		errs = append(errs, errors.New("iperf3 recorded no connection (start.connected is empty)"))
	}
	for _, c := range r.Connected {
		if !sameAddr(c.RemoteHost, e.Dialled) {
			errs = append(errs, fmt.Errorf("the client connected to %s, not %s", c.RemoteHost, e.Dialled))
		}
	}
	if len(r.ServerConnected) == 0 {
		errs = append(errs, errors.New("no server-side record of the connection (iperf3 --get-server-output gave nothing)"))
	}
	for _, s := range r.ServerConnected {
		if !sameAddr(s.LocalHost, e.Backend) {
			errs = append(errs, fmt.Errorf("the server saw the connection on %s, not on the backend address %s", s.LocalHost, e.Backend))
		}
	}
	if e.Service && sameAddr(e.Dialled, e.Backend) {
		errs = append(errs, fmt.Errorf("the Service path dialled the backend %s directly", e.Backend))
	}
	return errors.Join(errs...)
}

// sameAddr compares IP addresses textually normalised (IPv4-mapped IPv6 equals IPv4).
func sameAddr(a, b string) bool {
	pa, errA := netip.ParseAddr(strings.TrimSpace(a))
	pb, errB := netip.ParseAddr(strings.TrimSpace(b))
	if errA != nil || errB != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	return pa.Unmap() == pb.Unmap()
}
