// Package schedule makes meshbench a scheduled job: `meshbench schedule -f SCENARIO` emits (or server-side applies
// with field manager "meshbench") a CronJob that runs the scenario inside the cluster, with a ServiceAccount and
// least-privilege RBAC, results kept on a PersistentVolumeClaim and/or pushed to a Pushgateway, and optional
// regression gates against a baseline run (studies.md §D: upgrades are exactly the changes that break what worked).
//
// # One permission list
//
// RequiredPermissions is the only list of what a run does to the API: the ClusterRole is generated from it (a test
// checks they are equal), and `meshbench preflight` checks the same list with SelfSubjectAccessReview. A step that
// needs a new permission adds one row, with why, and both follow. The role is cluster-wide because the run creates
// its app namespaces itself; a Role in a namespace that does not exist yet cannot be bound in advance.
//
// # The scheduled pod
//
// Each scheduled Job runs one pod whose steps are meshbench invocations in order (init containers, then the last step
// as the main container), all with the same image, no shell needed (distroless images work):
//
//	run -f /etc/meshbench/scenario.yaml                 the scenario from the ConfigMap, output dir = /var/lib/meshbench/runs
//	report --latest /var/lib/meshbench/runs [--push URL --push-job JOB --push-instance INSTANCE]
//	compare BASELINE /var/lib/meshbench/runs --latest --fail-if GATE ...    only with gates
//
// A step that fails stops the pod: a failed run (exit 1) or a violated gate (exit 3) fails the Job, which is what
// alerting on failed Jobs (kube-state-metrics kube_job_status_failed) picks up. Runs are kept on the PVC (--pvc), or
// only pushed (--push, runs then live in an emptyDir for the pod's life). Concurrency is Forbid (two benchmarks on
// one cluster measure each other), backoffLimit is 0 (a half-done benchmark is not retried blindly; the next schedule
// runs), and activeDeadlineSeconds bounds a run.
//
// App "manifests" names files of the machine the schedule is made on, which the pod cannot read: the caller renders
// the objects (Options.Manifests; the CLI reads them with the workloads package, which this package does not import)
// and they go into the ConfigMap as manifests.yaml beside scenario.yaml, whose manifests.paths is rewritten to it.
// Scenario and manifests together must fit the 1 MiB a ConfigMap holds; larger apps are refused with the ways out
// (manifests baked into an image, or app existing).
//
// The pod runs as non-root (65532) with a read-only root filesystem, no privilege escalation, all capabilities dropped
// and the runtime's default seccomp profile; /tmp is an emptyDir.
//
// The schedule's objects are labelled app.kubernetes.io/part-of=meshbench, never app.kubernetes.io/managed-by=meshbench:
// that label marks what runs create, and `meshbench cleanup` deletes it all.
//
// Credentials never travel in the objects: a scenario's Prometheus bearer token (and CA) are read from a Secret the
// user creates, mounted at prometheusSecretDir (Options.PrometheusSecret), and a Pushgateway URL with credentials is
// refused, since it would sit in the CronJob's arguments.
//
// Objects, Steps, YAML and Validate are pure; the CLI applies the objects with internal/kube.Applier.
package schedule
