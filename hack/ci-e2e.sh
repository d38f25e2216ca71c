#!/usr/bin/env bash
# Brings the local cluster up, runs the e2e tests in two phases, and ALWAYS tears the cluster down and proves nothing
# is left, whatever happened (the exit status is the tests' unless teardown leaves something behind).
#   phase 1, no Istio: the paths that must say "no Istio" honestly (preflight FAIL, a sidecar case failing
#            verification instead of measuring an un-meshed app, a run recording the absent mode as failed);
#   phase 2, real istiod + istio-cni, the real sidecar and waypoint (pilot-agent + upstream Envoy) and the ztunnel
#            stand-in (the Go HBONE node proxy): every e2e test but the slow ones of make e2e-slow (E2E_SLOW); the
#            Istio ones fail, not skip;
#   phase 3, istiod re-installed as revision canary without a default: the revision e2e test.
# Outside .ci/run for time, each a documented target: make e2e-slow (the full cni table, own manifests in every mode), make scale (meshbench at
# 1,000 pods in 60 namespaces on kwok fake nodes), make faults (the fault matrix), make bench-envoy and make bench-waypoint.
set -euo pipefail
cd "$(dirname "$0")/.."
teardown() {
  local rc=$?
  make cluster-down || rc=1
  make cluster-check-clean || rc=1
  exit $rc
}
trap teardown EXIT
start=$(date +%s)
make cluster-up ISTIO=0
make istio-down >/dev/null 2>&1 || true # a cluster reused from an earlier run may still have Istio
echo "cluster-up took $(( $(date +%s) - start ))s"
make e2e E2E_RUN='^(TestCluster|TestMeshPreflight|TestMeshSidecarWithoutIstioFailsVerification|TestRunAbsentDataPlaneFailsVerification)$'
start=$(date +%s)
make istio-up
echo "istio-up took $(( $(date +%s) - start ))s"
make istio-unit # the node proxy's own tests; istio-up just compiled what they need
start=$(date +%s)
MESHBENCH_E2E_ISTIO=1 make e2e E2E_SKIP="$(make -s --no-print-directory print-e2e-slow)"
echo "e2e (phase 2) took $(( $(date +%s) - start ))s"
# phase 3: istiod as revision "canary" with no default revision (what a Helm revision install gives): sidecar
# injection, ambient enrolment and a Programmed waypoint must all work through meshbench's revision handling.
start=$(date +%s)
make istio-down
make istio-up ISTIO_CP_REVISION=canary
echo "istio-up (revision canary) took $(( $(date +%s) - start ))s"
MESHBENCH_E2E_ISTIO=1 MESHBENCH_E2E_ISTIO_REVISION=canary make e2e E2E_RUN='^TestIstioRevision'
