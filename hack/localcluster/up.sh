#!/usr/bin/env bash
# up.sh (make cluster-up): a real two-node Kubernetes cluster on this machine.
#
#   node1  host network namespace, node IP 172.30.0.1 (host side of veth mbnode2), pods 10.244.0.0/24 on mbcni0;
#          also runs the control plane (etcd, apiserver on 172.30.0.1:6443, controller-manager, scheduler)
#   node2  network namespace mb-node2, node IP 172.30.0.2 (eth0 there), pods 10.244.1.0/24, cgroupRoot /mb-node2
#
# Each node's containerd + kubelet + kube-proxy share one private, persistent mount namespace, so overlay, shm and tmpfs
# mounts, pod netns, shim sockets and kubelet's /var/log/containers never appear on the host. Prometheus runs on
# 127.0.0.1:19090 and scrapes both kubelets. A real OCI registry runs on 172.30.0.1:5000: every image is pushed there
# (meshbench's own with `meshbench images push`) and the nodes' containerd pull from it. The result is described in
# $S/cluster.env.
#
# If a healthy cluster is already running this only re-pushes the images (unchanged blobs are skipped; a node's cached
# copy of a re-tagged image is dropped so the next pod pulls the new one) and exits: seconds. Otherwise it first
# removes whatever an earlier (possibly killed) run left behind, then starts from fresh data.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=teardown.sh
source "$LC_DIR/teardown.sh"
# shellcheck source=build.sh
source "$LC_DIR/build.sh"
# shellcheck source=pki.sh
source "$LC_DIR/pki.sh"

DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler
	"containerd-$NODE1" "kubelet-$NODE1" "kube-proxy-$NODE1"
	"containerd-$NODE2" "kubelet-$NODE2" "kube-proxy-$NODE2" prometheus registry)

