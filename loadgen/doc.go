// Package loadgen drives load with fortio, as a library (fortio.org/fortio/{fhttp,periodic,stats}; never the root
// package or fortio's cli).
//
// There are two ways to run it:
//   - in process (Local): fortio's fhttp runner in this process, for tests and benchmarks;
//   - in the cluster (Cluster): meshbench-agent client pods in the same namespace (and so the same data-plane mode)
//     as the app's entry service, driven by exec of `meshbench-agent load ...`.
//
// Both run the same phases per client (warm-up, measured, cool-down; see RunClient) and print the same Report. Args
// builds the agent's command line, Parse reads a Report (or a plain fortio JSON result) back, and Merge combines
// the clients: QPS summed, latency histograms merged bucket by bucket (fortio's HistogramData), response codes summed.
// Args, Parse, Merge and Samples are pure.
package loadgen
