// Package spansink is a minimal Zipkin v2 collector that only counts: meshbench deploys it (meshbench-agent spans)
// as the cluster's zipkin tracing backend so Envoy's tracer (Istio's Telemetry tracing) has somewhere to report, and
// reads back how many spans and traces arrived instead of storing them. Memory stays constant whatever the load.
// Leaf: standard library only, no project imports.
package spansink
