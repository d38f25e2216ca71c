// Package report turns a run directory into what people read: report.md, a single self-contained report.html (inline
// CSS and SVG, no scripts, no external references, so it can be mailed, attached to a CI job or opened offline), CSVs
// for spreadsheets (series.csv, deltas.csv, cases.csv) and one SVG per chart (charts/*.svg, linked from report.md).
// It is offline: it reads files and writes files, nothing else (no network; pushing the summary to a Prometheus
// Pushgateway is package push's).
//
// Everything comes from the run directory alone (run.json, samples.jsonl, cases.jsonl, summary.json); when
// summary.json is missing (an interrupted run), the summary is computed with results.Summarize. Build and the renderers
// are pure and deterministic, so report.md is golden-tested byte for byte.
//
// # Sections
//
// Markdown, HTML and the terminal text (Text, for `meshbench report --show` and the end of make demo: aligned tables,
// no Markdown or HTML) are renderings of one document model, so they never disagree. Its sections, by SectionID:
//   - a banner first when the data plane was a test stand-in ("data plane: test stand-in, figures are not Istio's")
//     or the run carries notes;
//   - run facts: tool, Kubernetes and Istio versions, nodes, profile, configured and measured windows, the resource
//     source (Prometheus or the kubelet fallback) with its scrape interval, the data plane;
//   - headlines: the mesh total under load, ambient and waypoint against sidecar (study A's comparison), and the p99
//     latency each mode adds over none;
//   - study A's table per topology: per mode, window and component the mean min, max and avg CPU and memory, with the
//     derived mesh total (averages only: peaks do not add up), followed by grouped bar charts with CI error bars;
//   - change between modes for the mesh and the app: percent change with its Welch interval and significance;
//   - per workload (only when the run has per-workload figures): each Deployment and StatefulSet per mode, its app and
//     sidecar CPU, its memory and the change of its total against mode none, the most expensive sidecars first;
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
package report
