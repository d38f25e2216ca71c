#!/usr/bin/env bash
# cni-agent.sh NODE: exec the REAL istio-cni node agent (install-cni from istio.io/istio, ambient mode) for NODE as a
# host process. istio-up.sh starts it detached (setsid) and records its pid; nsenter and unshare exec, so that pid
# ends up being the supervisor's (mbistio supervise), whose child is install-cni.
#
# Why not Istio's DaemonSet: on this VM, PID 1 (process_api) has unreadable /proc/1/ns/*, and the agent stats
# /host/proc/1/ns/net to learn the host netns; the DaemonSet cannot work around that. So the agent runs in the
# node's mount namespace (node2 also in netns mb-node2) inside a private mount namespace that recreates the
# DaemonSet's mounts:
#   /host/proc                     the host /proc, with /host/proc/1/ns bind-mounted from this shell's own ns dir
#   /host/etc/cni/net.d            a scratch COPY of the node's CNI conf dir (the real CNI chain is not modified:
#                                  capture is asynchronous, through the agent's pod informer + /proc netns discovery)
#   /host/opt/cni/bin              scratch dir the installer copies the istio-cni plugin into
#   /host/var/run/netns            the node's /run/netns (pod netns live there, inside the node mount namespace)
#   /var/run/secrets/kubernetes.io/serviceaccount   token/ca.crt/namespace of SA istio-system/istio-cni
# Its environment is the rendered istio-cni-config ConfigMap + the DaemonSet's literal env (manifests/istio-cni-env.json),
# then the per-node values a DaemonSet would get from the downward API.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/localistio/lib.sh
source "$HERE/lib.sh"
node=${1:?usage: cni-agent.sh NODE}

NSENTER=(nsenter --mount="$(node_mntns "$node")" --wd="$ISTIO_DIR")
[ "$node" = "$NODE1" ] || NSENTER+=(--net="/run/netns/$NETNS2")

export AGENT_NODE=$node ISTIO_DIR ISTIO_BIN ISTIO_RUN ZDS_DIR APISERVER_URL NODE1_IP CLUSTER_CA=$S/pki/ca.crt
exec "${NSENTER[@]}" unshare --mount --propagation private -- bash -euc '
F=$ISTIO_DIR R=$ISTIO_RUN/cni-$AGENT_NODE
mount -t tmpfs mbistio-host /host
mkdir -p /host/proc /host/opt/cni/bin /host/etc/cni/net.d /host/var/run/netns
mount --rbind /proc /host/proc
mount --bind /proc/$$/ns /host/proc/1/ns   # PID 1 ns links are unreadable on this VM; this shell is in the right netns
mount --bind $R/net.d /host/etc/cni/net.d
mount --bind $R/bin /host/opt/cni/bin
[ -d /run/netns ] && mount --rbind /run/netns /host/var/run/netns
mount -t tmpfs mbistio-opt /opt
mkdir -p /opt/cni/bin && cp $ISTIO_BIN/istio-cni /opt/cni/bin/istio-cni
mount -t tmpfs mbistio-sa /run/secrets
mkdir -p /run/secrets/kubernetes.io/serviceaccount && cp $ISTIO_RUN/agent-creds/sa/* /run/secrets/kubernetes.io/serviceaccount/

eval "$($ISTIO_BIN/mbistio cni-env $F/manifests/istio-cni-env.json)"
unset ALLOW_SWITCH_TO_HOST_NS   # already in the node netns
export KUBECONFIG=$ISTIO_RUN/agent-creds/kubeconfig
export KUBERNETES_SERVICE_HOST=$NODE1_IP KUBERNETES_SERVICE_PORT=6443
export NODE_NAME=$AGENT_NODE REPAIR_NODE_NAME=$AGENT_NODE POD_NAME=istio-cni-node-$AGENT_NODE POD_NAMESPACE=istio-system
export CNI_AGENT_RUN_DIR=$R/run ZTUNNEL_UDS_ADDRESS=$ZDS_DIR/$AGENT_NODE/ztunnel.sock
# SIGTERM then removes everything (host rules, sets, pod rules) instead of leaving pods captured for a new agent.
export AMBIENT_DISABLE_SAFE_UPGRADE=true
# The supervisor ends the agent (SIGTERM: full cleanup) if the cluster is torn down under it (cluster CA gone/changed).
exec $ISTIO_BIN/mbistio supervise -watch-file $CLUSTER_CA -- $ISTIO_BIN/install-cni --log_output_level=${ISTIO_CNI_LOG_LEVEL:-info}
'
