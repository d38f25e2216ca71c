#!/usr/bin/env bash
# istio-down.sh (make istio-down): remove the local Istio completely: the istio-cni agents (SIGTERM, so they take
# their host and in-pod rules with them), every object istio-up applied (CRDs included, so also every Istio and
# Gateway API resource and the waypoints istiod made from them), what istiod wrote on its own (istio-ca-root-cert in
# every namespace, GatewayClasses), the stand-in marker, and any host state a killed run left. Works without a
# running cluster (host cleanup only), and twice in a row. The build cache ($ISTIO_DIR/bin, images) is kept.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LI_VERSION_OPTIONAL=1 # removing needs no Istio version (and must not download a module to find one)
# shellcheck source=hack/localistio/lib.sh
source "$HERE/lib.sh"

# Never built and never installed here (e.g. after `make demo` on a machine that skipped Istio, or a fresh state
# dir): there is nothing of Istio to remove, and no agent or host rule can exist without the binaries in $ISTIO_BIN.
# Say so and succeed, so that `make cluster-down` goes on to stop the cluster.
if ! [ -e "$ISTIO_BIN/install-cni" ] && ! [ -e "$ISTIO_BIN/mbistio" ] && ! [ -d "$ISTIO_RUN" ] && ! [ -d "$ISTIO_DIR/manifests" ]; then
	log "istio-down: the local Istio was never built or installed in $ISTIO_DIR: nothing to remove"
	exit 0
fi

# shellcheck source=hack/localistio/host-cleanup.sh
source "$HERE/host-cleanup.sh"
require_root
mkdir -p "$ISTIO_DIR" "$ISTIO_RUN/pids"
exec 8>"$ISTIO_DIR/.lock"
flock -n 8 || die "another istio-up/istio-down is running on $ISTIO_DIR"

api=0
[ -x "$ISTIO_BIN/mbistio" ] && apiserver_up && api=1

# 1. the agents first, while the ztunnel stand-in still acks their Del messages
stop_agents

# 2. cluster objects, in the reverse order of istio-up (webhooks go with istiod.yaml before anything can hit them)
M=$ISTIO_DIR/manifests
istio_objects=0
[ $api = 1 ] && [ -f "$M/istiod.yaml" ] && istio_objects=1
if [ $istio_objects = 1 ]; then
	for f in "$M/ztunnel.yaml" "$M/istio-cni.yaml" "$M/istiod.yaml"; do
		[ -f "$f" ] && mbistio delete "$f" >/dev/null
	done
	mbistio marker delete || true
	for f in "$ISTIO_DIR"/crds/istio-crds.yaml "$ISTIO_DIR"/crds/gateway-api-*-standard.yaml; do
		[ -f "$f" ] && mbistio delete "$f" >/dev/null
	done
	log "Istio objects deleted (CRDs included: every Istio/Gateway API resource and the waypoints made from them go too)"
elif [ -f "$M/istiod.yaml" ]; then
	log "cluster API not reachable: host cleanup only"
fi

# 3. host state (also whatever a killed run left), the capture rules in ambient pods' netns included
host_cleanup

# 4. what Istio wrote on its own (istio-ca-* ConfigMaps, GatewayClasses, pod annotations), then istio-system
if [ $istio_objects = 1 ]; then
	mbistio cleanup | sed 's/^/  /' >&2
	mbistio delete "$M/namespace.yaml" >/dev/null
	log "cluster clean (namespace istio-system terminating)"
fi
rm -rf "$ISTIO_RUN" "$ISTIO_DIR/istio.env"
log "istio down ($(elapsed)s)"
