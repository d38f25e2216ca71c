// Package push sends a report's summary to a Prometheus Pushgateway as gauges (`meshbench report --push`):
// export.Registry builds them (pure), Push replaces the group {job, instance} with HTTP PUT. It is the report path's
// only network use. The gauges, their labels and the TLS and credential rules are in docs/report.md (Pushgateway).
package push
