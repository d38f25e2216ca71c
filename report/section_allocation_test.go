package report

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// TestAllocationAndSharedSections: the sample run's allocation sits beside its usage per mode and component, with
// "no limit" where a container has none, and the shared components' cost is split, never shown as the app's.
func TestAllocationAndSharedSections(t *testing.T) {
	t.Parallel()
	md := string(Build(readRun(t, "sample")).Markdown())
	for _, want := range []string{
		"## Allocation beside usage",
		// 18 sidecars (the app pods') x Istio's default proxy resources: 100m / 128Mi, limits 2 / 1Gi; the load
		// client's is the benchmark's, a row of its own.
		"| sidecar | load 1000 qps | sidecar | 18 | 1800 | 36000 | 595.0 | 33.06 % | 2304 | 18432 | 768.2 | 33.34 % |",
		"| sidecar | load 1000 qps | loadgen-proxy | 1 | 100.0 | 2000 | 59.95 | 59.95 % | 128.0 | 1024 | 44.96 | 35.12 % |",
		// ztunnel's chart sets no limits: 3 ztunnels, 200m / 512Mi each.
		"| ambient | idle | ztunnel | 3 | 600.0 | no limit (3 containers) | 7.90 | 1.32 % | 1536 | no limit (3 containers) |",
		// mesh in sidecar mode: 18 sidecars (1800m, 2304 MiB) + istiod (500m, 2048 MiB, no limit) beside the mesh usage.
		"| sidecar | idle | mesh | 19 | 2300 | no limit (istiod) | 55.52 | 2.41 % | 4352 | no limit (istiod) |",
		"## Shared components: fixed and load-driven cost",
		"| single | ambient | load 1000 qps | ztunnel | cpu (millicores) | 7.90 ± 0.222 | 162.8 ± 3.23 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// fixed + load-driven is the load window's average (ztunnel single ambient: 7.90 + 162.8 = 170.7).
	if !strings.Contains(md, "| ambient | load 1000 qps | ztunnel | 3 | 600.0 | no limit (3 containers) | 170.7 |") {
		t.Error("ztunnel's load average is not fixed + load-driven")
	}
	// A run without allocation samples (recorded before they existed) has no allocation section, and says nothing wrong.
	if strings.Contains(string(Build(readRun(t, "aa-1")).Markdown()), "Allocation beside usage") {
		t.Error("aa-1 has no allocation samples but got an allocation section")
	}
}

func TestLimitCell(t *testing.T) {
	t.Parallel()
	k := results.Key{Topology: "t", Mode: "m", Window: results.WindowLoad, Component: "app", Metric: "cpu", Unit: "millicores"}
	limit, none := k, k
	limit.Stat, none.Stat, none.Unit = results.StatLimit, results.StatNoLimit, results.UnitContainers
	for _, tc := range []struct {
		name   string
		series []results.Series
		want   string
	}{
		{"limit", []results.Series{{Key: limit, N: 3, Mean: 600}}, "600.0"},
		{"no limit", []results.Series{{Key: none, N: 3, Mean: 2}}, "no limit (2 containers)"},
		{"repetitions disagree", []results.Series{{Key: limit, N: 2, Mean: 600}, {Key: none, N: 1, Mean: 1}}, "no limit in 1 of 3 repetitions"},
		{"not read", nil, "not read"},
	} {
		r := Report{Summary: results.Summary{Series: tc.series}}
		if got := r.limitCell(limit, none); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSumLimits(t *testing.T) {
	t.Parallel()
	key := func(comp, metric, stat, unit string) results.Key {
		return results.Key{Window: results.WindowLoad, Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Unit: results.Unit(unit)}
	}
	sidecar := results.Series{Key: key("sidecar", "cpu", string(results.StatLimit), "millicores"), N: 3, Mean: 4000}
	waypoint := results.Series{Key: key("waypoint", "cpu", string(results.StatLimit), "millicores"), N: 3, Mean: 2000}
	istiod := results.Series{Key: key("istiod", "cpu", string(results.StatNoLimit), string(results.UnitContainers)), N: 3, Mean: 1}
	r := Report{Summary: results.Summary{Series: []results.Series{sidecar, waypoint, istiod}}}
	if got := r.sumLimits(key, []string{"sidecar", "waypoint"}, "cpu", "millicores"); got != "6000" {
		t.Errorf("all limited: %q", got)
	}
	if got := r.sumLimits(key, []string{"sidecar", "istiod"}, "cpu", "millicores"); got != "no limit (istiod)" {
		t.Errorf("istiod unlimited: %q", got)
	}
	if got := r.sumLimits(key, []string{"sidecar", "ztunnel"}, "cpu", "millicores"); got != "not read" {
		t.Errorf("ztunnel not read: %q", got)
	}
}
