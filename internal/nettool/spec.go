// Package nettool builds the command lines of meshbench's pod network tests (iperf3, netperf, the agent's
// builtin RR/CRR) and parses their output, purely: Args(spec) gives the argv, Parse(spec, output) a Result, refusing
// output that does not match what was asked. What each tool reports: docs/cni.md ("Tools").
package nettool

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/scenario"
)

// Tool is the program that produced a result.
type Tool string

// Tools.
const (
	ToolIperf3  Tool = "iperf3"
	ToolNetperf Tool = "netperf"
	ToolBuiltin Tool = "builtin-fortio" // meshbench-agent rr|crr on fortio's periodic engine
)

// Ports the servers listen on (the orchestration starts them; Args only needs them for defaults).
const (
	DefaultIperf3Port      = 5201
	DefaultNetserverPort   = 4444 // netserver -p 4444 (control connection), as in study B
	DefaultNetperfDataPort = 4445 // pinned data port so a ClusterIP Service can carry netperf tests
	DefaultEchoPort        = 8078 // meshbench-agent serve --tcp-port
)

// AgentBinary is the agent's path inside its image.
const AgentBinary = "meshbench-agent"

// Spec is one test invocation.
type Spec struct {
	Test scenario.CNITest `json:"test"`
	Tool Tool             `json:"tool"`
	// Host and Port are the server (pod IP, ClusterIP or node IP); Port 0 takes the tool's default.
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	// DataPort pins netperf's data connection (test-specific -P ,port) so it can go through a Service; 0 = let
	// netserver pick (pod-to-pod only).
	DataPort int `json:"dataPort,omitempty"`
	// Duration of the test; Omit is cut from the start of iperf3 TCP tests (-O).
	Duration time.Duration `json:"duration"`
	Omit     time.Duration `json:"omit,omitempty"`
	// Streams is the number of parallel iperf3 streams (-P).
	Streams int `json:"streams,omitempty"`
	// Bitrate is the iperf3 UDP target (-b), e.g. "1G" (decimal) or "0" (unlimited). Required for UDP.
	Bitrate string `json:"bitrate,omitempty"`
	// PacketBytes is the UDP datagram size (-l); 0 = iperf3's default.
	PacketBytes int `json:"packetBytes,omitempty"`
	// RequestBytes and ResponseBytes size the RR/CRR transactions (default 100 each).
	RequestBytes  int `json:"requestBytes,omitempty"`
	ResponseBytes int `json:"responseBytes,omitempty"`
	// Connections is the builtin tool's number of concurrent connections (default 1, like netperf).
	Connections int `json:"connections,omitempty"`
	// LocalPorts is the built-in TCP_CRR client's local port range "LO-HI" ("" = the agent's default). Runs towards
	// one backend over different paths need disjoint ranges (see meshbench-agent crr).
	LocalPorts string `json:"localPorts,omitempty"`
	// ServerOutput asks iperf3 for the server's view of the test (--get-server-output), which proves which server
	// answered (the Service path check).
	ServerOutput bool `json:"serverOutput,omitempty"`
}

// withDefaults fills the zero fields.
func (s Spec) withDefaults() Spec {
	if s.Port == 0 {
		switch {
		case s.Tool == ToolIperf3:
			s.Port = DefaultIperf3Port
		case s.Tool == ToolNetperf:
			s.Port = DefaultNetserverPort
		default:
			s.Port = DefaultEchoPort
		}
	}
	if s.Streams == 0 {
		s.Streams = 1
	}
	if s.RequestBytes == 0 {
		s.RequestBytes = 100
	}
	if s.ResponseBytes == 0 {
		s.ResponseBytes = 100
	}
	if s.Connections == 0 {
		s.Connections = 1
	}
	return s
}

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	s = s.withDefaults()
	var errs []error
	for _, check := range []func() []error{s.toolProblems, s.targetProblems, s.sizeProblems} {
		errs = append(errs, check()...)
	}
	return errors.Join(errs...)
}

// toolProblems: the test is known and the tool can run it.
func (s Spec) toolProblems() []error {
	switch s.Test {
	case scenario.CNITestTCP, scenario.CNITestUDP:
		if s.Tool != ToolIperf3 {
			return []error{fmt.Errorf("test %s needs tool iperf3, not %q", s.Test, s.Tool)}
		}
	case scenario.CNITestRR, scenario.CNITestCRR:
		if s.Tool != ToolNetperf && s.Tool != ToolBuiltin {
			return []error{fmt.Errorf("test %s needs tool netperf or %s, not %q", s.Test, ToolBuiltin, s.Tool)}
		}
	default:
		return []error{fmt.Errorf("unknown test %q", s.Test)}
	}
	return nil
}

