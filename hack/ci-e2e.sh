#!/usr/bin/env bash
# Brings the local cluster up (with Istio when ISTIO=1), runs the e2e tests, and ALWAYS tears the cluster down and
# proves nothing is left, whatever happened (the exit status is the tests' unless teardown leaves something behind).
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
make cluster-up ISTIO="${ISTIO:-1}"
echo "cluster-up took $(( $(date +%s) - start ))s"
make e2e
