package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
)

// Applier server-side-applies objects with field manager "meshbench".
type Applier struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// DryRun sends dryRun=All: the API server validates and admits the objects but persists nothing.
	DryRun bool
}

// Apply server-side-applies one typed or unstructured object (force: meshbench owns what it declares).
func (a Applier) Apply(ctx context.Context, obj runtime.Object) (*unstructured.Unstructured, error) {
	u, err := ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	gvk := u.GroupVersionKind()
	m, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("apply %s %s: find resource: %w", gvk.Kind, u.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = a.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if a.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	out, err := ri.Apply(ctx, u.GetName(), u, opts)
	if err != nil {
		return nil, fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}

// ToUnstructured converts a typed object (which must have apiVersion/kind set) to unstructured.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("convert %T %q: apiVersion and kind must be set for server-side apply", obj, u.GetName())
	}
	// Server-side apply rejects a creationTimestamp of null written by the converter.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}
