package nettool

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/scenario"
)

// Seeds: every fixture of the kind (captured or hand-written) plus the corpus committed under testdata/fuzz/<Name>/.
func addFixtureSeeds(f *testing.F, prefix string) {
	f.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// checkResult is the contract of every successful parse: finite, non-negative numbers and a positive rate.
func checkResult(t *testing.T, r Result) {
	t.Helper()
	nums := map[string]float64{
		"Seconds": r.Seconds, "BitsPerSecond": r.BitsPerSecond, "SenderBitsPerSecond": r.SenderBitsPerSecond,
		"CPUHostPercent": r.CPUHostPercent, "CPURemotePercent": r.CPURemotePercent, "MeanRTTMicros": r.MeanRTTMicros,
		"MinRTTMicros": r.MinRTTMicros, "MaxRTTMicros": r.MaxRTTMicros, "TargetBitsPerSecond": r.TargetBitsPerSecond,
		"LossPercent": r.LossPercent, "JitterMs": r.JitterMs, "TransactionsPerSecond": r.TransactionsPerSecond,
	}
	for _, s := range r.Latency.Stats() {
		nums["latency "+s.Name] = s.Value
	}
	for k, v := range nums {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("%s = %v in a successful parse: %+v", k, v, r)
		}
	}
	if r.BitsPerSecond <= 0 && r.TransactionsPerSecond <= 0 {
		t.Fatalf("successful parse without a rate: %+v", r)
	}
	if r.LossPercent > 100 {
		t.Fatalf("loss %v%%", r.LossPercent)
	}
	if r.Errors < 0 || r.Sockets < 0 || r.Transactions < 0 || r.Retransmits < 0 || r.LostPackets < 0 {
		t.Fatalf("negative counter: %+v", r)
	}
}

func FuzzParseIperf3TCP(f *testing.F) {
	addFixtureSeeds(f, "iperf3-")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseIperf3TCP(b, 0)
		if err != nil {
			return
		}
		checkResult(t, r)
		if r.Test != scenario.CNITestTCP || r.BitsPerSecond <= 0 {
			t.Fatalf("bad tcp result %+v", r)
		}
	})
}

func FuzzParseIperf3UDP(f *testing.F) {
	addFixtureSeeds(f, "iperf3-")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, want := range []float64{0, 1e9, 5e8, iperf3DefaultUDPBitrate} {
			r, err := parseIperf3UDP(b, want)
			if err != nil {
				continue
			}
			checkResult(t, r)
			if r.TargetBitsPerSecond != want {
				t.Fatalf("accepted target %v when %v was asked", r.TargetBitsPerSecond, want)
			}
		}
	})
}

func FuzzParseNetperf(f *testing.F) {
	addFixtureSeeds(f, "netperf-")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseNetperf(b)
		if err != nil {
			return
		}
		checkResult(t, r)
		if r.TransactionsPerSecond <= 0 {
			t.Fatalf("no rate: %+v", r)
		}
	})
}

func FuzzParseBuiltin(f *testing.F) {
	addFixtureSeeds(f, "builtin-")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, test := range []scenario.CNITest{scenario.CNITestRR, scenario.CNITestCRR} {
			r, err := ParseBuiltin(b, test)
			if err != nil {
				continue
			}
			checkResult(t, r)
			if r.Transactions <= 0 || r.Latency == nil {
				t.Fatalf("bad builtin result %+v", r)
			}
		}
	})
}
