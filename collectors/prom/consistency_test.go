package prom

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

func TestConsistencyWarnings(t *testing.T) {
	t.Parallel()
	set := func(comp, metric string, labels map[string]string, min, max, avg float64) []results.Sample {
		var out []results.Sample
		for stat, v := range map[string]float64{"min": min, "max": max, "avg": avg} {
			out = append(out, results.Sample{Component: results.Component(comp), Metric: results.Metric(metric), Stat: results.Stat(stat), Value: v, Labels: labels})
		}
		return out
	}
	tests := []struct {
		name    string
		samples []results.Sample
		want    []string // substrings, one per warning, in order
	}{
		{"inside", set("app", "cpu", nil, 44, 50, 47), nil},
		{"within tolerance below min", set("app", "cpu", nil, 44.11, 45.33, 42.5), nil},
		{"within tolerance above max", set("app", "cpu", nil, 150, 156.56, 158.34), nil},
		{"below min (measured: 13 s cAdvisor spacing)", set("app", "cpu", nil, 44.11, 45.33, 40.49), []string{"app cpu: average 40.49 lies outside [min 44.11, max 45.33]"}},
		{"above max", set("ztunnel", "memory", nil, 4, 5, 6), []string{"ztunnel memory: average 6 lies outside"}},
		{"labels kept apart", append(set("app", "cpu", map[string]string{"node": "n1"}, 1, 2, 1.5), set("app", "cpu", map[string]string{"node": "n2"}, 1, 2, 3)...),
			[]string{"app cpu node=n2: average 3"}},
		{"incomplete set ignored", []results.Sample{{Component: "app", Metric: "cpu", Stat: "avg", Value: 9}}, nil},
		{"zeros", set("waypoint", "cpu", nil, 0, 0, 0), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := consistencyWarnings(tc.samples)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d warnings %q, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) || !strings.Contains(got[i], "housekeeping-interval") {
					t.Errorf("warning %d = %q, want it to contain %q and the fix", i, got[i], w)
				}
			}
		})
	}
}
