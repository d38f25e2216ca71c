// Package report turns a run directory into what people read: report.md, a single self-contained report.html (inline
// CSS and SVG, no scripts, no external references, so it can be mailed, attached to a CI job or opened offline), CSVs
// for spreadsheets (series.csv, deltas.csv, cases.csv) and one SVG per chart (charts/*.svg, linked from report.md).
// It can also push the summary to a Prometheus Pushgateway for dashboards and alerts on scheduled runs.
//
// Everything comes from the run directory alone (run.json, samples.jsonl, cases.jsonl, summary.json); when
// summary.json is missing (an interrupted run), the summary is computed with results.Summarize. Build and the renderers
// are pure and deterministic, so report.md is golden-tested byte for byte.
//
// # Sections
//
// Both renderings share one document model, so they never disagree:
//   - a banner first when the data plane was a test stand-in ("data plane: test stand-in, figures are not Istio's")
//     or the run carries notes;
//   - run facts: tool, Kubernetes and Istio versions, nodes, profile, configured and measured windows, the resource
//     source (Prometheus or the kubelet fallback) with its scrape interval, the data plane;
//   - headlines: the mesh total under load, ambient and waypoint against sidecar (study A's comparison), and the p99
//     latency each mode adds over none;
//   - study A's table per topology: per mode, window and component the mean min, max and avg CPU and memory, with the
//     derived mesh total (averages only: peaks do not add up), followed by grouped bar charts with CI error bars;
//   - change between modes for the mesh and the app: percent change with its Welch interval and significance;
//   - cost per 1000 achieved requests per second;
//   - latency per mode and percentile, and the latency each mode adds over none, with a chart;
//   - study B's network table: rows path × test with value, CI, unit, ratio to the host baseline and colour band
//     (charts.Bands), tool and n; a test that did not run shows why;
//   - every failed or skipped case with its reason; method notes and every warning.
//
// No table cell is ever empty: a missing value says why ("not measured", "n/a: avg only", the case's failure reason).
//
// # Network sample conventions
//
// Network samples (component cni-test) carry the labels path (host, same-node, cross-node, service) and test (tcp,
// udp, rr, crr); the tool is the sample's source (iperf3, netperf, builtin) unless a "tool" label says otherwise. A
// failed or skipped network case is matched to its row by the case facts "path" and "test".
//
// # Pushgateway metrics
//
// Push sends gauges for the grouping key {job, instance} (defaults: job "meshbench", instance = scenario name) with
// HTTP PUT, replacing that group's previous push, so dashboards and alerts always see the latest scheduled run:
//
//	meshbench_resource_mean{topology,mode,load,window,component,metric,stat,unit}        cpu and memory series
//	meshbench_resource_ci_low{...same labels}, meshbench_resource_ci_high{...}           their confidence interval
//	meshbench_resource_per_krps_mean{...same labels}                                      per 1000 achieved rps
//	meshbench_measurement_mean{topology,mode,load,window,component,metric,stat,unit,path,test}
//	                                                                                      latency, qps, throughput, rr, crr, loss, jitter
//	meshbench_measurement_ci_low{...}, meshbench_measurement_ci_high{...}
//	meshbench_delta_percent{base,other,topology,load,window,component,metric,stat,unit}  change between modes in %
//	meshbench_delta_percent_ci_low{...}, meshbench_delta_percent_ci_high{...}, meshbench_delta_significant{...} (0/1)
//	meshbench_case_total, meshbench_case_failed_total, meshbench_case_skipped_total      counts of the run's cases
//	meshbench_run_info{run_id,tool_version,kubernetes_version,istio_version,data_plane,profile,scenario} 1
//	meshbench_run_start_timestamp_seconds, meshbench_run_end_timestamp_seconds
//
// run_id appears only on meshbench_run_info, so series keep their identity from run to run. Series whose samples
// carry other labels (e.g. per-node partitions) and deltas without a percent (base 0) are not pushed; they are in the
// CSVs. An alert on a regression is then, e.g., meshbench_delta_percent{base="sidecar",other="ambient",component="mesh",
// metric="cpu",window="load"} > -20 and meshbench_delta_significant == 1.
package report
