package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StripManagedFields is an informer transform (informers.WithTransform) that drops metadata.managedFields before
// an object enters the cache: nothing in meshbench reads them, and on pods they are a large share of the object
// (every controller, kubelet and injector that wrote the pod adds an entry), so at thousands of pods they are most
// of what an informer holds. Objects that are not metav1.Object (cache.DeletedFinalStateUnknown) pass unchanged.
func StripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
