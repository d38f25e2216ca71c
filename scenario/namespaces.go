package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ProtectedNamespace reports namespaces meshbench never creates, labels, restarts or deletes: default, any kube-*,
// any istio-* and the local-path provisioner's. A custom Istio root namespace is known only from the cluster's mesh
// config, so preflight and the run refuse it there (mesh.Info.RootNamespace).
func ProtectedNamespace(ns string) bool {
	return ns == "default" || protectedPrefix(ns) || ns == "local-path-storage"
}

// ErrProtectedNamespace is the refusal of a system namespace (RefuseProtected).
var ErrProtectedNamespace = errors.New("system namespace")

// RefuseProtected refuses namespaces meshbench never deploys into, labels, restarts or deletes, whatever the flags:
// ProtectedNamespace (kube-*, istio-*, default, ...) and the cluster's protected ones (the Istio root namespace).
// It reads nothing: the refusal comes before any API call. The deployer, preflight and the mode switcher share it.
func RefuseProtected(namespaces []string, protected ...string) error {
	var bad []string
	for _, ns := range namespaces {
		if ProtectedNamespace(ns) || slices.Contains(protected, ns) {
			bad = append(bad, ns)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("namespace(s) %v: %w of the cluster or of Istio (kube-*, istio-*, default, the mesh root namespace): "+
		"meshbench never deploys into, labels or restarts them, not even with --allow-existing-namespaces; use the app's own namespaces", bad, ErrProtectedNamespace)
}

// protectedPrefix: a name (or a namespace prefix) in the cluster's or Istio's namespace space.
func protectedPrefix(s string) bool {
	return strings.HasPrefix(s, "kube-") || strings.HasPrefix(s, "istio-")
}
