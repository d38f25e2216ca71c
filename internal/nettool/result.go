package nettool

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/meshbench/meshbench/scenario"
)

// Result is one parsed test sample. Rates are in the tool's base units (bit/s, transactions/s); latencies in ms.
type Result struct {
	Tool    Tool             `json:"tool"`
	Test    scenario.CNITest `json:"test"`
	Version string           `json:"version,omitempty"` // e.g. "iperf 3.12", "fortio 1.75.3"
	Seconds float64          `json:"seconds"`           // measured time (receiver side for iperf3)

	// iperf3 TCP and UDP.
	BitsPerSecond       float64 `json:"bitsPerSecond,omitempty"`       // receiver side: TCP goodput, UDP delivered rate
	SenderBitsPerSecond float64 `json:"senderBitsPerSecond,omitempty"` // what the client sent
	Streams             int     `json:"streams,omitempty"`
	CPUHostPercent      float64 `json:"cpuHostPercent,omitempty"`   // client (iperf3 end.cpu_utilization_percent.host_total)
	CPURemotePercent    float64 `json:"cpuRemotePercent,omitempty"` // server
	// TCP.
	Retransmits      int64   `json:"retransmits,omitempty"`
	MeanRTTMicros    float64 `json:"meanRTTMicros,omitempty"` // mean over streams of the sender's mean_rtt
	MinRTTMicros     float64 `json:"minRTTMicros,omitempty"`
	MaxRTTMicros     float64 `json:"maxRTTMicros,omitempty"`
	CongestionSender string  `json:"congestionSender,omitempty"`
	// UDP.
	TargetBitsPerSecond float64 `json:"targetBitsPerSecond,omitempty"` // start.test_start.target_bitrate (0 = unlimited)
	PacketBytes         int     `json:"packetBytes,omitempty"`         // start.test_start.blksize
	Packets             int64   `json:"packets,omitempty"`
	LostPackets         int64   `json:"lostPackets,omitempty"`
	LossPercent         float64 `json:"lossPercent,omitempty"`
	JitterMs            float64 `json:"jitterMs,omitempty"`
	// Connected is the client's view of its connections (remote = the address dialled, e.g. a ClusterIP);
	// ServerConnected is the server's view (local = the backend's own address), present with --get-server-output.
	Connected       []Endpoint `json:"connected,omitempty"`
	ServerConnected []Endpoint `json:"serverConnected,omitempty"`

	// TCP_RR / TCP_CRR.
	TransactionsPerSecond float64  `json:"transactionsPerSecond,omitempty"`
	Transactions          int64    `json:"transactions,omitempty"`
	Latency               *Latency `json:"latency,omitempty"`
	Errors                int64    `json:"errors,omitempty"`
	Sockets               int64    `json:"sockets,omitempty"`
	RequestBytes          int      `json:"requestBytes,omitempty"`
	ResponseBytes         int      `json:"responseBytes,omitempty"`

	// Warnings are caveats about this sample that a reader should see (e.g. a tool bug worked around).
	Warnings []string `json:"warnings,omitempty"`
}

// Latency is a request/response latency distribution in milliseconds. Fields a tool does not report are nil
// (netperf has no p99.9), never a misleading 0.
type Latency struct {
	Mean *float64 `json:"mean,omitempty"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
	P50  *float64 `json:"p50,omitempty"`
	P90  *float64 `json:"p90,omitempty"`
	P99  *float64 `json:"p99,omitempty"`
	P999 *float64 `json:"p99.9,omitempty"`
}

// Stats lists the present latency statistics in a fixed order, named as results.Sample.Stat values.
func (l *Latency) Stats() []NamedValue {
	if l == nil {
		return nil
	}
	var out []NamedValue
	for _, s := range []struct {
		n string
		v *float64
	}{{"avg", l.Mean}, {"min", l.Min}, {"max", l.Max}, {"p50", l.P50}, {"p90", l.P90}, {"p99", l.P99}, {"p99.9", l.P999}} {
		if s.v != nil {
			out = append(out, NamedValue{Name: s.n, Value: *s.v})
		}
	}
	return out
}

// NamedValue is one statistic.
type NamedValue struct {
	Name  string
	Value float64
}

// Endpoint is one connection as seen by one side.
type Endpoint struct {
	LocalHost  string `json:"localHost"`
	LocalPort  int    `json:"localPort"`
	RemoteHost string `json:"remoteHost"`
	RemotePort int    `json:"remotePort"`
}

// gbps is the receiver-side rate in Gbit/s.
func (r Result) gbps() float64 { return r.BitsPerSecond / 1e9 }

func ptr(v float64) *float64 { return &v }

// checkFinite refuses NaN, infinities and negative values: tools print garbage on some failures, and a
// benchmark must not average it.
func checkFinite(fields map[string]float64) error {
	var errs []error
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("%s is %v: not a measurement", k, v))
		}
	}
	return errors.Join(errs...)
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
