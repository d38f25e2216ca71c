// Command istiodscale measures the real istiod of the local cluster (hack/localistio) against the size of the mesh:
// pods, services and namespaces (issue 13 section 3), so a projection of istiod's cost rests on a measured curve.
//
// The pods are real API objects on fake nodes: kwok (sigs.k8s.io/kwok, built by build-kwok.sh from the pin in
// kwok/go.mod) runs out of cluster against the local cluster's API server and manages only the nodes this tool
// creates (--manage-nodes-with-label-selector; docs: site/content/en/docs/user/kwok-out-cluster.md and
// kwok-manage-nodes-and-pods.md at v0.8.0), faking their heartbeats and the status of every pod bound to them with
// kwok's default fast stages (node-initialize, node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete). The
// fake nodes carry a NoSchedule taint, so only this tool's pods (which tolerate it and select the nodes) and
// DaemonSets that tolerate everything (Istio's ztunnel does) land there. Each Deployment's pods go through the real
// admission chain, so istiod's injector adds istio-proxy; the Endpoints and EndpointSlice controllers publish the
// pods' kwok-assigned IPs, so istiod's service registry sees every endpoint.
//
// For each size of the plan (pure: Layout) it reconciles Namespaces, Deployments and Services to that size, waits
// until every pod is Running and Ready and the EndpointSlices list every pod, waits a settle time, then measures
// -repetitions windows spaced -spacing apart (pure: WindowPlan): istiod's CPU and memory over each window from
// Prometheus with the collectors/prom catalog (the same PromQL a run uses), and istiod's own counters
// (pilot_xds_pushes, pilot_k8s_reg_events) and gauges (pilot_services) from its monitoring port through the API
// server's pod proxy. The repetitions give `meshbench project --istiod-curve` (package capacity) its intervals and
// its linearity test. The curve (Curve, schema v2) is written as JSON with what was not real: no proxy is connected
// to istiod (the pods have no containers), so the xDS push cost to connected proxies is absent.
//
// Everything it creates carries the labels app.kubernetes.io/managed-by=meshbench and meshbench.dev/istiod-scale
// (Selector): at start it removes what an earlier, killed run left, and at the end (success, failure or Ctrl-C) it
// deletes the namespaces, the fake nodes and the pods still bound to them, and stops kwok.
package main
