package main

import (
	"strings"
	"testing"
)

func TestMedians(t *testing.T) {
	t.Parallel()
	out := `goos: linux
BenchmarkCollectWindow/1000pods-60ns-2         	       2	 900000000 ns/op	        31.00 queries/window	        20.19 peak-heap-MB
BenchmarkCollectWindow/5000pods-60ns-2         	       1	3000000000 ns/op	       109.0 queries/window
BenchmarkCollectWindow/1000pods-60ns-2         	       1	 700000000 ns/op	        31.00 queries/window	        25.00 peak-heap-MB
BenchmarkCollectWindow/1000pods-60ns-2         	       1	1300000000 ns/op	        31.00 queries/window	        10.00 peak-heap-MB
BenchmarkCollectWindow/5000pods-60ns-2         	       1	4000000000 ns/op	       109.0 queries/window
PASS`
	got := Medians(strings.Split(out, "\n"))
	if len(got) != 2 || got[0].Name != "BenchmarkCollectWindow/1000pods-60ns" || got[0].Runs != 3 || got[1].Runs != 2 {
		t.Fatalf("results %+v", got)
	}
	want := []Metric{{"ns/op", 900000000}, {"queries/window", 31}, {"peak-heap-MB", 20.19}}
	if len(got[0].Metrics) != 3 || got[0].Metrics[0] != want[0] || got[0].Metrics[1] != want[1] || got[0].Metrics[2] != want[2] {
		t.Errorf("1000 pods: %+v, want %+v (odd count: the middle run)", got[0].Metrics, want)
	}
	if got[1].Metrics[0].Value != 3500000000 {
		t.Errorf("5000 pods ns/op %v, want the mean of the two middle runs", got[1].Metrics[0].Value)
	}
}
