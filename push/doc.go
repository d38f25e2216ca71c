// Package push sends a report's summary to a Prometheus Pushgateway, for dashboards and alerts on scheduled runs
// (`meshbench report --push`). It is the only part of the report path that uses the network: package report stays
// offline and pure, and push turns its Report into gauges (Registry, pure) and sends them (Push).
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
//
// TLS to the Pushgateway is verified unless Options.Insecure (report --push-insecure, which warns). Basic-auth
// credentials in the URL are sent as a header and kept out of every message (RedactURL).
package push
