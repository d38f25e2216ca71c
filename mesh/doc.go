// Package mesh switches an app between Istio data-plane modes (none, sidecar, ambient, waypoint) in Istio's safe
// order (Switcher.Apply) and proves, per pod, that a mode took effect (Verify; the pure decision is prove). What it
// changes on namespaces and workloads meshbench did not create is recorded first (LabelRecord) and restored at the
// end, after a failure or Ctrl-C, and by `meshbench cleanup`. Detect reads what Istio is installed; preflight judges
// it. The app is an internal/target.Target, so mesh never imports workloads. The modes, the order, the restore and
// the upstream facts they rest on: docs/modes.md.
package mesh
