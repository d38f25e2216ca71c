package nettool

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/scenario"
)

// iperf3DefaultUDPBitrate is what iperf3 sends at when -u is given without -b: 1 Mibit/s. Study B's "1.04 Mbit/s"
// UDP cells are this default, not a measurement.
const iperf3DefaultUDPBitrate = 1 << 20

// maxLossDisagreement is how far (percentage points) iperf3's packet-counted UDP loss may stray from the loss the
// byte counters imply before the byte-derived figure is used (iperf3 3.12 over-counts lost packets with --omit).
const maxLossDisagreement = 2.0

// maxCount bounds counters read as float64 (2^53: exact integers); iperf3 prints wrapped uint64s as 1.8e19.
const maxCount = 1 << 53

func iperf3Args(s Spec) []string {
	a := []string{"iperf3", "-J", "-c", s.Host, "-p", strconv.Itoa(s.Port), "-t", seconds(s.Duration)}
	switch s.Test {
	case scenario.CNITestUDP:
		// No -O for UDP: there is no slow start to skip, and iperf3 3.12 miscounts UDP loss with --omit.
		a = append(a, "-u", "-b", strings.TrimSpace(s.Bitrate))
		if s.PacketBytes > 0 {
			a = append(a, "-l", strconv.Itoa(s.PacketBytes))
		}
	default:
		if s.Omit > 0 {
			a = append(a, "-O", seconds(s.Omit))
		}
		a = append(a, "-P", strconv.Itoa(s.Streams))
	}
	if s.ServerOutput {
		a = append(a, "--get-server-output")
	}
	return a
}

