// Package prom reads CPU and memory per component (app, sidecar, ztunnel, waypoint, istiod, istio-cni, loadgen,
// node) over fixed windows, as min, max and avg.
//
// The series are a catalog of data (Catalog: per metric a signal, counter or gauge, of selector templates with a
// unit and a scale), rendered per window and component. Pod sets come from the Kubernetes API by label (PodSets),
// never from container="istio-proxy" alone, which matches sidecars, ztunnels and waypoints alike; they are rendered
// as namespace=~"ns1|ns2",pod=~"a|b|c" with container!="",container!="POD" so cAdvisor's pod-level and
// pause-container series are never added in, and the series of a pod of the same name in another of the namespaces
// are dropped in Go. One range-selector query per component and catalog term, however many namespaces and pods (60
// namespaces made about 250 queries per window when each namespace had its own); the long pod regex goes in a POST
// body (client_golang's Query posts its form), and Prometheus looks a plain alternation up value by value.
//
// Accuracy rules (measured against a real Prometheus, accuracy_prometheus_test.go): min, max and avg come from the
// raw samples over the measured window (to the millisecond), computed in Go (CounterStats, gaugeStats). The CPU
// average is the summed counters' increase between the window's edges, each interpolated from the two samples
// around it (PromQL's increase() extrapolates and was off by up to 1.7 % at some window phases); min/max are rate
// points of the rate range (4 sample spacings) inside the window, together with the tiles the average is the
// weighted mean of, so the average always lies within [min, max]. Memory is the working set, each series
// interpolated and held for the longer of the rate range and two of its own spacings; its average is the exact
// time average of the sum. A window shorter than the rate range has CPU figures over the rate range up to its end.
// The caller runs load before a window starts so the sample before the window's start sees load, and keeps every
// window one guard (Interval.Guard: a sample spacing) from a load's start or stop; the counters read samples up to
// the guard beyond a window's edges and no further (a late sample past a phase change never bends an edge: the
// series reaches the edge at the rate of its samples inside).
//
// Missing figures are never silent: a query that answers with no data is a warning naming the component, a running
// pod without a sample in the window is a warning naming the pod (and CheckRequired fails a window whose required
// components, the app, its sidecars, the ztunnels of ambient modes and the waypoints, gave nothing), and a query
// that fails after its retries (bounded in attempts and time: DefaultRetry rides over a 30 s restart) fails the
// whole collection with a *QueryErrors, so the runner records the case as failed, not ok with a gap. A window
// Prometheus did not scrape all through (down, paused, restarting) is an *IncompleteError naming each figure, the
// window and the stretch without samples: per window, one query of the up series of each job the figures' series
// came from (the job, instance and metrics_path labels are read off those series, so no job name is assumed), and
// two or more scrapes in a row missing or failed inside the window make it incomplete.
//
// Queries go out as POST forms (client_golang's Query), so a selector of thousands of pod names is not limited by
// a URL's length.
//
// One Prometheus client serves the run and preflight (NewAPI, ConfigFor, ProbeCAdvisor): a URL with CA file,
// insecureSkipVerify and a bearer token file re-read per request (prometheus/common's credentials-file round tripper), or a Service through the API server's
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
// (node_cpu_seconds_total without idle, iowait, steal; MemTotal - MemAvailable). Each node's series are then those
// whose identity labels are exactly its pick's, split in Go from one query per source and term for all the test
// nodes (the queries do not grow with the nodes either). kube-prometheus-stack drops the root cgroup and does not scrape /metrics/resource by default, so
// node-exporter is what remains there; a node no source names gets a warning that says, per source, why.
//
// Without Prometheus, KubeletSampler reads every node's /metrics/resource through the API server's nodes/proxy at a
// fixed interval and computes the same statistics (source kubelet-resource; a test node from its own kubelet's
// node_* series).
package prom
