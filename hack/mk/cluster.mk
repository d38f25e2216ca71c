# Local two-node Kubernetes cluster for e2e tests (hack/localcluster, see its README.md). Needs root.
# State (and the build cache) live in MESHBENCH_CLUSTER_DIR, outside the repository, so every clone finds them.
MESHBENCH_CLUSTER_DIR ?= /var/lib/meshbench/localcluster
export MESHBENCH_CLUSTER_DIR
E2E_TIMEOUT ?= 60m

.PHONY: cluster-up cluster-down cluster-status cluster-check-clean cluster-build e2e e2e-slow print-e2e-slow

cluster-up: ## start (or refresh) the local two-node cluster + Prometheus; builds and caches binaries on first use
	bash hack/localcluster/up.sh

# The two teardown steps, as variables so that hack/mk's test can run cluster-down's wiring with stand-ins (it must
# never touch the real cluster).
ISTIO_DOWN ?= bash hack/localistio/istio-down.sh
CLUSTER_DOWN ?= bash hack/localcluster/down.sh

# cluster-down removes the local Istio first (its host agents and netfilter state would outlive the cluster; a no-op
# when Istio was never built or installed), and stops the cluster even when that step fails: a newcomer's documented
# way out must always take the cluster down. The exit status still reports a failed step.
cluster-down: ## stop the local cluster (local Istio first, if any) and remove everything it created on the host (also after a killed run)
	@rc=0; $(ISTIO_DOWN) || { rc=$$?; echo "cluster-down: istio-down failed (exit $$rc): stopping the cluster anyway; run 'make istio-down' again afterwards" >&2; }; \
	  $(CLUSTER_DOWN) || exit $$?; exit $$rc

cluster-status: ## kubeconfig, Prometheus URL, daemons, nodes and pods of the local cluster
	@bash hack/localcluster/status.sh

cluster-check-clean: ## fail loudly if any process, mount, netns, link, route, iptables chain or cgroup of the cluster remains
	@bash hack/localcluster/check-clean.sh

cluster-build: ## only build/cache the cluster binaries and images (no root needed)
	bash hack/localcluster/build.sh

# The e2e tests too slow for .ci/run and covered there by faster ones (E2E_SLOW: `make e2e-slow` runs them):
# TestCNIFullTable, every path x test of `meshbench cni` with 3 samples each (about 10 minutes); CI keeps the cni
# path through TestCNICtrlC (a cni run interrupted and torn down) and TestCNINetworkImagePinned (a cni run's
# figures, its pinned image and tool versions), and the tools' Args/Parse on captured output in unit tests.
# TestRunManifestsEveryModeIstio, a team's own kustomization through all four modes (about 8 minutes since the
# waypoint case carries real traffic): CI keeps every mode's path through TestRunEveryModeIstio (same runner, fortio
# chain), own manifests through TestWorkloadsManifestsServerDryRun (rendered and server-side dry-run) and an existing
# app through TestRunExistingAppRestoresExactly.
# TestRunTransitionSidecarToAmbient and TestRunEnforceSidecarAndWaypoint, a move and a deny policy under load with
# real Envoy (about 8 minutes each): CI keeps their runner paths through the fake-clock unit tests (TestTransitionCase,
# TestEnforceCase, TestEnforceInterruptedRemovesThePolicy), the per-second record through TestPerSecondRecord (real
# fortio) and the policy's shape through TestDenyPolicy (pinned to istio/istio 1.24.0).
# TestRunVariantsMTLSAndL7Rules, STRICT vs PERMISSIVE sidecars and 1 vs 100 L7 rules on the waypoint over two
# repetitions (about 23 minutes): CI keeps the runner's variant path through TestRunVariant*, the objects' shape
# through TestVariantObjects (decoded by Istio's own API types) and the comparison through TestSummarizeVariants.
# TestRunTrafficShapes, a new connection per request, and HTTP/2 with a 16 KiB body, without a mesh and with sidecars,
# over two repetitions (about 16 minutes): CI keeps the settings' effect on real fortio through
# TestLocalRunTrafficShapes, their proof through TestLoadVariantSpecAndProof and the variant-only switch through
# TestRunVariant.
# TestRunTracing, Envoy tracing at 0, 1 and 100 % on sidecars and 100 % on the waypoint to the run's span sink (about
# 16 minutes): CI keeps the sink on real HTTP through TestSpansServesAndStops and TestHandler, the mesh config edit
# and its cleanup through TestZipkinProviderEdit and TestMeshConfigEditor, the Telemetry through TestVariantObjects
# and the proofs through TestProveTracing, TestTracedLoad and TestCheckSpans.
E2E_SLOW ?= ^(TestCNIFullTable|TestRunManifestsEveryModeIstio|TestRunTransitionSidecarToAmbient|TestRunEnforceSidecarAndWaypoint|TestRunVariantsMTLSAndL7Rules|TestRunTrafficShapes|TestRunTracing)$$
E2E_SKIP ?=

e2e: ## e2e tests against the local cluster (make cluster-up first; skipped without a cluster unless CI=true; E2E_RUN, E2E_SKIP)
	$(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) $(if $(E2E_RUN),-run '$(E2E_RUN)') $(if $(E2E_SKIP),-skip '$(E2E_SKIP)') ./test/e2e/...

print-e2e-slow:
	@echo '$(E2E_SLOW)'

e2e-slow: ## the e2e tests .ci/run leaves out for time (E2E_SLOW: the full cni table, own manifests in every mode, a move and a deny policy under load, variants, traffic shapes, tracing; about 90 minutes)
	$(MAKE) --no-print-directory e2e E2E_RUN='$(E2E_SLOW)' E2E_SKIP=
