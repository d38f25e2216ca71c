package kube

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// RenderYAML writes objects as a multi-document YAML stream, exactly as they would be server-side applied (no
// status, no creationTimestamp). Keys are sorted, so the output is deterministic.
func RenderYAML(w io.Writer, objs []runtime.Object) error {
	for _, o := range objs {
		u, err := ToUnstructured(o)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("render %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}
