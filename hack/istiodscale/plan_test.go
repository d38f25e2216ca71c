package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLayout(t *testing.T) {
	tests := []struct {
		name                             string
		shape                            Shape
		pods                             int
		services, namespaces             int
		lastWorkload                     Workload
		replicasSum                      int
		perNamespaceMax, perNamespaceMin int
	}{
		{"empty mesh keeps one namespace", DefaultShape, 0, 0, 1, Workload{}, 0, 0, 0},
		{"one pod", DefaultShape, 1, 1, 1, Workload{"p-00", "svc-0000", 1}, 1, 1, 1},
		{"250 pods: 25 services in 3 namespaces", DefaultShape, 250, 25, 3, Workload{"p-02", "svc-0024", 10}, 250, 10, 5},
		{"remainder in the last service", DefaultShape, 255, 26, 3, Workload{"p-02", "svc-0025", 5}, 255, 10, 6},
		{"2000 pods fill 20 namespaces exactly", DefaultShape, 2000, 200, 20, Workload{"p-19", "svc-0199", 10}, 2000, 10, 10},
		{"beyond max namespaces: spread round robin", DefaultShape, 4000, 400, 20, Workload{"p-19", "svc-0399", 10}, 4000, 20, 20},
		{"fills a namespace before the next", Shape{PodsPerService: 1, ServicesPerNamespace: 4, MaxNamespaces: 2}, 6, 6, 2, Workload{"p-01", "svc-0005", 1}, 6, 4, 2},
		{"spread once every namespace is full", Shape{PodsPerService: 1, ServicesPerNamespace: 2, MaxNamespaces: 2}, 5, 5, 2, Workload{"p-00", "svc-0004", 1}, 5, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.shape.Layout("p", tt.pods)
			if s.Pods != tt.pods || s.Services != tt.services || s.Namespaces != tt.namespaces {
				t.Fatalf("Layout(%d) = %d pods, %d services, %d namespaces; want %d, %d, %d", tt.pods, s.Pods, s.Services, s.Namespaces, tt.pods, tt.services, tt.namespaces)
			}
			if len(s.NamespaceNames) != tt.namespaces || len(s.Workloads) != tt.services {
				t.Fatalf("%d namespace names and %d workloads, want %d and %d", len(s.NamespaceNames), len(s.Workloads), tt.namespaces, tt.services)
			}
			sum := 0
			per := map[string]int{}
			for _, w := range s.Workloads {
				sum += w.Replicas
				per[w.Namespace]++
				if !slices.Contains(s.NamespaceNames, w.Namespace) {
					t.Errorf("workload %s in namespace %s, which the size does not list", w.Name, w.Namespace)
				}
				if w.Replicas < 1 || w.Replicas > tt.shape.PodsPerService {
					t.Errorf("workload %s has %d replicas", w.Name, w.Replicas)
				}
			}
			if sum != tt.replicasSum {
				t.Errorf("replicas sum to %d, want %d", sum, tt.replicasSum)
			}
			if tt.services > 0 {
				if got := s.Workloads[len(s.Workloads)-1]; got != tt.lastWorkload {
					t.Errorf("last workload %+v, want %+v", got, tt.lastWorkload)
				}
				lo, hi := tt.services, 0
				for _, n := range per {
					lo, hi = min(lo, n), max(hi, n)
				}
				if lo != tt.perNamespaceMin || hi != tt.perNamespaceMax {
					t.Errorf("services per namespace %d..%d, want %d..%d", lo, hi, tt.perNamespaceMin, tt.perNamespaceMax)
				}
			}
		})
	}
}

// Growing from one size to the next keeps every service's name and namespace (also beyond MaxNamespaces), so a
// sweep only adds objects and replicas.
func TestLayoutGrowsMonotonically(t *testing.T) {
	prev := DefaultShape.Layout("p", 250)
	for _, pods := range []int{500, 1000, 2000, 3000, 4000} {
		next := DefaultShape.Layout("p", pods)
		for i, w := range prev.Workloads {
			if next.Workloads[i].Name != w.Name || next.Workloads[i].Namespace != w.Namespace || next.Workloads[i].Replicas < w.Replicas {
				t.Errorf("%d -> %d pods: workload %d went from %+v to %+v", prev.Pods, pods, i, w, next.Workloads[i])
			}
		}
		prev = next
	}
}

