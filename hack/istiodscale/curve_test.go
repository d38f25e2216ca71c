package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/goldenfile"
	"github.com/meshbench/meshbench/results"
)

func sample(component, metric, stat string, v float64) results.Sample {
	return results.Sample{Component: results.Component(component), Metric: results.Metric(metric), Stat: results.Stat(stat), Value: v, Source: "prometheus"}
}

func fullSamples() []results.Sample {
	return []results.Sample{
		sample(string(results.ComponentIstiod), string(results.MetricCPU), "min", 3),
		sample(string(results.ComponentIstiod), string(results.MetricCPU), "avg", 5),
		sample(string(results.ComponentIstiod), string(results.MetricCPU), "max", 9),
		sample(string(results.ComponentIstiod), string(results.MetricMemory), "min", 80),
		sample(string(results.ComponentIstiod), string(results.MetricMemory), "avg", 82.5),
		sample(string(results.ComponentIstiod), string(results.MetricMemory), "max", 85),
		sample(string(results.ComponentZtunnel), string(results.MetricCPU), "avg", 1000), // another component: ignored
	}
}

func TestStatsFrom(t *testing.T) {
	tests := []struct {
		name    string
		samples []results.Sample
		cpu     Stat3
		mem     Stat3
		wantErr string
	}{
		{"all six", fullSamples(), Stat3{3, 5, 9}, Stat3{80, 82.5, 85}, ""},
		{"memory max missing", fullSamples()[:5], Stat3{}, Stat3{}, "memory max"},
		{"only another component", fullSamples()[6:], Stat3{}, Stat3{}, "cpu min, cpu avg, cpu max, memory min"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu, mem, err := StatsFrom(tt.samples)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || cpu != tt.cpu || mem != tt.mem {
				t.Fatalf("StatsFrom = %+v %+v %v; want %+v %+v", cpu, mem, err, tt.cpu, tt.mem)
			}
		})
	}
}

const exposition = `# HELP pilot_services Total services known to pilot.
# TYPE pilot_services gauge
pilot_services 27
# HELP pilot_xds Number of endpoints connected to this pilot using XDS.
# TYPE pilot_xds gauge
pilot_xds{version="1.31-dev"} 0
# HELP pilot_xds_pushes Pilot build and send errors for lds, rds, cds and eds.
# TYPE pilot_xds_pushes counter
pilot_xds_pushes{type="cds"} 4
pilot_xds_pushes{type="eds"} 6
# HELP pilot_k8s_reg_events Events from k8s registry.
# TYPE pilot_k8s_reg_events counter
pilot_k8s_reg_events{event="add",type="EndpointSlice"} 250
pilot_k8s_reg_events{event="update",type="Pods"} 750.5
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 612
`

func TestParseMetrics(t *testing.T) {
	got, err := ParseMetrics(strings.NewReader(exposition), append(append([]string{}, IstiodGauges...), IstiodCounters...))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"pilot_services": 27, "pilot_xds": 0, "pilot_xds_pushes": 10, "pilot_k8s_reg_events": 1000.5, "go_goroutines": 612}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v (absent families stay absent)", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, err := ParseMetrics(strings.NewReader("pilot_services{ 1\n"), IstiodGauges); err == nil {
		t.Error("a broken exposition parsed without error")
	}
}

func TestIstiodFigures(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]float64
		want          map[string]float64
	}{
		{"counters as increases, gauges at the end",
			map[string]float64{"pilot_xds_pushes": 10, "pilot_k8s_reg_events": 100, "pilot_services": 5},
			map[string]float64{"pilot_xds_pushes": 14, "pilot_k8s_reg_events": 100, "pilot_services": 7},
			map[string]float64{"pilot_xds_pushes_increase": 4, "pilot_k8s_reg_events_increase": 0, "pilot_services": 7}},
		{"a counter reset (istiod restarted) counts from zero",
			map[string]float64{"pilot_xds_pushes": 50},
			map[string]float64{"pilot_xds_pushes": 3},
			map[string]float64{"pilot_xds_pushes_increase": 3}},
		{"a counter first seen at the end", map[string]float64{}, map[string]float64{"pilot_push_triggers": 2}, map[string]float64{"pilot_push_triggers_increase": 2}},
	}
	for _, tt := range tests {
		got := IstiodFigures(tt.before, tt.after)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tt.name, k, got[k], v)
			}
		}
	}
}

