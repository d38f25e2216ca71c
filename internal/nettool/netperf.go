package nettool

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/scenario"
)

// netperfSelectors are the omni output selectors meshbench asks for (netperf 2.7.x, test-specific -o).
var netperfSelectors = []string{
	"THROUGHPUT", "THROUGHPUT_UNITS", "ELAPSED_TIME", "MEAN_LATENCY", "MIN_LATENCY", "MAX_LATENCY",
	"P50_LATENCY", "P90_LATENCY", "P99_LATENCY", "REQUEST_SIZE", "RESPONSE_SIZE",
}

// netperfHumanNames maps netperf 2.7's CSV header cells (the selector's display lines joined by spaces, see
// nettest_omni.c print_omni_init_list) to the selector mnemonics that -k prints.
var netperfHumanNames = map[string]string{
	"throughput":                           "THROUGHPUT",
	"throughput units":                     "THROUGHPUT_UNITS",
	"elapsed time (sec)":                   "ELAPSED_TIME",
	"mean latency microseconds":            "MEAN_LATENCY",
	"minimum latency microseconds":         "MIN_LATENCY",
	"maximum latency microseconds":         "MAX_LATENCY",
	"50th percentile latency microseconds": "P50_LATENCY",
	"90th percentile latency microseconds": "P90_LATENCY",
	"99th percentile latency microseconds": "P99_LATENCY",
	"request size bytes":                   "REQUEST_SIZE",
	"response size bytes":                  "RESPONSE_SIZE",
	"transaction rate tran/s":              "TRANSACTION_RATE",
}

func netperfArgs(s Spec) []string {
	test := "TCP_RR"
	if s.Test == scenario.CNITestCRR {
		test = "TCP_CRR"
	}
	a := []string{"netperf", "-H", s.Host, "-p", strconv.Itoa(s.Port), "-t", test, "-l", seconds(s.Duration),
		"--", "-r", strconv.Itoa(s.RequestBytes) + "," + strconv.Itoa(s.ResponseBytes),
		"-o", strings.Join(netperfSelectors, ",")}
	if s.DataPort > 0 {
		// Only the remote data port: CRR opens a new connection per transaction from a fresh local port.
		a = append(a, "-P", ","+strconv.Itoa(s.DataPort))
	}
	return a
}

var keyvalRE = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=(.*)$`)

// parseNetperf reads netperf 2.7.x omni output for TCP_RR/TCP_CRR, CSV (-o) or keyval (-k), latencies in ms. Values
// netperf prints as negative (statistics it did not keep) are left out, never reported as numbers.
func parseNetperf(out []byte) (Result, error) {
	kv, err := netperfValues(out)
	if err != nil {
		return Result{}, classify(ToolNetperf, string(out), err)
	}
	// netperf's test output does not name its version: `netperf -V` does (ParseNetperfVersion; run.json records it).
	r := Result{Tool: ToolNetperf}
	units := strings.TrimSpace(kv["THROUGHPUT_UNITS"])
	if units != "" && !strings.EqualFold(units, "Trans/s") && !strings.EqualFold(units, "Tran/s") {
		return Result{}, fmt.Errorf("throughput units are %q, not Trans/s: not a request/response test", units)
	}
	tps, ok, err := netperfFloat(kv, "THROUGHPUT")
	if err != nil {
		return Result{}, err
	}
	if !ok {
		if tps, ok, err = netperfFloat(kv, "TRANSACTION_RATE"); err != nil || !ok {
			return Result{}, errors.Join(errors.New("no THROUGHPUT in netperf output"), err)
		}
	}
	if tps <= 0 {
		return Result{}, &SetupError{Tool: ToolNetperf, Err: fmt.Errorf("throughput is %v transactions/s: no transaction completed", tps)}
	}
	r.TransactionsPerSecond = tps
	if v, ok, err := netperfFloat(kv, "ELAPSED_TIME"); err != nil {
		return Result{}, err
	} else if ok {
		r.Seconds = v
		r.Transactions = int64(math.Round(tps * v))
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"REQUEST_SIZE", &r.RequestBytes}, {"RESPONSE_SIZE", &r.ResponseBytes}} {
		if v, ok, err := netperfFloat(kv, f.key); err != nil {
			return Result{}, err
		} else if ok && v >= 0 && v <= 1<<30 {
			*f.dst = int(v)
		}
	}
	lat := &Latency{}
	have := false
	for _, f := range []struct {
		key string
		dst **float64
	}{{"MEAN_LATENCY", &lat.Mean}, {"MIN_LATENCY", &lat.Min}, {"MAX_LATENCY", &lat.Max},
		{"P50_LATENCY", &lat.P50}, {"P90_LATENCY", &lat.P90}, {"P99_LATENCY", &lat.P99}} {
		v, ok, err := netperfFloat(kv, f.key)
		if err != nil {
			return Result{}, err
		}
		if !ok || v < 0 {
			continue
		}
		*f.dst = ptr(v / 1000) // µs -> ms
		have = true
	}
	if have {
		r.Latency = lat
	} else {
		r.Warnings = append(r.Warnings, "netperf reported no latency statistics")
	}
	return r, nil
}

// netperfFloat reads one numeric value; ok is false when absent. NaN and infinities are errors.
func netperfFloat(kv map[string]string, key string) (float64, bool, error) {
	s, ok := kv[key]
	if !ok || strings.TrimSpace(s) == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q: %w", key, s, err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("%s is %v: not a measurement", key, v)
	}
	return v, true, nil
}

// netperfValues returns selector mnemonic -> value text from CSV or keyval output.
func netperfValues(out []byte) (map[string]string, error) {
	text := strings.ReplaceAll(string(out), "\r", "")
	lines := strings.Split(text, "\n")
	kv := map[string]string{}
	for _, l := range lines {
		if m := keyvalRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			kv[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if _, ok := kv["THROUGHPUT"]; ok {
		return kv, nil
	}
	for i, l := range lines {
		header, err := csvLine(l)
		if err != nil || len(header) == 0 || !isNetperfHeader(header) {
			continue
		}
		if i+1 >= len(lines) {
			break
		}
		values, err := csvLine(lines[i+1])
		if err != nil {
			return nil, fmt.Errorf("netperf values line: %w", err)
		}
		if len(values) != len(header) {
			return nil, fmt.Errorf("netperf printed %d header cells but %d values", len(header), len(values))
		}
		kv = map[string]string{}
		for j, h := range header {
			name := strings.ToLower(strings.Join(strings.Fields(h), " "))
			if key, ok := netperfHumanNames[name]; ok {
				kv[key] = values[j]
			}
		}
		return kv, nil
	}
	return nil, fmt.Errorf("no netperf omni result (CSV header or THROUGHPUT=) in the output: %q", head(out, 200))
}

func isNetperfHeader(cells []string) bool {
	for _, c := range cells {
		if strings.EqualFold(strings.TrimSpace(c), "Throughput") || strings.EqualFold(strings.TrimSpace(c), "Transaction Rate Tran/s") {
			return true
		}
	}
	return false
}

func csvLine(l string) ([]string, error) {
	r := csv.NewReader(bytes.NewReader([]byte(l)))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	rec, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	return rec, err
}
