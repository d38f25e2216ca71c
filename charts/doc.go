// Package charts draws meshbench results as SVG, pure and byte-stable: grouped bars with confidence-interval error
// bars per component and mode, latency percentiles per mode, and pod-network rates per path against the host baseline
// with colour bands (Bands). Why hand-made SVG, the bands and the ordering: docs/report.md (Charts).
package charts
