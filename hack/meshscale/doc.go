// Command meshscale runs `meshbench run` itself at the size of a real cluster (issue 15 section 1): on the local
// cluster's real API server and real istiod, with SCALE_PODS pods in SCALE_NAMESPACES namespaces on kwok fake nodes
// (package kwokfleet: no container runs, kwok fakes node and pod status). The pods are an app "existing" to
// meshbench: the harness creates Namespaces, Deployments of fake pods (tolerating the fleet's taint, selecting its
// nodes) with their Services, and one real target (meshbench-agent's server on a real node, since the load clients
// exec into real pods and a fake pod answers nothing). meshbench then switches modes (none, sidecar: istiod's real
// injector mutates every recreated pod), waits, verifies, loads the target and collects every pod's CPU and memory.
//
// The fake pods' CPU and memory come from a stand-in cAdvisor (Exporter): an informer on the harness' pods, series
// with kubelet's cAdvisor labels, published to the local Prometheus by a file_sd file in the kubelet-cadvisor job
// (hack/localcluster/conf/prometheus.yml.in), so collectors/prom reads them like any cAdvisor. A reverse proxy in
// front of Prometheus counts meshbench's queries; an informer clocks each pod's creation and readiness (the
// rollout's time, against meshbench's switch time); meshbench runs as a subprocess whose rusage gives its peak RSS
// and CPU. The figures (Figures) go to figures.json and figures.md and to stdout, with which figures come from
// stand-ins. Ambient is not covered: no istio-cni agent sets ambient.istio.io/redirection on a fake node's pods.
//
// Everything carries meshbench.dev/mesh-scale: at start the harness removes what a killed run left (a kwok whose pid
// it recorded, the file_sd file, namespaces, fake nodes, their pods and leases), and at the end (success, failure,
// Ctrl-C: meshbench gets SIGINT and cleans up its own part) it removes all of it and checks nothing is left.
package main
