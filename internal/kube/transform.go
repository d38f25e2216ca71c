package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
)

// StripManagedFields is an informer transform that drops metadata.managedFields before an object enters the cache:
// nothing reads them, and at thousands of pods they are most of what an informer holds. Non-objects pass unchanged.
func StripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// SlimPod is the transform of the pod cache a case's readiness wait and mode verification share: StripManagedFields,
// and on a Pod the spec parts neither reads (volumes; per container command, args, env, mounts, probes, lifecycle,
// resources). Metadata, nodeName, container names and restart policies, and the whole status stay.
func SlimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return StripManagedFields(obj)
	}
	p.ManagedFields = nil
	p.Spec.Volumes = nil
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Command, c.Args, c.Env, c.EnvFrom, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
			c.Resources = corev1.ResourceRequirements{}
		}
	}
	p.Spec.EphemeralContainers = nil
	return p, nil
}

// Factories are the informer factories of one cache (internal/target.Cache), started and stopped together.
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
