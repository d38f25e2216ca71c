#!/usr/bin/env bash
# status.sh (make istio-status): the local Istio at a glance.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/localistio/lib.sh
source "$HERE/lib.sh"
echo "Istio $ISTIO_VERSION (istio.io/istio $ISTIO_PIN), state $ISTIO_DIR"
for node in "${NODES[@]}"; do
	if agent_alive "$node"; then echo "istio-cni agent $node: pid $(cat "$(agent_pidfile "$node")")"; else echo "istio-cni agent $node: not running"; fi
done
if apiserver_up && [ -x "$ISTIO_BIN/mbistio" ]; then mbistio status; else echo "cluster API not reachable"; fi
