# The fault matrix (issue 15 section 2, test/e2e/faults_test.go, docs/reliability.md): `meshbench run` on the local
# cluster meets SIGINT/SIGTERM and kill -9 in each phase, a kube-apiserver restart, a Prometheus outage and a full
# output directory. Needs the cluster with the local Istio (make cluster-up ISTIO=1) and root (fault.sh, tmpfs).
# Not part of .ci/run: the cells take about 40 minutes together on two cores, over .ci/run's budget.
FAULTS_TIMEOUT ?= 90m
FAULTS_RUN ?= ^TestFault

.PHONY: faults

faults: ## fault-matrix e2e cells (signals, kill -9 + resume, apiserver/Prometheus faults, full disk) on the running cluster
	MESHBENCH_E2E_ISTIO=1 $(GO) test -tags e2e,faults -count=1 -timeout $(FAULTS_TIMEOUT) -run '$(FAULTS_RUN)' -v ./test/e2e/
