# istiod at scale (hack/istiodscale, issue 13 section 3): kwok-managed fake nodes on the running local cluster with
# the local Istio (make cluster-up ISTIO=1), many injected pods, istiod's CPU and memory per size from Prometheus.
# Not part of make test, .ci/run or e2e: it takes minutes and loads the cluster.
ISTIOD_SCALE_OUT ?= $(CURDIR)/istiod-scale-out
ISTIOD_SCALE_FLAGS ?=

.PHONY: istiod-scale kwok-build

kwok-build: ## build/cache kwok (sigs.k8s.io/kwok, pin in hack/istiodscale/kwok/go.mod) into $MESHBENCH_CLUSTER_DIR/bin/kwok
	bash hack/istiodscale/build-kwok.sh

istiod-scale: kwok-build ## istiod CPU/memory against pods, services and namespaces (kwok fake nodes; ISTIOD_SCALE_FLAGS, ISTIOD_SCALE_OUT)
	. $(MESHBENCH_CLUSTER_DIR)/cluster.env && $(GO) run ./hack/istiodscale -kwok-dir $(MESHBENCH_CLUSTER_DIR)/bin/kwok -out $(ISTIOD_SCALE_OUT) $(ISTIOD_SCALE_FLAGS)
