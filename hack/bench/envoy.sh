#!/usr/bin/env bash
# envoy.sh (make bench-envoy, make bench-waypoint): real Envoy's cost on the local test bed, the sidecar's (issue 30)
# or, with examples/bench-waypoint.yaml, the waypoint's beside the ztunnel stand-in's (issue 31). Needs the local cluster
# with the local Istio (make cluster-up ISTIO=1), whose sidecar is pilot-agent + upstream Envoy. Runs
# examples/bench-envoy.yaml (or $1: none and sidecar at three load levels, three repetitions, 1 KB payloads), then
# prints what the comparison with Istio's published figures needs: `meshbench project`'s fits (CPU and memory
# against load, 95 % intervals), the per-workload table (the leaf's proxy sees each request once, inbound, as the
# server's proxy of Istio's test), the per-1000-rps table and the latency each level adds over none.
# About 40 minutes (the plan's estimate); a benchmark, never a timed test.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO"
SCENARIO=${1:-examples/bench-envoy.yaml}
OUT=${BENCH_OUTPUT_DIR:-runs}
MESHBENCH=${MESHBENCH:-$REPO/bin/meshbench}
env_file=${MESHBENCH_CLUSTER_DIR:-/var/lib/meshbench/localcluster}/cluster.env
[ -f "$env_file" ] || { echo "bench-envoy: the local cluster is not up ($env_file): make cluster-up ISTIO=1" >&2; exit 1; }
set -a
# shellcheck source=/dev/null
. "$env_file"
set +a
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
"$MESHBENCH" preflight -f "$SCENARIO"
"$MESHBENCH" run -f "$SCENARIO" --output-dir "$OUT"
dir=$(find "$OUT" -mindepth 2 -maxdepth 2 -name run.json -newer "$marker" -printf '%T@ %h\n' | sort -n | tail -1 | cut -d' ' -f2-)
[ -n "$dir" ] || { echo "bench-envoy: no run directory under $OUT" >&2; exit 1; }
echo
echo "== fits (meshbench project: fixed + slope x load per pod, 95 % intervals; shape = the bench's own 2 pods at 1000 rps)"
"$MESHBENCH" project "$dir" --pods 2 --nodes 2 --namespaces 1 --rps 1000
echo
echo "== per workload, per 1000 rps, latency"
"$MESHBENCH" report "$dir" --no-files --show workloads,per-krps,latency,modes
echo
echo "run: $dir"
