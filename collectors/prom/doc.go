// Package prom reads CPU and memory per component (app, sidecar, ztunnel, waypoint, istiod, istio-cni, loadgen,
// node) over fixed windows, as min, max and avg.
//
// The PromQL is a catalog of data (Catalog: name, template, unit, scale, per metric and statistic), rendered per
// window and component. Pod sets come from the Kubernetes API by label (PodSets), never from container="istio-proxy"
// alone, which matches sidecars, ztunnels and waypoints alike; they are rendered as namespace="ns",pod=~"a|b|c" with
// container!="",container!="POD" so cAdvisor's pod-level and pause-container series are never added in. One query per
// component and statistic, however many pods.
//
// Accuracy rules (measured, see the data-path reference): min and max of CPU are taken over a subquery of a rate
// whose range is at least 4 scrape intervals, at a step of one scrape interval; average CPU is increase(window)/window;
// memory is the working set, min/max/avg over a subquery of the component's sum. Windows are cut to whole seconds.
// The caller must run load for at least RateRange before a window starts, so the first rate point sees load only.
//
// Missing figures are never silent: a query that answers with no data is a warning naming the component (and
// CheckRequired fails a window whose required components gave nothing), and a query that fails after its retries
// fails the whole collection with a *QueryErrors, so the runner records the case as failed, not ok with a gap.
//
// One Prometheus client serves the run and preflight (NewAPI, ConfigFor, ProbeCAdvisor): a URL with CA file,
// insecureSkipVerify and a bearer token file re-read per request, or a Service through the API server's
// services/proxy subresource with the Kubernetes credentials.
//
// Allocation beside usage: PodSets also sums, per set, the requests and limits of the containers the set measures
// (regular containers and native sidecars, i.e. init containers with restartPolicy Always), from the same pod
// objects it selects them by, so the figures are what the pods had at collection time (injected sidecars included).
// AllocationSamples turns them into samples of source pod-spec (results.StatRequest); a pod whose one-shot init
// container or RuntimeClass overhead makes the scheduler reserve more than that is a note of its set.
//
// The whole-node component is the test nodes (the nodes the measured pods run on), each measured on its own and
// labelled node=<name>, series=<source>; never a sum over the cluster. Per window, the collector looks for the
// series that identify each node by a node label, instance (the node name, or one of its addresses with a port),
// nodename or kubernetes_io_hostname, in this order of sources: cAdvisor's root cgroup (id="/", the same job as the
// pods), the kubelet's /metrics/resource (node_cpu_usage_seconds_total, node_memory_working_set_bytes), node-exporter
// (node_cpu_seconds_total without idle, iowait, steal; MemTotal - MemAvailable). Selectors then match every identity
// label exactly. kube-prometheus-stack drops the root cgroup and does not scrape /metrics/resource by default, so
// node-exporter is what remains there; a node no source names gets a warning that says, per source, why.
//
// Without Prometheus, KubeletSampler reads every node's /metrics/resource through the API server's nodes/proxy at a
// fixed interval and computes the same statistics (source kubelet-resource; a test node from its own kubelet's
// node_* series).
package prom
