// Package loadgen drives load with fortio, as a library (fortio.org/fortio/{fhttp,fgrpc,tcprunner,periodic}; never
// the root package or fortio's cli).
//
// A run has one or more targets (http, grpc health check, tcp echo), each with a weight: Split shares the QPS and
// every client's connections between them, and every client runs one fortio run per target at the same time. The
// merged Result is over all targets; with several, Result.Targets has each one's own, and Samples labels those
// target=<name>.
//
// There are two ways to run it:
//   - in process (Local): fortio's fhttp runner in this process, for tests and benchmarks;
//   - in the cluster (Cluster): meshbench-agent client pods in the same namespace (and so the same data-plane mode)
//     as the app's entry service, driven by exec of `meshbench-agent load ...`.
//
// Both run the same phases per client (warm-up, measured, cool-down; see RunClient) and print the same Report. In
// the measured phase every request's latency is recorded through fortio's periodic.AccessLogger hook into HDR
// histograms (github.com/HdrHistogram/hdrhistogram-go, 1 µs to 60 s, 4 significant figures), one for 2xx responses
// and one for the rest, so error responses never shift the latency percentiles and milliseconds are resolved where
// fortio's own fixed buckets are 10 ms wide. A Report carries them as sparse [value, count] pairs.
//
// Args builds the agent's command line, Parse reads a Report back, and Merge combines the clients: QPS summed,
// histograms merged exactly, response codes summed. Args, Parse, Merge and Samples are pure.
package loadgen
