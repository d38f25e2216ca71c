// Package export turns finished runs into what other tools read: the report's gauges (Registry, also what push sends
// to a Pushgateway) and OpenMetrics text with each run's timestamp and labels, which `promtool tsdb
// create-blocks-from openmetrics` backfills into a team's own Prometheus (docs/export.md). It is pure: the caller
// writes the bytes.
package export
