// Package preflight checks, read-only, whether a scenario can run on a cluster: Kubernetes and its nodes, Istio
// (presence, version, revision, ambient capability, native sidecars, Gateway API, the stand-in marker, mTLS), the
// app's namespaces (for app existing instead: exactly what the run will change in the user's namespaces, the label
// patch of each mode and the workloads it restarts, and what the end restores), the images the pods pull, Prometheus and its cAdvisor series, and every permission a run needs.
// Each check is OK, WARN (shown with its fix, does not block) or FAIL (blocks the requested modes: exit 2 in the CLI).
//
// Preflight is a composition package, like cmd/meshbench/app: it asks the adapters for facts and judges them against
// what the scenario needs. It imports mesh (Istio detection, mTLS), workloads (the app's namespaces, the discovery of app existing),
// collectors/prom (the same Prometheus client a run uses), internal/kube and schedule (RequiredPermissions, the one
// list of what a run does to the API). No adapter imports preflight, and adapters never import each other for it:
// that is why the Istio judgement lives here and not in mesh. Images are checked through ImageChecker, which the
// cmd layer adapts from package images, so preflight does not depend on registries.
package preflight
