// Package prom reads CPU and memory per component over fixed windows (min, max, avg computed in Go from raw samples)
// from Prometheus (Catalog: selectors as data; PodSets: pods by label) or the kubelets (KubeletSampler). A missing
// figure is never silent (warnings, CheckRequired, *QueryErrors, *IncompleteError). Spec: docs/measurement.md.
package prom