// iperf3Doc is the part of iperf3 -J output meshbench reads. Numbers are float64 because iperf3 prints counters
// with floating-point formatting and, on the server side of UDP tests, sometimes as 1.8e19 (a wrapped uint64).
type iperf3Doc struct {
	Start struct {
		Connected []iperf3Conn `json:"connected"`
		Version   string       `json:"version"`
		TestStart *struct {
			Protocol      string  `json:"protocol"`
			NumStreams    float64 `json:"num_streams"`
			Blksize       float64 `json:"blksize"`
			Omit          float64 `json:"omit"`
			Duration      float64 `json:"duration"`
			Reverse       float64 `json:"reverse"`
			TargetBitrate float64 `json:"target_bitrate"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		Streams []struct {
			Sender *struct {
				MeanRTT float64 `json:"mean_rtt"`
				MinRTT  float64 `json:"min_rtt"`
				MaxRTT  float64 `json:"max_rtt"`
			} `json:"sender"`
		} `json:"streams"`
		SumSent     *iperf3Sum `json:"sum_sent"`
		SumReceived *iperf3Sum `json:"sum_received"`
		CPU         *struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
		SenderTCPCongestion string `json:"sender_tcp_congestion"`
	} `json:"end"`
	Error            string          `json:"error"`
	ServerOutputJSON json.RawMessage `json:"server_output_json"`
	ServerOutputText string          `json:"server_output_text"`
}

type iperf3Conn struct {
	LocalHost  string  `json:"local_host"`
	LocalPort  float64 `json:"local_port"`
	RemoteHost string  `json:"remote_host"`
	RemotePort float64 `json:"remote_port"`
}

type iperf3Sum struct {
	Seconds       float64 `json:"seconds"`
	Bytes         float64 `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   float64 `json:"retransmits"`
	JitterMs      float64 `json:"jitter_ms"`
	LostPackets   float64 `json:"lost_packets"`
	Packets       float64 `json:"packets"`
	LostPercent   float64 `json:"lost_percent"`
}

// decodeIperf3 reads iperf3 -J output and the checks common to TCP and UDP.
func decodeIperf3(out []byte, protocol string) (*iperf3Doc, error) {
	var d iperf3Doc
	if err := json.Unmarshal(out, &d); err != nil {
		return nil, fmt.Errorf("not iperf3 JSON (-J): %w (output starts %q)", err, head(out, 120))
	}
	if d.Error != "" {
		return nil, classify(ToolIperf3, d.Error, fmt.Errorf("iperf3: %s", d.Error))
	}
	ts := d.Start.TestStart
	if ts == nil {
		return nil, errors.New("no start.test_start: not a finished iperf3 test")
	}
	if !strings.EqualFold(ts.Protocol, protocol) {
		return nil, fmt.Errorf("the test ran %q, but %s was asked", ts.Protocol, protocol)
	}
	if ts.Reverse != 0 {
		return nil, errors.New("reverse (-R) test: meshbench measures client to server")
	}
	if d.End.SumReceived == nil || d.End.SumSent == nil {
		return nil, errors.New("no end.sum_sent/end.sum_received: the test did not finish")
	}
	return &d, nil
}

func endpoints(cs []iperf3Conn) []Endpoint {
	var out []Endpoint
	for _, c := range cs {
		out = append(out, Endpoint{LocalHost: c.LocalHost, LocalPort: int(c.LocalPort), RemoteHost: c.RemoteHost, RemotePort: int(c.RemotePort)})
	}
	return out
}

// serverTextRE matches the server's per-stream line: "[  5] local 10.0.0.2 port 5201 connected to 10.0.0.1 port 53488".
var serverTextRE = regexp.MustCompile(`(?m)^\[\s*\d+\]\s+local\s+(\S+)\s+port\s+(\d+)\s+connected\s+to\s+(\S+)\s+port\s+(\d+)`)

// serverEndpoints is the server's view, from server_output_json (server started with -J) or server_output_text.
func serverEndpoints(d *iperf3Doc) ([]Endpoint, error) {
	if len(d.ServerOutputJSON) > 0 && string(d.ServerOutputJSON) != "null" {
		var s struct {
			Start struct {
				Connected []iperf3Conn `json:"connected"`
			} `json:"start"`
		}
		if err := json.Unmarshal(d.ServerOutputJSON, &s); err != nil {
			return nil, fmt.Errorf("server_output_json: %w", err)
		}
		return endpoints(s.Start.Connected), nil
	}
	var out []Endpoint
	for _, m := range serverTextRE.FindAllStringSubmatch(d.ServerOutputText, -1) {
		lp, _ := strconv.Atoi(m[2])
		rp, _ := strconv.Atoi(m[4])
		out = append(out, Endpoint{LocalHost: m[1], LocalPort: lp, RemoteHost: m[3], RemotePort: rp})
	}
	return out, nil
}

// parseIperf3TCP reads `iperf3 -J` TCP output: goodput is end.sum_received (what arrived), not end.sum_sent.
// streams is the -P that was asked; 0 skips the check.
func parseIperf3TCP(out []byte, streams int) (Result, error) {
	d, err := decodeIperf3(out, "TCP")
	if err != nil {
		return Result{}, err
	}
	ts := d.Start.TestStart
	if streams > 0 && int(ts.NumStreams) != streams {
		return Result{}, fmt.Errorf("the test ran %v streams, but %d were asked", ts.NumStreams, streams)
	}
	rcv, snd := d.End.SumReceived, d.End.SumSent
	if snd.Retransmits > maxCount {
		return Result{}, fmt.Errorf("retransmits %v is not a count", snd.Retransmits)
	}
	r := Result{
		Tool: ToolIperf3, Test: scenario.CNITestTCP, Version: d.Start.Version,
		Seconds: rcv.Seconds, BitsPerSecond: rcv.BitsPerSecond, SenderBitsPerSecond: snd.BitsPerSecond,
		Streams: int(ts.NumStreams), Retransmits: int64(snd.Retransmits), CongestionSender: d.End.SenderTCPCongestion,
		Connected: endpoints(d.Start.Connected),
	}
	if d.End.CPU != nil {
		r.CPUHostPercent, r.CPURemotePercent = d.End.CPU.HostTotal, d.End.CPU.RemoteTotal
	}
	n := 0
	r.MinRTTMicros = math.Inf(1)
	for _, s := range d.End.Streams {
		if s.Sender == nil {
			continue
		}
		n++
		r.MeanRTTMicros += s.Sender.MeanRTT
		r.MinRTTMicros = math.Min(r.MinRTTMicros, s.Sender.MinRTT)
		r.MaxRTTMicros = math.Max(r.MaxRTTMicros, s.Sender.MaxRTT)
	}
	if n > 0 {
		r.MeanRTTMicros /= float64(n)
	} else {
		r.MinRTTMicros = 0
	}
	if r.ServerConnected, err = serverEndpoints(d); err != nil {
		return Result{}, err
	}
	if err := checkFinite(map[string]float64{
		"end.sum_received.bits_per_second": r.BitsPerSecond, "end.sum_sent.bits_per_second": r.SenderBitsPerSecond,
		"end.sum_received.seconds": r.Seconds, "end.sum_sent.retransmits": snd.Retransmits,
		"mean_rtt": r.MeanRTTMicros, "min_rtt": r.MinRTTMicros, "max_rtt": r.MaxRTTMicros,
		"cpu host_total": r.CPUHostPercent, "cpu remote_total": r.CPURemotePercent,
	}); err != nil {
		return Result{}, err
	}
	if rcv.Bytes <= 0 || r.BitsPerSecond <= 0 || r.Seconds <= 0 {
		return Result{}, fmt.Errorf("the server received nothing (%v bytes in %v s): the path is broken, not slow", rcv.Bytes, rcv.Seconds)
	}
	return r, nil
}

// parseIperf3UDP reads `iperf3 -J -u` output. The delivered rate is end.sum_received (end.sum and end.sum_sent are
// the SENDER's rate); loss and jitter come from the receiver too. wantBitrate is the -b that was asked (bit/s,
// 0 = unlimited): output whose target differs, in particular iperf3's 1 Mibit/s default, is refused.
func parseIperf3UDP(out []byte, wantBitrate float64) (Result, error) {
	d, err := decodeIperf3(out, "UDP")
	if err != nil {
		return Result{}, err
	}
	ts := d.Start.TestStart
	if ts.TargetBitrate != wantBitrate {
		if ts.TargetBitrate == iperf3DefaultUDPBitrate {
			return Result{}, fmt.Errorf("target_bitrate is iperf3's 1 Mibit/s default, but %s bit/s was asked: -b did not reach iperf3, and the default rate is not a measurement",
				strconv.FormatFloat(wantBitrate, 'f', -1, 64))
		}
		return Result{}, fmt.Errorf("target_bitrate is %s bit/s, but %s bit/s was asked",
			strconv.FormatFloat(ts.TargetBitrate, 'f', -1, 64), strconv.FormatFloat(wantBitrate, 'f', -1, 64))
	}
	rcv, snd := d.End.SumReceived, d.End.SumSent
	r := Result{
		Tool: ToolIperf3, Test: scenario.CNITestUDP, Version: d.Start.Version,
		Seconds: rcv.Seconds, BitsPerSecond: rcv.BitsPerSecond, SenderBitsPerSecond: snd.BitsPerSecond,
		Streams: int(ts.NumStreams), TargetBitsPerSecond: ts.TargetBitrate, PacketBytes: int(ts.Blksize),
		Packets: int64(rcv.Packets), LostPackets: int64(rcv.LostPackets), LossPercent: rcv.LostPercent,
		JitterMs: rcv.JitterMs, Connected: endpoints(d.Start.Connected),
	}
	if d.End.CPU != nil {
		r.CPUHostPercent, r.CPURemotePercent = d.End.CPU.HostTotal, d.End.CPU.RemoteTotal
	}
	if r.ServerConnected, err = serverEndpoints(d); err != nil {
		return Result{}, err
	}
	if err := checkFinite(map[string]float64{
		"end.sum_received.bits_per_second": r.BitsPerSecond, "end.sum_sent.bits_per_second": r.SenderBitsPerSecond,
		"end.sum_received.seconds": r.Seconds, "end.sum_received.lost_percent": r.LossPercent,
		"end.sum_received.jitter_ms": r.JitterMs, "end.sum_received.packets": rcv.Packets,
		"end.sum_received.lost_packets": rcv.LostPackets, "end.sum_sent.bytes": snd.Bytes,
		"cpu host_total": r.CPUHostPercent, "cpu remote_total": r.CPURemotePercent,
	}); err != nil {
		return Result{}, err
	}
	if rcv.Packets > maxCount || rcv.LostPackets > maxCount || snd.Bytes > maxCount*64 || rcv.LostPackets > rcv.Packets {
		return Result{}, fmt.Errorf("packet counters %v lost of %v are not counts", rcv.LostPackets, rcv.Packets)
	}
	if snd.Bytes <= 0 || rcv.Packets <= 0 || r.Seconds <= 0 {
		return Result{}, fmt.Errorf("nothing was sent (%v bytes, %v packets): not a measurement", snd.Bytes, rcv.Packets)
	}
	if r.LossPercent > 100 {
		return Result{}, fmt.Errorf("end.sum_received.lost_percent is %v: not a percentage", r.LossPercent)
	}
	if rcv.Bytes > snd.Bytes*1.01 {
		return Result{}, fmt.Errorf("the receiver counted more bytes (%v) than were sent (%v): not a consistent result", rcv.Bytes, snd.Bytes)
	}
	byteLoss := 100 * (1 - rcv.Bytes/snd.Bytes)
	if math.Abs(byteLoss-r.LossPercent) > maxLossDisagreement {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"iperf3 reported %.2f%% UDP loss but its byte counters imply %.2f%% (iperf3 3.12 over-counts lost packets with --omit): using %.2f%%",
			r.LossPercent, byteLoss, byteLoss))
		r.LossPercent = math.Max(0, byteLoss)
		r.LostPackets = int64(math.Round(float64(r.Packets) * r.LossPercent / 100))
	}
	if rcv.Bytes <= 0 || r.BitsPerSecond <= 0 {
		return Result{}, fmt.Errorf("the server received none of %v datagrams: the path drops UDP at %s bit/s", rcv.Packets,
			strconv.FormatFloat(wantBitrate, 'f', -1, 64))
	}
	return r, nil
}

func head(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