// targetProblems: host, ports, and the timing of the test (whole seconds, the omitted start shorter than the test).
func (s Spec) targetProblems() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(s.Host) == "" || strings.ContainsAny(s.Host, " \t\n") {
		add("host %q: must be a host name or IP", s.Host)
	}
	if s.Port < 1 || s.Port > 65535 {
		add("port %d: must be 1-65535", s.Port)
	}
	if s.DataPort < 0 || s.DataPort > 65535 {
		add("data port %d: must be 0-65535", s.DataPort)
	}
	if s.Duration < time.Second || s.Duration%time.Second != 0 {
		add("duration %s: must be whole seconds >= 1s", s.Duration)
	}
	if s.Omit < 0 || s.Omit%time.Second != 0 || (s.Omit > 0 && s.Omit >= s.Duration) {
		add("omit %s: must be whole seconds, >= 0 and shorter than the duration", s.Omit)
	}
	if s.Streams < 1 || s.Streams > 128 {
		add("streams %d: must be 1-128", s.Streams)
	}
	return errs
}

// sizeProblems: the UDP rate and datagram, the transaction sizes (equal for the built-in echo), the local port
// range and the connections.
func (s Spec) sizeProblems() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Test == scenario.CNITestUDP {
		if _, err := parseBitrate(s.Bitrate); err != nil {
			add("udp bitrate: %w", err)
		}
	}
	if s.PacketBytes < 0 || s.PacketBytes > 65507 {
		add("packet bytes %d: must be 0-65507", s.PacketBytes)
	}
	if s.RequestBytes < 1 || s.ResponseBytes < 1 || s.RequestBytes > 1<<20 || s.ResponseBytes > 1<<20 {
		add("request/response bytes %d/%d: must be 1-1048576", s.RequestBytes, s.ResponseBytes)
	}
	if s.Tool == ToolBuiltin && s.RequestBytes != s.ResponseBytes {
		add("request/response bytes %d/%d: the built-in tool talks to an echo server, so both must be equal (use netperf for asymmetric sizes)",
			s.RequestBytes, s.ResponseBytes)
	}
	if s.LocalPorts != "" && !localPortsRE.MatchString(s.LocalPorts) {
		add("local ports %q: want LO-HI", s.LocalPorts)
	}
	if s.Connections < 1 || s.Connections > 1024 {
		add("connections %d: must be 1-1024", s.Connections)
	}
	return errs
}

var localPortsRE = regexp.MustCompile(`^[0-9]{4,5}-[0-9]{4,5}$`)

// parseBitrate reads an iperf3 rate in bit/s with scenario.ParseBitrate, the one bitrate parser (decimal K/M/G/T
// suffixes as iperf3 reads them, "0" = unlimited, at most 1T, whole bit/s), as the float the iperf3 JSON carries.
func parseBitrate(s string) (float64, error) {
	v, err := scenario.ParseBitrate(s)
	return float64(v), err
}

// seconds renders a whole-second duration for iperf3/netperf flags.
func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// Args is the argv (program first) that runs spec in a pod. The spec must be valid (Validate); Args itself never
// fails so that it stays a pure, table-testable mapping.
func Args(s Spec) []string {
	s = s.withDefaults()
	switch {
	case s.Tool == ToolIperf3:
		return iperf3Args(s)
	case s.Tool == ToolNetperf:
		return netperfArgs(s)
	default:
		return builtinArgs(s)
	}
}

// Parse turns the tool's output for spec into a Result, or says why the output is not a measurement.
func Parse(s Spec, output []byte) (Result, error) {
	s = s.withDefaults()
	var (
		r   Result
		err error
	)
	switch {
	case s.Tool == ToolIperf3 && s.Test == scenario.CNITestTCP:
		r, err = parseIperf3TCP(output, s.Streams)
	case s.Tool == ToolIperf3 && s.Test == scenario.CNITestUDP:
		var want float64
		want, err = parseBitrate(s.Bitrate)
		if err == nil {
			r, err = parseIperf3UDP(output, want)
		}
	case s.Tool == ToolNetperf && (s.Test == scenario.CNITestRR || s.Test == scenario.CNITestCRR):
		r, err = parseNetperf(output)
		r.Test = s.Test
	case s.Tool == ToolBuiltin && (s.Test == scenario.CNITestRR || s.Test == scenario.CNITestCRR):
		r, err = ParseBuiltin(output, s.Test)
	default:
		return Result{}, fmt.Errorf("no parser for test %q with tool %q", s.Test, s.Tool)
	}
	if err != nil {
		return Result{}, fmt.Errorf("parse %s %s output: %w", s.Tool, s.Test, err)
	}
	return r, nil
}
