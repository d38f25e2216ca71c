# meshbench at cluster size (hack/meshscale, issue 15 section 1): `meshbench run` itself against the local cluster's
# real API server and real istiod, with SCALE_PODS pods in SCALE_NAMESPACES namespaces on kwok fake nodes (no
# containers; a stand-in cAdvisor for their CPU/memory), modes none and sidecar, short windows. Prints the figures
# (API requests per case, switch vs rollout time, collection time and queries per window, meshbench's peak RSS,
# overhead per case against a 10-minute window) and writes them to $(SCALE_OUT)/figures.json.
# Needs the cluster with the local Istio (make cluster-up ISTIO=1) and kwok (make kwok-build). Not part of make
# test or e2e, nor of .ci/run (it was its phase 2b until issue 30 needed the time): it takes minutes and loads the
# cluster.
SCALE_PODS ?= 1000
SCALE_NAMESPACES ?= 60
SCALE_OUT ?= $(CURDIR)/scale-out
SCALE_FLAGS ?=
SCALE_KWOK_DIR ?= $(MESHBENCH_CLUSTER_DIR)/bin/kwok

.PHONY: scale

scale: kwok-build ## meshbench run at SCALE_PODS pods / SCALE_NAMESPACES namespaces on kwok fake nodes (SCALE_PODS=5000 for 5k; SCALE_FLAGS, SCALE_OUT)
	$(GO) build -o $(BIN)/meshbench ./cmd/meshbench
	set -a; . $(MESHBENCH_CLUSTER_DIR)/cluster.env; set +a; $(GO) run ./hack/meshscale -meshbench $(CURDIR)/$(BIN)/meshbench \
		-kwok-dir $(SCALE_KWOK_DIR) -state-dir $(MESHBENCH_CLUSTER_DIR) -out $(SCALE_OUT) \
		-pods $(SCALE_PODS) -namespaces $(SCALE_NAMESPACES) $(SCALE_FLAGS)
