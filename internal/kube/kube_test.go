package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestRunSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		runID string
		obj   map[string]string
		match bool
	}{
		{"r1", RunLabels("r1"), true},
		{"r1", RunLabels("r2"), false},
		{"", RunLabels("r2"), true},
		{"", map[string]string{ManagedByLabel: "helm"}, false},
		{"r1", map[string]string{RunLabel: "r1"}, false}, // must also be managed by meshbench
	}
	for _, tc := range tests {
		sel, err := labels.Parse(RunSelector(tc.runID))
		if err != nil {
			t.Fatalf("RunSelector(%q) does not parse: %v", tc.runID, err)
		}
		if got := sel.Matches(labels.Set(tc.obj)); got != tc.match {
			t.Errorf("RunSelector(%q) on %v = %v, want %v", tc.runID, tc.obj, got, tc.match)
		}
	}
	m := MergeLabels(map[string]string{"a": "1", "b": "1"}, map[string]string{"b": "2"})
	if m["a"] != "1" || m["b"] != "2" || len(m) != 2 {
		t.Errorf("MergeLabels = %v", m)
	}
}

func TestToUnstructured(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", Labels: RunLabels("r")},
		Data:       map[string]string{"k": "v"},
	}
	u, err := ToUnstructured(cm)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != "ConfigMap" || u.GetNamespace() != "n" || u.GetLabels()[RunLabel] != "r" {
		t.Errorf("converted object lost identity: %v", u.Object)
	}
	if _, found := u.Object["metadata"].(map[string]any)["creationTimestamp"]; found {
		t.Error("creationTimestamp must be dropped for server-side apply")
	}
	if _, err := ToUnstructured(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil {
		t.Error("an object without apiVersion/kind must be refused")
	}
}