preflight() {
	local c
	require_root
	for c in containerd containerd-shim-runc-v2 runc ctr iptables ip6tables ip nsenter unshare setsid openssl prometheus docker-registry \
		busybox iperf3 ldd dpkg-query go bc curl jq ss mountpoint; do
		command -v "$c" >/dev/null || die "missing command: $c (see hack/localcluster/README.md for the apt packages)"
	done
	# unix socket paths are limited to 108 bytes
	[ ${#S} -le 60 ] || die "MESHBENCH_CLUSTER_DIR is too long (${#S} > 60 chars) for unix socket paths"
	[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || modprobe br_netfilter 2>/dev/null || true
	[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || die "net.bridge.bridge-nf-call-iptables missing: load br_netfilter"
}

# ports_free: the fixed ports the cluster binds must not be held by anything else (ours were stopped already).
ports_free() {
	local busy
	busy=$(ss -Hltn | awk '{ print $4 }' | grep -E '(127\.0\.0\.1|0\.0\.0\.0|\*|\[::\]|172\.30\.0\.1):(2379|2380|2381|5000|6443|10248|10249|10250|10256|10257|10259|19090)$' || true)
	[ -z "$busy" ] || die "ports needed by the cluster are in use by other processes: $(echo "$busy" | tr '\n' ' ') ($(ss -Hltnp | grep -E ':(2379|2380|2381|5000|6443|10248|10249|10250|10256|10257|10259|19090) ' | grep -oE 'users:\(\(.*\)\)' | sort -u | tr '\n' ' '))"
}

curl_admin() { curl -sf --max-time 5 --cacert "$S/pki/ca.crt" --cert "$S/pki/admin.crt" --key "$S/pki/admin.key" "$@"; }
apiserver_ready() { [ "$(curl_admin "$APISERVER_URL/readyz")" = ok ]; }
mbctl() { "$S/bin/tools/mbctl" -kubeconfig "$S/kubeconfig/admin.kubeconfig" "$@"; }
prom_ready() { curl -sf --max-time 3 "$PROM_URL/-/ready" >/dev/null; }
# prom_targets_up: number of kubelet scrape targets (2 kubelets x 2 endpoints) whose last scrape worked.
prom_targets_up() { curl -sf --max-time 3 "$PROM_URL/api/v1/query" --data-urlencode 'query=count(up == 1)' | jq -r '.data.result[0].value[1] // 0'; }
prom_all_up() { [ "$(prom_targets_up)" = 4 ]; }

cluster_healthy() {
	local d
	[ -f "$S/cluster.env" ] || return 1
	for d in "${DAEMONS[@]}"; do daemon_alive "$d" || return 1; done
	apiserver_ready || return 1
	mbctl -timeout 5s wait-nodes 2 >/dev/null 2>&1 || return 1
	prom_ready || return 1
	registry_ready
}

registry_ready() { curl -sf --max-time 3 "http://$REGISTRY_ADDR/v2/" >/dev/null; }

# render SRC DST: fill the @KEY@ placeholders of a template from the settings in lib.sh (+ per-node ones).
render() {
	local node=${3:-}
	mkdir -p "$(dirname "$2")"
	sed -e "s|@S@|$S|g" -e "s|@NODE@|$node|g" -e "s|@NODE_IP@|$(node_ip "${node:-$NODE1}")|g" \
		-e "s|@POD_CIDR@|$(node_pod_cidr "${node:-$NODE1}")|g" -e "s|@CGROUP_ROOT@|$([ "$node" = "$NODE2" ] && echo /mb-node2 || echo /)|g" \
		-e "s|@BRIDGE@|$BRIDGE|g" -e "s|@CLUSTER_CIDR@|$CLUSTER_CIDR|g" -e "s|@DNS_IP@|$DNS_IP|g" \
		-e "s|@IMG_PAUSE@|$IMG_PAUSE|g" -e "s|@IMG_COREDNS@|$IMG_COREDNS|g" -e "s|@REGISTRY_ADDR@|$REGISTRY_ADDR|g" \
		-e "s|@NODE1@|$NODE1|g" -e "s|@NODE2@|$NODE2|g" -e "s|@NODE1_IP@|$NODE1_IP|g" -e "s|@NODE2_IP@|$NODE2_IP|g" \
		-e "s|@NODE1_POD_CIDR@|$NODE1_POD_CIDR|g" -e "s|@NODE2_POD_CIDR@|$NODE2_POD_CIDR|g" "$1" >"$2"
	! grep -n '@[A-Z0-9_]*@' "$2" || die "unrendered placeholder in $2"
}

render_configs() {
	local node
	for node in "$NODE1" "$NODE2"; do
		render "$LC_DIR/conf/containerd.toml.in" "$S/conf/$node/containerd.toml" "$node"
		render "$LC_DIR/conf/kubelet.yaml.in" "$S/conf/$node/kubelet.yaml" "$node"
		render "$LC_DIR/conf/kube-proxy.yaml.in" "$S/conf/$node/kube-proxy.yaml" "$node"
		render "$LC_DIR/conf/cni.conflist.in" "$S/conf/$node/cni/10-mbnet.conflist" "$node"
		render "$LC_DIR/conf/registry-hosts.toml.in" "$S/conf/$node/certs.d/$REGISTRY_ADDR/hosts.toml" "$node"
	done
	render "$LC_DIR/conf/registry.yml.in" "$S/conf/registry.yml"
	render "$LC_DIR/conf/prometheus.yml.in" "$S/conf/prometheus.yml"
	render "$LC_DIR/manifests/nodes.yaml.in" "$S/conf/nodes.yaml"
	render "$LC_DIR/manifests/coredns.yaml.in" "$S/conf/coredns.yaml"
	echo "# intentionally empty: pods get cluster DNS only" >"$S/conf/resolv.conf"
}

# reset_state: fresh data/run/logs/pki/conf for every fresh start ($S/bin, the cache, is kept). Refuses to delete
# anything while something is still mounted below the state dir.
reset_state() {
	[ -z "$(our_mounts)" ] || die "still mounted under $S, refusing to delete: $(our_mounts | tr '\n' ' ')"
	rm -rf --one-file-system "$S"/{data,run,logs,pki,kubeconfig,conf,build}
	mkdir -p "$S"/{data,run/pids,logs,pki,kubeconfig,conf,build}
}

# setup_host: sysctls (old values recorded in the ledger) and the node2 network namespace + veth + routes.
setup_host() {
	# iptables-nft creates its tables on first use; remember which did not exist so down can drop them again.
	local tbl k
	command -v nft >/dev/null && for tbl in "ip filter" "ip nat" "ip mangle" "ip raw" "ip6 filter" "ip6 nat" "ip6 mangle" "ip6 raw"; do
		# shellcheck disable=SC2086
		nft list table $tbl >/dev/null 2>&1 || ledger_has nft "${tbl/ /:}" || ledger_add nft "${tbl/ /:}" absent
	done
	for k in "${KUBE_SYSCTLS[@]}"; do record_sysctl "$k"; done
	set_sysctl net.ipv4.ip_forward 1
	set_sysctl net.bridge.bridge-nf-call-iptables 1
	# `ip netns add` and util-linux mount would create these; record them so down can remove them again.
	make_host_dir /run/netns
	make_host_dir /run/mount
	for d in "${NODE_MNT_DIRS[@]}"; do make_host_dir "$d"; done
	ip netns add "$NETNS2"
	ip link add "$VETH2" type veth peer name eth0 netns "$NETNS2"
	ip addr add "$NODE1_IP/24" dev "$VETH2"
	ip link set "$VETH2" up
	ip -n "$NETNS2" addr add "$NODE2_IP/24" dev eth0
	ip -n "$NETNS2" link set eth0 up
	ip -n "$NETNS2" link set lo up
	ip -n "$NETNS2" route add default via "$NODE1_IP"
	# per-netns sysctls (they die with the netns, no need to record them)
	ip netns exec "$NETNS2" sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward; echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables'
	# node2's pods are behind node2; node1's pod subnet is local (mbcni0), node2 reaches it via its default route.
	ip route add "$NODE2_POD_CIDR" via "$NODE2_IP" dev "$VETH2"
}

start_control_plane() {
	start_daemon etcd "$S/bin/etcd" --name mb-etcd --data-dir "$S/data/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster mb-etcd=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
		--quota-backend-bytes 2147483648 --unsafe-no-fsync --log-level warn
	wait_for 30 "etcd health" bash -c 'curl -sf --max-time 2 http://127.0.0.1:2379/health | grep -q true'
	log "etcd $ETCD_VERSION healthy"

	start_daemon kube-apiserver "$S/bin/k8s/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--bind-address="$NODE1_IP" --secure-port=6443 --advertise-address="$NODE1_IP" \
		--tls-cert-file="$S/pki/apiserver.crt" --tls-private-key-file="$S/pki/apiserver.key" --client-ca-file="$S/pki/ca.crt" \
		--service-account-key-file="$S/pki/sa.pub" --service-account-signing-key-file="$S/pki/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC \
		--enable-admission-plugins=NodeRestriction --allow-privileged=true \
		--kubelet-client-certificate="$S/pki/apiserver-kubelet-client.crt" --kubelet-client-key="$S/pki/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$S/pki/ca.crt" --kubelet-preferred-address-types=InternalIP,Hostname \
		--profiling=false --v=1
	wait_for 60 "kube-apiserver /readyz" apiserver_ready
	log "kube-apiserver $K8S_VERSION ready on $APISERVER_URL"

	start_daemon kube-controller-manager "$S/bin/k8s/kube-controller-manager" \
		--kubeconfig="$S/kubeconfig/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$S/kubeconfig/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$S/kubeconfig/controller-manager.kubeconfig" \
		--service-account-private-key-file="$S/pki/sa.key" --root-ca-file="$S/pki/ca.crt" \
		--cluster-signing-cert-file="$S/pki/ca.crt" --cluster-signing-key-file="$S/pki/ca.key" \
		--use-service-account-credentials=true --service-cluster-ip-range="$SERVICE_CIDR" \
		--allocate-node-cidrs=true --cluster-cidr="$CLUSTER_CIDR" --node-cidr-mask-size=24 \
		--leader-elect=false --bind-address=127.0.0.1 --profiling=false --v=1
	start_daemon kube-scheduler "$S/bin/k8s/kube-scheduler" --kubeconfig="$S/kubeconfig/scheduler.kubeconfig" \
		--authentication-kubeconfig="$S/kubeconfig/scheduler.kubeconfig" \
		--authorization-kubeconfig="$S/kubeconfig/scheduler.kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1 --profiling=false --v=1
	# The Node objects first, so spec.podCIDR matches each node's static CNI subnet (kubelets adopt them).
	mbctl apply "$S/conf/nodes.yaml" >/dev/null
}

# setup_node_mntns NODE: a persistent private mount namespace (bind-mounted at $S/run/ns/NODE.mnt, on a private
# mount so it can hold an nsfs mount). Inside it, tmpfs over the host paths containerd and kubelet insist on using,
# so nothing lands on the host: /run/containerd (shim sockets; plus the socket symlink cAdvisor dials to label
# container metrics with namespace/pod/container), /run/netns (pod netns), /var/lib/cni (libcni cache),
# /var/lib/kubelet (device-plugin socket, hardcoded) and /var/log (kubelet's /var/log/containers; pod logs go to
# podLogsDir under $S).
setup_node_mntns() {
	local node=$1 ns
	ns=$(node_mntns "$node")
	mkdir -p "$S/run/ns" "$S/run/$node"
	if ! mountpoint -q "$S/run/ns"; then
		mount --bind "$S/run/ns" "$S/run/ns"
		mount --make-private "$S/run/ns"
	fi
	touch "$ns"
	unshare --mount="$ns" --propagation slave true
	nsenter --mount="$ns" -- sh -euc "
		umount -l '$S/run/ns'        # drop this namespace's copy of the other node's namespace file
		umount -l /run/netns 2>/dev/null || true   # and its copy of the mb-node2 netns mount
		mount -t tmpfs -o mode=0755,size=16m mb-$node-netns /run/netns
		mount -t tmpfs -o mode=0755,size=64m mb-$node-containerd /run/containerd
		mount -t tmpfs -o mode=0755,size=16m mb-$node-cni /var/lib/cni
		mount -t tmpfs -o mode=0755,size=16m mb-$node-kubelet /var/lib/kubelet
		mount -t tmpfs -o mode=0755,size=64m mb-$node-log /var/log
		ln -s '$(node_sock "$node")' /run/containerd/containerd.sock
	"
}

start_containerd() {
	local node=$1
	ns_cmd "$node"
	mkdir -p "$S/data/$node" "$S/run/$node"
	start_daemon "containerd-$node" "${NS_CMD[@]}" containerd --config "$S/conf/$node/containerd.toml"
}

start_registry() {
	# The registry's storage is a cache kept across restarts (like $S/bin): re-pushing unchanged images then costs only
	# HEAD requests.
	mkdir -p "$S/registry"
	start_daemon registry docker-registry serve "$S/conf/registry.yml"
	wait_for 30 "registry on $REGISTRY_ADDR" registry_ready
}

# harness_images: TAR=REF for every harness-built image tarball (meshbench's own images are built and pushed by
# meshbench itself, see push_images).
harness_images() {
	local pair
	for pair in "pause=$IMG_PAUSE" "coredns=$IMG_COREDNS" "iperf3=$IMG_IPERF3" "toolbox=$IMG_TOOLBOX" "postgres=$IMG_POSTGRES"; do
		[ -f "$S/bin/images/${pair%%=*}.tar" ] && echo "$S/bin/images/${pair%%=*}.tar=${pair#*=}"
	done
	true
}

# push_images: every image the cluster runs goes to the registry; $S/run/pushed lists REF@DIGEST of each. meshbench's
# images are pushed by the CLI built from this tree (the tag is its version, so CLI and agent match), as a user pushes
# them but for the nodes' platform only: both nodes run on this host (NODE_PLATFORM), and a second architecture
# doubled the cold compile for nothing. Its progress (a line per binary and image, a heartbeat every minute) goes to
# the terminal and to $S/logs/images-push.log; the REF@DIGEST lines (stdout) to $S/run/images-push.out.
push_images() {
	local out
	# shellcheck disable=SC2046
	"$S/bin/tools/regpush" -insecure $(harness_images) >"$S/run/pushed.new" || die "pushing the harness images to $REGISTRY_ADDR failed"
	log "meshbench images push --platform $NODE_PLATFORM (the nodes' platform): cold, the compile takes minutes; a line per binary, then every minute"
	# heartbeat: meshbench prints a line per binary and image, and every minute while one compiles or pushes (stderr)
	"$S/build/meshbench" images push --source "$REPO_ROOT" --registry "$REGISTRY_PREFIX" --insecure --platform "$NODE_PLATFORM" \
		2>&1 >"$S/run/images-push.out" | tee "$S/logs/images-push.log" | sed -u 's/^/  /' >&2 ||
		die "meshbench images push --registry $REGISTRY_PREFIX --platform $NODE_PLATFORM failed (output above, and in $S/logs/images-push.log)"
	out=$(cat "$S/run/images-push.out")
	grep -oE "$REGISTRY_PREFIX/[a-z0-9._/-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}" <<<"$out" >>"$S/run/pushed.new" ||
		die "meshbench images push printed no REF@DIGEST lines: $out"
	mv "$S/run/pushed.new" "$S/run/pushed"
	IMG_AGENT=$(grep -oE "^[^@]*/meshbench-agent:[^@]+" "$S/run/pushed" | head -1)
	IMG_MESHBENCH=$(grep -oE "^[^@]*/meshbench:[^@]+" "$S/run/pushed" | head -1)
	[ -n "$IMG_AGENT" ] && [ -n "$IMG_MESHBENCH" ] || die "meshbench images push did not push meshbench-agent and meshbench: $out"
	MESHBENCH_VERSION=${IMG_AGENT##*:}
}

# drop_stale_images NODE: a tag that now points at another digest (a rebuilt :dev image, a -dirty version) must not
# be served from the node's cache (IfNotPresent): remove the node's copy, so the next pod pulls it again. Prints
# NODE:REF for each.
drop_stale_images() {
	local node=$1 line ref digest have
	daemon_alive "containerd-$node" || return 0
	while read -r line; do
		ref=${line%@*} digest=${line##*@}
		have=$(ctr_node "$node" images ls "name==$ref" 2>/dev/null | awk 'NR > 1 { print $3 }')
		if [ -n "$have" ] && [ "$have" != "$digest" ]; then
			ctr_node "$node" images rm "$ref" >/dev/null 2>&1 || true
			echo "$node:${ref##*/}"
		fi
	done <"$S/run/pushed"
}

start_node() {
	local node=$1 ip
	ip=$(node_ip "$node")
	ns_cmd "$node"
	# --housekeeping-interval: cAdvisor refreshes container stats every 10-15 s by default, which stretches the
	# rate range meshbench must use (4 samples) to ~50 s and every case's lead-in with it; 5 s matches the scrape.
	start_daemon "kubelet-$node" "${NS_CMD[@]}" "$S/bin/k8s/kubelet" --config="$S/conf/$node/kubelet.yaml" \
		--kubeconfig="$S/kubeconfig/kubelet-$node.kubeconfig" --root-dir="$S/data/$node/kubelet" \
		--cert-dir="$S/data/$node/kubelet/pki" --hostname-override="$node" --node-ip="$ip" --housekeeping-interval=5s --v=1
	start_daemon "kube-proxy-$node" "${NS_CMD[@]}" "$S/bin/k8s/kube-proxy" --config="$S/conf/$node/kube-proxy.yaml" --v=1
}

prepare_node2_cgroups() {
	# kubelet requires its cgroupRoot to exist in every hierarchy; cpuset needs cpus/mems filled in.
	local h
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		[ -f "${h}cgroup.procs" ] || continue
		mkdir -p "${h}mb-node2"
	done
	if [ -d /sys/fs/cgroup/cpuset/mb-node2 ]; then
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >/sys/fs/cgroup/cpuset/mb-node2/cpuset.cpus
		cat /sys/fs/cgroup/cpuset/cpuset.mems >/sys/fs/cgroup/cpuset/mb-node2/cpuset.mems
	fi
}

start_prometheus() {
	mkdir -p "$S/data/prometheus"
	start_daemon prometheus prometheus --config.file="$S/conf/prometheus.yml" --storage.tsdb.path="$S/data/prometheus" \
		--web.listen-address="$PROM_ADDR" --query.lookback-delta=1m --storage.tsdb.retention.time=7d --log.level=warn
}

write_cluster_env() {
	cat >"$S/cluster.env.new" <<EOF
# Local meshbench cluster, written by hack/localcluster/up.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ). Shell-sourcable:
#   . $S/cluster.env   (KEY=VALUE lines, no quoting needed; exported by the last line)
KUBECONFIG=$S/kubeconfig/admin.kubeconfig
MESHBENCH_KUBECONFIG=$S/kubeconfig/admin.kubeconfig
MESHBENCH_PROMETHEUS_URL=$PROM_URL
MESHBENCH_CLUSTER_DIR=$S
MESHBENCH_NODES=$NODE1,$NODE2
MESHBENCH_NODE1=$NODE1
MESHBENCH_NODE2=$NODE2
MESHBENCH_NODE1_IP=$NODE1_IP
MESHBENCH_NODE2_IP=$NODE2_IP
MESHBENCH_KUBERNETES_VERSION=$K8S_VERSION
MESHBENCH_APISERVER_URL=$APISERVER_URL
MESHBENCH_POD_CIDR=$CLUSTER_CIDR
MESHBENCH_SERVICE_CIDR=$SERVICE_CIDR
MESHBENCH_CLUSTER_DNS=$DNS_IP
MESHBENCH_REGISTRY=$REGISTRY_ADDR
MESHBENCH_IMAGE_REGISTRY=$REGISTRY_PREFIX
MESHBENCH_VERSION=$MESHBENCH_VERSION
MESHBENCH_CLI=$S/build/meshbench
MESHBENCH_IMAGE_AGENT=$IMG_AGENT
MESHBENCH_IMAGE_MESHBENCH=$IMG_MESHBENCH
MESHBENCH_IMAGE_IPERF3=$IMG_IPERF3
MESHBENCH_IMAGE_PAUSE=$IMG_PAUSE
MESHBENCH_IMAGE_COREDNS=$IMG_COREDNS
MESHBENCH_IMAGE_TOOLBOX=$IMG_TOOLBOX
$([ -f "$S/bin/images/postgres.tar" ] && echo "MESHBENCH_IMAGE_POSTGRES=$IMG_POSTGRES")
# so that a plain ". cluster.env" also exports them
export KUBECONFIG MESHBENCH_KUBECONFIG MESHBENCH_PROMETHEUS_URL MESHBENCH_CLUSTER_DIR MESHBENCH_NODES MESHBENCH_NODE1 MESHBENCH_NODE2 MESHBENCH_NODE1_IP MESHBENCH_NODE2_IP MESHBENCH_KUBERNETES_VERSION MESHBENCH_APISERVER_URL MESHBENCH_POD_CIDR MESHBENCH_SERVICE_CIDR MESHBENCH_CLUSTER_DNS MESHBENCH_REGISTRY MESHBENCH_IMAGE_REGISTRY MESHBENCH_VERSION MESHBENCH_CLI MESHBENCH_IMAGE_AGENT MESHBENCH_IMAGE_MESHBENCH MESHBENCH_IMAGE_IPERF3 MESHBENCH_IMAGE_PAUSE MESHBENCH_IMAGE_COREDNS MESHBENCH_IMAGE_TOOLBOX$([ -f "$S/bin/images/postgres.tar" ] && echo " MESHBENCH_IMAGE_POSTGRES")
EOF
	mv "$S/cluster.env.new" "$S/cluster.env"
}

summary() {
	echo
	echo "cluster up in $(elapsed)s ($1)"
	echo "  KUBECONFIG=$S/kubeconfig/admin.kubeconfig"
	echo "  Prometheus $PROM_URL"
	echo "  registry   $REGISTRY_ADDR (images: $(cut -d@ -f1 "$S/run/pushed" | sed 's|.*/||' | tr '\n' ' '))"
	echo "  env file   $S/cluster.env   (. $S/cluster.env exports everything)"
	mbctl status | sed 's/^/  /'
}

# refresh: the fast path for an already healthy cluster.
# refresh_prometheus_config: a checkout whose prometheus.yml.in changed (a new scrape job) applies it to the running
# Prometheus with a reload (SIGHUP), keeping its data.
refresh_prometheus_config() {
	local f pid
	render "$LC_DIR/conf/prometheus.yml.in" "$S/conf/prometheus.yml.new"
	if cmp -s "$S/conf/prometheus.yml.new" "$S/conf/prometheus.yml"; then
		rm -f "$S/conf/prometheus.yml.new"
		return 0
	fi
	mv "$S/conf/prometheus.yml.new" "$S/conf/prometheus.yml"
	f=$(pidfile prometheus)
	pid=$(cat "$f" 2>/dev/null || true)
	pid_is_ours "$pid" || die "prometheus is not running: make cluster-down && make cluster-up"
	kill -HUP "$pid"
	log "prometheus.yml changed: reloaded Prometheus (pid $pid)"
}

refresh() {
	local dropped
	log "cluster already up and healthy: refreshing images only"
	build_all
	push_images
	dropped=$(for node in "$NODE1" "$NODE2"; do drop_stale_images "$node"; done | tr '\n' ' ')
	log "images pushed to $REGISTRY_ADDR; stale node copies dropped: ${dropped:-none}"
	refresh_prometheus_config
	write_cluster_env
	summary "already running; refreshed"
}

fresh_start() {
	log "state dir $S: cleaning up whatever an earlier run left behind"
	teardown_all
	ports_free
	reset_state
	build_all
	log "binaries and images ready"
	setup_host
	gen_pki
	gen_kubeconfigs
	render_configs
	log "network namespace, veth, PKI and configs ready"
	start_registry
	push_images
	log "registry up on $REGISTRY_ADDR; pushed $(wc -l <"$S/run/pushed") images (meshbench $MESHBENCH_VERSION)"
	start_control_plane
	start_prometheus
	prepare_node2_cgroups
	setup_node_mntns "$NODE1"
	setup_node_mntns "$NODE2"
	start_containerd "$NODE1"
	start_containerd "$NODE2"
	wait_for 30 "containerd on $NODE1" ctr --address "$(node_sock "$NODE1")" version
	wait_for 30 "containerd on $NODE2" ctr --address "$(node_sock "$NODE2")" version
	log "containerd up on both nodes (pulling from $REGISTRY_ADDR)"
	start_node "$NODE1"
	start_node "$NODE2"
	with_heartbeat "waiting for both nodes to be Ready" mbctl -timeout 120s wait-nodes 2
	log "both nodes Ready"
	mbctl apply "$S/conf/coredns.yaml" >/dev/null
	with_heartbeat "waiting for CoreDNS" mbctl -timeout 120s wait-deployment kube-system/coredns
	log "CoreDNS ready (Service kube-dns $DNS_IP)"
	wait_for 60 "Prometheus" prom_ready
	wait_for 60 "Prometheus scraping all 4 kubelet endpoints" prom_all_up
	log "Prometheus ready on $PROM_URL, scraping both kubelets"
	write_cluster_env
	summary "fresh start"
}

main() {
	preflight
	mkdir -p "$S"
	# One up/down at a time per state dir.
	exec 9>"$S/.lock"
	flock -n 9 || die "another cluster-up/cluster-down is running on $S"
	if cluster_healthy; then refresh; else fresh_start; fi
}

main "$@"