func fixtureCurve() Curve {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	win := func(from time.Duration) results.Window {
		return results.Window{Kind: "load", Start: t0.Add(from), End: t0.Add(from + time.Minute)}
	}
	return Curve{Schema: CurveSchema, Started: t0, Finished: t0.Add(10 * time.Minute), RunID: "20261202-050000-abcd", Complete: true,
		Method: Method{Steps: []int{0, 250}, PodsPerService: 10, ServicesPerNamespace: 10, MaxNamespaces: 20, PodsPerNode: 200, SettleSeconds: 60, WindowSeconds: 60,
			Repetitions: 2, SpacingSeconds: 20, Kwok: "kwok", Prometheus: "http://127.0.0.1:19090", ScrapeSeconds: 5, SampleSpacingSeconds: 5, RateRangeSeconds: 20},
		Istiod:  Istiod{Namespace: "istio-system", Pod: "istiod-x", Requests: map[string]string{"cpu": "50m", "memory": "256Mi"}},
		NotReal: NotReal,
		Points: []Point{
			{Pods: 0, Services: 0, Namespaces: 1, FakeNodes: 2, CPUMillicores: Stat3{1, 2.5, 4.5}, MemoryMiB: Stat3{60, 61, 62.5},
				Repetitions: []Repetition{
					{Repetition: 1, Window: win(0), CPUMillicores: Stat3{1, 2.25, 4}, MemoryMiB: Stat3{60, 61, 62}, Istiod: map[string]float64{"pilot_xds": 0, "pilot_xds_pushes_increase": 0}},
					{Repetition: 2, Window: win(80 * time.Second), CPUMillicores: Stat3{1.5, 2.75, 4.5}, MemoryMiB: Stat3{60.5, 61, 62.5}, Istiod: map[string]float64{"pilot_xds": 0}},
				}},
			{Pods: 250, Services: 25, Namespaces: 3, Endpoints: 250, Injected: 250, InjectedSample: "mb-istiod-scale-00/svc-0000-abc", FakeNodes: 2, OtherPodsOnFakeNodes: 2,
				ReadySeconds: 41.5, CPUMillicores: Stat3{5, 7.75, 12}, MemoryMiB: Stat3{90, 95.875, 99},
				Repetitions: []Repetition{
					{Repetition: 1, Window: win(5 * time.Minute), CPUMillicores: Stat3{5, 7.5, 12}, MemoryMiB: Stat3{90, 95.25, 99}, Istiod: map[string]float64{"pilot_xds": 0, "pilot_xds_pushes_increase": 3, "pilot_k8s_reg_events_increase": 12}},
					{Repetition: 2, Window: win(5*time.Minute + 80*time.Second), CPUMillicores: Stat3{6, 8, 11}, MemoryMiB: Stat3{94, 96.5, 99}, Istiod: map[string]float64{"pilot_xds": 0, "pilot_xds_pushes_increase": 1, "pilot_k8s_reg_events_increase": 0},
						Warnings: []string{"istiod metrics not read: example"}},
				}},
		},
	}
}

// TestSummarize: a size's figures over its windows; the fixture's points carry what Summarize gives.
func TestSummarize(t *testing.T) {
	tests := []struct {
		name     string
		reps     []Repetition
		cpu, mem Stat3
	}{
		{"none", nil, Stat3{}, Stat3{}},
		{"one is itself", []Repetition{{CPUMillicores: Stat3{1, 2, 3}, MemoryMiB: Stat3{10, 11, 12}}}, Stat3{1, 2, 3}, Stat3{10, 11, 12}},
		{"lowest min, mean avg, highest max", []Repetition{
			{CPUMillicores: Stat3{2, 4, 9}, MemoryMiB: Stat3{80, 81, 82}},
			{CPUMillicores: Stat3{1, 5, 6}, MemoryMiB: Stat3{79, 82, 85}},
			{CPUMillicores: Stat3{3, 6, 7}, MemoryMiB: Stat3{81, 83, 84}},
		}, Stat3{1, 5, 9}, Stat3{79, 82, 85}},
	}
	for _, tt := range tests {
		cpu, mem := Summarize(tt.reps)
		if cpu != tt.cpu || mem != tt.mem {
			t.Errorf("%s: Summarize = %+v %+v, want %+v %+v", tt.name, cpu, mem, tt.cpu, tt.mem)
		}
	}
	for _, p := range fixtureCurve().Points {
		if cpu, mem := Summarize(p.Repetitions); cpu != p.CPUMillicores || mem != p.MemoryMiB {
			t.Errorf("fixture point %d pods: summary %+v %+v, Summarize gives %+v %+v", p.Pods, p.CPUMillicores, p.MemoryMiB, cpu, mem)
		}
	}
}

func TestCurveGolden(t *testing.T) {
	b, err := Marshal(fixtureCurve())
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/curve.golden.json", b)
	goldenfile.Check(t, "testdata/curve.golden.md", []byte(Table(fixtureCurve())))
}

// Every curve says what was not real: without the notes a reader would take the figures for a loaded control plane.
func TestCurveSaysWhatWasNotReal(t *testing.T) {
	b, err := Marshal(fixtureCurve())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "no proxy is connected to istiod") || !strings.Contains(string(b), "xDS push cost") {
		t.Errorf("the curve JSON does not say that no proxy was connected:\n%s", b)
	}
}

func TestWriteCurve(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCurve(dir, fixtureCurve()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"istiod-curve.json", "istiod-curve.md"} {
		goldenName := map[string]string{"istiod-curve.json": "testdata/curve.golden.json", "istiod-curve.md": "testdata/curve.golden.md"}[name]
		got := readFile(t, dir+"/"+name)
		goldenfile.Check(t, goldenName, got)
	}
}
