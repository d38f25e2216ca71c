# Real Istio control plane (istiod + istio-cni node agents) on the local cluster, with data-plane STAND-INS
# (proxyv2, ztunnel). See hack/localistio/README.md. Needs root and a running cluster (make cluster-up).
ISTIO_E2E_TIMEOUT ?= 45m

.PHONY: istio-build istio-up istio-down istio-status cluster-up-istio e2e-istio istio-unit

istio-build: ## build/cache istiod, istio-cni and the stand-ins from istio.io/istio (hack/localistio/go.mod pin)
	bash hack/localistio/build.sh

istio-up: ## install real istiod + istio-cni agents (+ proxyv2/ztunnel stand-ins) on the running local cluster
	bash hack/localistio/istio-up.sh

istio-down: ## remove the local Istio and every trace of it (cluster objects, agents, host netfilter state)
	bash hack/localistio/istio-down.sh

istio-status: ## istio-system pods, agents and the stand-in marker
	@bash hack/localistio/status.sh

cluster-up-istio: cluster-up ## cluster-up, then istio-up (same as make cluster-up ISTIO=1)
	bash hack/localistio/istio-up.sh

istio-unit: ## the Go HBONE node proxy's tests (hack/localistio/hbonenode: no cluster; as root also in test-made netns)
	cd hack/localistio && $(GO) test -count=1 ./...

e2e-istio: ## only the Istio mode-switch e2e tests (fail instead of skip when Istio is not up)
	MESHBENCH_E2E_ISTIO=1 $(GO) test -tags e2e -count=1 -timeout $(ISTIO_E2E_TIMEOUT) -run 'Istio' -v ./test/e2e/

# make cluster-down removes Istio first: its recipe (hack/mk/cluster.mk) runs $(ISTIO_DOWN), and goes on when that fails.

# make cluster-up ISTIO=1: cluster-up cannot get a post-step without editing cluster.mk, so with ISTIO=1 it gets the
# prerequisite cluster-up-istio (a recursive cluster-up + istio-up); cluster-up's own recipe then finds the cluster
# healthy and only refreshes images (seconds).
ifeq ($(ISTIO),1)
cluster-up: _cluster-up-then-istio
.PHONY: _cluster-up-then-istio
_cluster-up-then-istio:
	$(MAKE) --no-print-directory cluster-up ISTIO=0
	bash hack/localistio/istio-up.sh
endif
