# Load generator benchmark: meshbench-agent load (the fortio library as meshbench drives it) against wrk on one
# loopback fortio server, server and client pinned to different CPUs; plus fixed-QPS accuracy at 1000 qps.
# Targets: max-QPS ratio >= 0.95, accuracy >= 99.5 %. Needs wrk and taskset (Debian: wrk, util-linux).
BENCH_LOADGEN_FLAGS ?= -rounds 5

.PHONY: bench-loadgen

bench-loadgen: ## loadgen max-QPS ratio vs wrk (pinned CPUs, medians) and fixed 1000-qps accuracy
	CGO_ENABLED=0 $(GO) build -o $(BIN)/meshbench-agent ./cmd/meshbench-agent
	$(GO) run ./hack/bench/loadgen -agent $(BIN)/meshbench-agent $(BENCH_LOADGEN_FLAGS)

bench: bench-loadgen
