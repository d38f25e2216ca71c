// Package loadgen drives load with fortio as a library: weighted targets (http, grpc health check, tcp echo) split
// by split, one client's phases (RunClient) in process (Local) or in meshbench-agent client pods (Cluster), every
// request's latency in exact HDR histograms (2xx and errors apart). Args, Parse, merge and Samples are pure. The
// method (phases, fortio pitfalls, histogram geometry): docs/measurement.md, "Load and latency".
package loadgen
