// Package workloads is meshbench's app catalog: the demo apps it deploys, built as typed Kubernetes objects in Go
// (never copied manifests), placed in one or many namespaces, applied with server-side apply, waited for, and torn
// down.
//
// Two apps:
//   - bank-of-anthos (v0.6.x): six services and two Postgres StatefulSets, written from the reference table in
//     shared/reference/istio-modes.md (ports, probes, resources, security context, env, the five ConfigMaps and a
//     jwt-key Secret per namespace). Off GCP, tracing and metrics exporters are disabled. When services are spread
//     over namespaces every address is a FQDN (svc.ns.svc.cluster.local).
//   - fortio-chain: the synthetic graph of scenario.Chain (a topology's chainDepth replaces its depth: Workload.ChainFor). Service chain-0 is the entry; every non-leaf service is
//     `meshbench-agent serve --forward` (fortio's MultiServer, MirrorOrigin: the incoming path and query are sent on
//     unchanged, so `?size=N` reaches the leaves), leaves are fortio echo servers.
//
// Objects is pure (golden-tested); Deployer.Ensure applies the same objects, adding what cannot be pure (the RSA key
// of the jwt-key Secret, generated once per Deployer and reused across namespaces and cases). Namespaces the tool
// creates carry kube.RunLabels; an existing namespace without them is refused unless AllowExisting, and is then never
// labelled or deleted by meshbench (only the objects it created inside are).
//
// Login is an app's login as data (scenario.Login: a request, what of its answer to capture, which load header
// carries it), sent through the agent's curl from a load client pod so that it passes the case's data plane;
// bank-of-anthos' login is bankOfAnthosLogin, one instance that LoginFor picks when the scenario sets none.
//
// App "manifests" (the user's YAML files, directories or kustomization) is read by a Renderer, once per resolved
// kustomization or set of paths: a Deployer keeps one for its run, preflight and plan --show-objects one per call,
// so a kustomize build is not repeated per topology, case or Ensure. CheckManifests refuses what meshbench could
// not handle before anything connects: cluster-scoped and unknown kinds, and kinds that run pods without being a
// Deployment or StatefulSet (DaemonSet, Job, CronJob, Pod, ReplicaSet, ReplicationController), whose pods it would
// not wait for, scale, prove or measure.
package workloads
