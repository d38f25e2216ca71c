package nettool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/scenario"
)

// Builtin test names, as netperf calls them.
const (
	BuiltinTestRR  = "TCP_RR"
	BuiltinTestCRR = "TCP_CRR"
)

// BuiltinResult is the one JSON document `meshbench-agent rr|crr --json` prints. The agent and this parser share
// the type, so the format cannot drift.
type BuiltinResult struct {
	Tool             string  `json:"tool"` // always ToolBuiltin
	Test             string  `json:"test"` // BuiltinTestRR | BuiltinTestCRR
	Target           string  `json:"target"`
	Connections      int     `json:"connections"`
	RequestBytes     int     `json:"requestBytes"`
	ResponseBytes    int     `json:"responseBytes"`
	RequestedSeconds float64 `json:"requestedSeconds"`
	Seconds          float64 `json:"seconds"` // actual run time
	// Transactions completed successfully, and their rate over Seconds.
	Transactions          int64   `json:"transactions"`
	TransactionsPerSecond float64 `json:"transactionsPerSecond"`
	// Errors are failed transactions (connect, write, read, short or mismatched echo), by kind.
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"errorKinds,omitempty"`
	// Sockets opened: Connections for TCP_RR without errors, one per transaction for TCP_CRR.
	Sockets int64 `json:"sockets"`
	// LatencyMs is the transaction latency distribution (fortio histogram, Resolution in seconds).
	LatencyMs     BuiltinLatency `json:"latencyMs"`
	Resolution    float64        `json:"resolutionSeconds"`
	FortioVersion string         `json:"fortioVersion,omitempty"`
}

// BuiltinLatency is in milliseconds.
type BuiltinLatency struct {
	Avg  float64 `json:"avg"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
}

// builtinTestName maps a scenario test to the agent's subcommand and the netperf-style name.
func builtinTestName(t scenario.CNITest) (sub, name string) {
	if t == scenario.CNITestCRR {
		return "crr", BuiltinTestCRR
	}
	return "rr", BuiltinTestRR
}

func builtinArgs(s Spec) []string {
	sub, _ := builtinTestName(s.Test)
	a := []string{AgentBinary, sub, "--target", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)),
		"--duration", s.Duration.String(), "--connections", strconv.Itoa(s.Connections),
		"--request-bytes", strconv.Itoa(s.RequestBytes), "--json"}
	if s.Test == scenario.CNITestCRR && s.LocalPorts != "" {
		a = append(a, "--local-ports", s.LocalPorts)
	}
	return a
}

// ParseBuiltin reads the agent's JSON for test (rr or crr). A run without one successful transaction is an error;
// failed transactions are reported as Errors and a warning.
func ParseBuiltin(out []byte, test scenario.CNITest) (Result, error) {
	var b BuiltinResult
	// Unknown fields are allowed: a newer agent image may report more than this meshbench knows.
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(string(out))))
	if err := dec.Decode(&b); err != nil {
		return Result{}, fmt.Errorf("not meshbench-agent JSON: %w (output starts %q)", err, head(out, 120))
	}
	if dec.More() {
		return Result{}, errors.New("more than one JSON document in the agent output")
	}
	if b.Tool != string(ToolBuiltin) {
		return Result{}, fmt.Errorf("tool is %q, not %q", b.Tool, ToolBuiltin)
	}
	if _, want := builtinTestName(test); b.Test != want {
		return Result{}, fmt.Errorf("the agent ran %q, but %s was asked", b.Test, want)
	}
	l := b.LatencyMs
	if err := checkFinite(map[string]float64{
		"seconds": b.Seconds, "transactionsPerSecond": b.TransactionsPerSecond, "transactions": float64(b.Transactions),
		"errors": float64(b.Errors), "sockets": float64(b.Sockets), "latencyMs.avg": l.Avg, "latencyMs.min": l.Min,
		"latencyMs.max": l.Max, "latencyMs.p50": l.P50, "latencyMs.p90": l.P90, "latencyMs.p99": l.P99,
		"latencyMs.p99.9": l.P999,
	}); err != nil {
		return Result{}, err
	}
	if b.Transactions <= 0 || b.TransactionsPerSecond <= 0 || b.Seconds <= 0 {
		// Not one transaction: the connection was never usable, nothing was measured.
		return Result{}, &SetupError{Tool: ToolBuiltin, Err: fmt.Errorf("no transaction completed (%d errors: %s)", b.Errors, errorKinds(b.ErrorKinds))}
	}
	r := Result{
		Tool: ToolBuiltin, Test: test, Version: "fortio " + b.FortioVersion, Seconds: b.Seconds,
		TransactionsPerSecond: b.TransactionsPerSecond, Transactions: b.Transactions, Errors: b.Errors,
		Sockets: b.Sockets, RequestBytes: b.RequestBytes, ResponseBytes: b.ResponseBytes,
		Latency: &Latency{Mean: ptr(l.Avg), Min: ptr(l.Min), Max: ptr(l.Max), P50: ptr(l.P50), P90: ptr(l.P90),
			P99: ptr(l.P99), P999: ptr(l.P999)},
	}
	if b.Errors > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d transactions failed (%s)", b.Errors, b.Errors+b.Transactions,
			errorKinds(b.ErrorKinds)))
	}
	return r, nil
}

func errorKinds(m map[string]int64) string {
	if len(m) == 0 {
		return "no details"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, "; ")
}
