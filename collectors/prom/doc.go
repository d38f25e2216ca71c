// Package prom reads CPU and memory per component (app, sidecar, ztunnel, waypoint, istiod, istio-cni, loadgen,
// node) over fixed windows, as min, max and avg computed in Go from the raw samples (PromQL's increase()
// extrapolates), from Prometheus (Catalog: series selectors as data; PodSets: the pods by label from the Kubernetes
// API) or, without it, from the kubelets' resource metrics (KubeletSampler). A missing figure is never silent: a
// warning, a failed window (CheckRequired, *QueryErrors) or an incomplete one (*IncompleteError). The selectors, the
// accuracy rules, the node series and the client: docs/measurement.md.
package prom
