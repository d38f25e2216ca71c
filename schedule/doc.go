// Package schedule makes meshbench a scheduled in-cluster job: a CronJob whose one pod runs `meshbench run`, `report`
// and optionally `compare --fail-if` in order, with a ServiceAccount and least-privilege RBAC generated from
// RequiredPermissions (the one list of what a run does to the API, which preflight checks too), results on a PVC
// and/or a Pushgateway, and no credential in any object. Objects, Steps, YAML and Validate are pure; the CLI applies
// the objects with internal/kube.Applier. The pod, its security and the flag rules: docs/in-cluster.md.
package schedule
