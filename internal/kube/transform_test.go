package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestStripManagedFields(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	got, err := StripManagedFields(p)
	if err != nil || got.(*corev1.Pod).ManagedFields != nil || got.(*corev1.Pod).Name != "p" {
		t.Errorf("got %+v, %v", got, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p}
	if got, err := StripManagedFields(tomb); err != nil || got.(cache.DeletedFinalStateUnknown).Key != "ns/p" {
		t.Errorf("a tombstone: %+v, %v", got, err)
	}
}
