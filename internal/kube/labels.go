package kube

import "k8s.io/apimachinery/pkg/labels"

// Labels on everything meshbench creates (design.md convention 10); cleanup finds leftovers by them.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "meshbench"
	RunLabel       = "meshbench.dev/run"
	// FieldManager is the server-side apply field manager.
	FieldManager = "meshbench"
)

// RunLabels are the labels for objects of one run.
func RunLabels(runID string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, RunLabel: runID}
}

// RunSelector selects the objects of one run, or of every run when runID is "".
func RunSelector(runID string) string {
	if runID == "" {
		return labels.Set{ManagedByLabel: ManagedByValue}.String()
	}
	return labels.Set(RunLabels(runID)).String()
}

// MergeLabels returns a new map with base overlaid by extra.
func MergeLabels(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}
