# Load generator benchmark: meshbench-agent load (the fortio library as meshbench drives it) against wrk and a plain
# Go keep-alive client (the Go floor) on one loopback fortio server, server and client pinned to different CPUs:
# max QPS and client CPU per request (rusage) for each; plus fixed-QPS accuracy at 1000 qps. Findings and how to
# profile (-cpuprofile DIR): docs/architecture.md, "Load generator benchmark".
# Targets: max-QPS ratio >= 0.95, accuracy >= 99.5 %. Needs wrk and taskset (Debian: wrk, util-linux).
BENCH_LOADGEN_FLAGS ?= -rounds 5

.PHONY: bench-loadgen

bench-loadgen: ## loadgen max-QPS ratio and CPU per request vs wrk and a Go floor (pinned CPUs, medians), 1000-qps accuracy
	CGO_ENABLED=0 $(GO) build -o $(BIN)/meshbench-agent ./cmd/meshbench-agent
	$(GO) run ./hack/bench/loadgen -agent $(BIN)/meshbench-agent $(BENCH_LOADGEN_FLAGS)

bench: bench-loadgen

# Scale (issue 15 section 1): Kubernetes API requests of one case's path at 10, 1,000 and 5,000 pods on the fake
# clientset (requests/case must not grow with pods; TestCaseAPIRequestsDoNotGrowWithPods asserts it). No cluster.
.PHONY: bench-scale

bench-scale: ## API requests per case at 10 / 1,000 / 5,000 pods (fake API, medians via -count 5)
	$(GO) test -run '^$$' -bench 'BenchmarkCaseAPIRequests' -benchmem -count 5 ./orchestrate/

# Collection at scale (issue 15 section 1): one window's resource collection (prom.Collector.Collect) against the
# real Prometheus (Debian prometheus + promtool backfill) at 1,000 and 5,000 pods in 60 namespaces: time per window,
# queries/window, peak heap during collection and the peak RSS of a process that collects one window. Targets:
# 1,000 pods < 2 s, 5,000 pods < 5 s, peak memory < 300 MB. Medians over -count 5 (hack/bench/medians).
BENCH_COLLECT_COUNT ?= 5

.PHONY: bench-collect

bench-collect: ## one window's collection at 1,000 / 5,000 pods, 60 namespaces (real Prometheus; medians via -count 5)
	set -o pipefail; $(GO) test -run '^$$' -bench 'BenchmarkCollectWindow' -count $(BENCH_COLLECT_COUNT) -timeout 60m ./collectors/prom/ | $(GO) run ./hack/bench/medians

# Real Envoy's sidecar cost on the local test bed (issue 30): examples/bench-envoy.yaml (none and sidecar, 150/300/600
# qps, 3 repetitions, 1 KB) on the local cluster with the local Istio (make cluster-up ISTIO=1), then the fits of
# `meshbench project` and the report's per-workload, per-krps and latency tables. About 40 minutes.
.PHONY: bench-envoy

bench-envoy: build ## real Envoy sidecar: CPU/memory per 1000 rps (project fits, 3 levels x 3 reps) and added latency (local cluster + Istio)
	MESHBENCH=$(CURDIR)/$(BIN)/meshbench bash hack/bench/envoy.sh $(BENCH_ENVOY_SCENARIO)

# The real Envoy waypoint's cost (issue 31): examples/bench-waypoint.yaml (none, ambient and waypoint, 150/300/600 qps,
# 3 repetitions, 1 KB; each request crosses the waypoint twice), the same fits and tables. About 55 minutes.
.PHONY: bench-waypoint

bench-waypoint: build ## real Envoy waypoint: CPU/memory per 1000 rps and the latency ambient and waypoint add (local cluster + Istio)
	MESHBENCH=$(CURDIR)/$(BIN)/meshbench bash hack/bench/envoy.sh examples/bench-waypoint.yaml