func TestParseSteps(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{"0,250,500,1000,2000", []int{0, 250, 500, 1000, 2000}, ""},
		{" 10 , 20,", []int{10, 20}, ""},
		{"500", []int{500}, ""},
		{"", nil, "no steps"},
		{"250,250", nil, "must increase"},
		{"500,250", nil, "must increase"},
		{"-1", nil, "non-negative"},
		{"ten", nil, "non-negative"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSteps(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSteps(%q) error %v, want one with %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("ParseSteps(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNodesFor(t *testing.T) {
	tests := []struct {
		steps       []int
		podsPerNode int
		want        int
	}{
		{[]int{0}, 200, 1},
		{[]int{0, 250, 500}, 200, 3},
		{[]int{0, 250, 500, 1000, 2000}, 200, 10},
		{[]int{2001}, 200, 11},
		{[]int{10}, 0, 10},
		{nil, 200, 1},
	}
	for _, tt := range tests {
		if got := NodesFor(tt.steps, tt.podsPerNode); got != tt.want {
			t.Errorf("NodesFor(%v, %d) = %d, want %d", tt.steps, tt.podsPerNode, got, tt.want)
		}
	}
}

func TestShapeValidate(t *testing.T) {
	for _, s := range []Shape{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}} {
		if s.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", s)
		}
	}
	if err := DefaultShape.Validate(); err != nil {
		t.Errorf("DefaultShape: %v", err)
	}
}

func TestWindowPlan(t *testing.T) {
	s := time.Second
	tests := []struct {
		reps            int
		window, spacing time.Duration
		want            []Span
	}{
		{1, 60 * s, 20 * s, []Span{{0, 60 * s}}},
		{3, 60 * s, 20 * s, []Span{{0, 60 * s}, {80 * s, 140 * s}, {160 * s, 220 * s}}},
		{2, 45 * s, 0, []Span{{0, 45 * s}, {45 * s, 90 * s}}},
		{0, 60 * s, 20 * s, nil},
		{-1, 60 * s, 20 * s, nil},
	}
	for _, tt := range tests {
		if got := WindowPlan(tt.reps, tt.window, tt.spacing); !slices.Equal(got, tt.want) {
			t.Errorf("WindowPlan(%d, %s, %s) = %v, want %v", tt.reps, tt.window, tt.spacing, got, tt.want)
		}
	}
}

func TestValidateRepetitions(t *testing.T) {
	tests := []struct {
		reps    int
		spacing time.Duration
		wantErr string
	}{
		{3, 20 * time.Second, ""},
		{1, 0, ""},
		{0, 20 * time.Second, "at least 1 window"},
		{3, -time.Second, "spacing -1s"},
	}
	for _, tt := range tests {
		err := ValidateRepetitions(tt.reps, tt.spacing)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ValidateRepetitions(%d, %s) = %v, want %q", tt.reps, tt.spacing, err, tt.wantErr)
		}
	}
}

func TestSpacingWarning(t *testing.T) {
	tests := []struct {
		reps               int
		spacing, rateRange time.Duration
		want               string
	}{
		{3, 20 * time.Second, 20 * time.Second, ""},
		{1, 0, 20 * time.Second, ""}, // one window: nothing to share
		{3, 10 * time.Second, 20 * time.Second, "consecutive windows share CPU rate samples"},
	}
	for _, tt := range tests {
		got := SpacingWarning(tt.reps, tt.spacing, tt.rateRange)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("SpacingWarning(%d, %s, %s) = %q, want %q", tt.reps, tt.spacing, tt.rateRange, got, tt.want)
		}
	}
}
