// Package preflight checks, read-only, whether a scenario can run on a cluster: Kubernetes and its nodes, Istio, the
// app's namespaces (for app existing: exactly what the run will change), images, Prometheus and every permission.
// Each check is OK, WARN (with its fix) or FAIL (blocks the requested modes: exit 2). It is a composition package:
// it asks adapters for facts and judges them, so no adapter needs another (the Istio judgement lives here, not in
// mesh); images come through ImageChecker, so it does not depend on registries.
package preflight
