package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
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

// Factories are the informer factories of one cache (a wait's or a verification's), started and stopped
// together.
type Factories []informers.SharedInformerFactory

// Start runs every informer until ctx ends, then shuts the factories down (their goroutines end with the cache).
func (fs Factories) Start(ctx context.Context) {
	for _, f := range fs {
		f.Start(ctx.Done())
	}
	context.AfterFunc(ctx, func() {
		for _, f := range fs {
			f.Shutdown()
		}
	})
}

// Synced waits for every informer's first list: nil, or ctx's cause naming the type not yet listed.
func (fs Factories) Synced(ctx context.Context) error {
	for _, f := range fs {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("list %s: %w", typ, context.Cause(ctx))
			}
		}
	}
	return nil
}
