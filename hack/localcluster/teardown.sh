# shellcheck shell=bash
# teardown.sh: teardown_all removes everything the cluster created on the host, whether it was stopped cleanly,
# half started, or kill -9'ed (processes gone, but mounts, namespaces, links, iptables chains, cgroups, shims and
# pid files left behind). Sourced by down.sh and up.sh (up runs it first so a killed run never blocks the next one).
# Every step is idempotent and tolerates "already gone".

# stop_nodes_gracefully: while containerd still runs, stop the kubelets first (so they do not restart pods), then
# kill and delete every task and container through containerd so the shims exit on their own.
stop_nodes_gracefully() {
	local node t c
	for node in "$NODE2" "$NODE1"; do
		stop_daemon "kube-proxy-$node" 5
		stop_daemon "kubelet-$node" 10
	done
	for node in "$NODE2" "$NODE1"; do
		daemon_alive "containerd-$node" && [ -S "$(node_sock "$node")" ] || continue
		for t in $(ctr_node "$node" tasks ls -q 2>/dev/null); do ctr_node "$node" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
		for t in $(ctr_node "$node" tasks ls -q 2>/dev/null); do ctr_node "$node" tasks delete -f "$t" >/dev/null 2>&1 || true; done
		for c in $(ctr_node "$node" containers ls -q 2>/dev/null); do ctr_node "$node" containers rm "$c" >/dev/null 2>&1 || true; done
	done
	for node in "$NODE2" "$NODE1"; do stop_daemon "containerd-$node" 10; done
}

# kill_leftover_processes: shims (matched by their -address under $S), containers (through the runc state roots
# under $S), then anything else still running from the state dir. Pid files cover the normal case; this covers a
# killed run.
kill_leftover_processes() {
	local pids root id i f
	pids=$(our_procs | grep -v -E '^$' || true)
	if [ -n "$pids" ]; then
		log "killing leftover processes of this state dir: $(echo "$pids" | while read -r p; do printf '%s(%s) ' "$p" "$(basename "$(readlink /proc/"$p"/exe 2>/dev/null || echo '?')")"; done)"
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
	fi
	# Containers whose shim is gone keep running (reparented to init); runc still knows them from its state root.
	local ids
	for root in "$S"/run/*/runc/k8s.io; do
		[ -d "$root" ] || continue
		ids=$(runc --root "$root" list -q 2>/dev/null || true)
		[ -n "$ids" ] || continue
		log "removing $(echo "$ids" | wc -l) leftover containers through runc state $root"
		for id in $ids; do
			runc --root "$root" delete --force "$id" >/dev/null 2>&1 || true
		done
	done
	# Last resort for container processes: whatever still sits in one of our cgroups is a container of ours.
	for ((i = 0; i < 20; i++)); do
		pids=$(our_cgroup_dirs | while read -r d; do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u)
		[ -z "$pids" ] && break
		[ "$i" = 0 ] && log "killing processes left in our cgroups: $(echo $pids)"
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
		sleep 0.2
	done
	for f in "$S"/run/pids/*.pid; do [ -e "$f" ] && rm -f "$f"; done
	true
}

# release_mounts: drop the node mount namespaces (which takes every overlay, shm, tmpfs and netns mount made inside
# them along), then anything still mounted under $S on the host, deepest first.
release_mounts() {
	local m i
	for ((i = 0; i < 5; i++)); do
		m=$(our_mounts)
		[ -z "$m" ] && break
		while read -r mp; do
			[ -n "$mp" ] || continue
			umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
		done <<<"$m"
	done
	m=$(our_mounts)
	[ -z "$m" ] || log "WARNING: still mounted under $S: $m"
}

# remove_network: node2's netns and veth (its bridge, routes and pod netns go with it), node1's bridge and any pod
# veths still attached to it, routes to our CIDRs, and pod netns in /run/netns that point at our pod network.
remove_network() {
	local l n
	if [ -e "/run/netns/$NETNS2" ]; then
		ip netns delete "$NETNS2" 2>/dev/null || { umount "/run/netns/$NETNS2" 2>/dev/null; rm -f "/run/netns/$NETNS2"; } || true
	fi
	ip link show "$VETH2" >/dev/null 2>&1 && ip link delete "$VETH2" || true
	for l in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
		ip link delete "$l" 2>/dev/null || true
	done
	ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" || true
	ip route show | awk '/^10\.244\.|172\.30\.0\./ { print $1 }' | while read -r r; do ip route delete "$r" 2>/dev/null || true; done
	# Pod netns of a containerd that ran in the host mount namespace (ours run in private ones, so normally none):
	# ours if a runc bundle under $S references it, or if it still carries an address from our pod CIDR.
	for n in /run/netns/cni-*; do
		[ -e "$n" ] || continue
		if grep -rqs -- "$n" "$S/run" 2>/dev/null || ip -n "$(basename "$n")" -4 -o addr 2>/dev/null | grep -q ' 10\.244\.'; then
			ip netns delete "$(basename "$n")" 2>/dev/null || { umount "$n" 2>/dev/null; rm -f "$n"; } || true
		fi
	done
	# Stale conntrack entries for our service/pod ranges would confuse the next cluster (same IPs, new pods).
	if command -v conntrack >/dev/null; then
		for net in "$SERVICE_CIDR" "$CLUSTER_CIDR" "$NODE_NET"; do
			conntrack -D -d "$net" >/dev/null 2>&1 || true
			conntrack -D -s "$net" >/dev/null 2>&1 || true
		done
	fi
}

# remove_iptables: kube-proxy's own --cleanup, then every KUBE-* / CNI-* chain (kubelet's KUBE-FIREWALL,
# KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT included; kube-proxy --cleanup leaves those) in filter/nat/mangle/raw, for
# IPv4 and IPv6: first the jumps from the built-in chains, then flush, then delete.
remove_iptables() {
	local ipt t rule ch
	if [ -x "$S/bin/k8s/kube-proxy" ]; then
		timeout 60 "$S/bin/k8s/kube-proxy" --cleanup >/dev/null 2>&1 || true
	fi
	for ipt in $(iptables_cmds); do
		for t in filter nat mangle raw; do
			[ -n "$(our_chains "$ipt" "$t")" ] || "$ipt" -w 5 -t "$t" -S 2>/dev/null | grep -qE -- "-j (KUBE-|CNI-)" || continue
			"$ipt" -w 5 -t "$t" -S 2>/dev/null | grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) ' |
				grep -E -- '-(j|g) (KUBE-|CNI-)' | while read -r rule; do
				eval "$ipt -w 5 -t $t -D ${rule#-A }" 2>/dev/null || true
			done || true
			for ch in $(our_chains "$ipt" "$t"); do "$ipt" -w 5 -t "$t" -F "$ch" 2>/dev/null || true; done
			for ch in $(our_chains "$ipt" "$t"); do "$ipt" -w 5 -t "$t" -X "$ch" 2>/dev/null || true; done
		done
	done
	true
}

# remove_cgroups: /kubepods*, /mb-node2 in every v1 hierarchy and in the unified tree, deepest first.
remove_cgroups() {
	local d i
	for ((i = 0; i < 10; i++)); do
		[ -z "$(our_cgroup_dirs)" ] && return 0
		our_cgroup_dirs | while read -r d; do
			find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		done
		[ -z "$(our_cgroup_dirs)" ] && return 0
		sleep 0.3
	done
	log "WARNING: cgroups still present: $(our_cgroup_dirs | tr '\n' ' ')"
}

# nft_table_empty "FAMILY NAME": no rules, no regular chains, every base chain with policy accept.
nft_table_empty() {
	# shellcheck disable=SC2086
	nft -j list table $1 2>/dev/null | jq -e '[.nftables[] | select(.rule or (.chain and ((.chain.hook == null) or (.chain.policy != "accept"))))] | length == 0' >/dev/null
}

# restore_host: sysctls back to their recorded values; directories we created removed (only if empty). The ledger
# is deleted only when everything in it was restored.
restore_host() {
	local kind key val path ok=1
	[ -f "$LEDGER" ] || return 0
	# Directories deepest first, sysctls in any order.
	while read -r kind key val; do
		case "$kind" in
		sysctl)
			path=/proc/sys/${key//.//}
			if [ -e "$path" ] && [ "$(cat "$path")" != "$val" ]; then echo "$val" >"$path" || ok=0; fi
			;;
		nft)
			# An iptables-nft table that did not exist before the cluster: delete it if nothing else uses it
			# (no rules, only base chains with policy accept).
			# shellcheck disable=SC2086
			if command -v nft >/dev/null && nft list table ${key/:/ } >/dev/null 2>&1 && nft_table_empty "${key/:/ }"; then nft delete table ${key/:/ } 2>/dev/null || true; fi
			;;
		dir)
			if [ -d "$key" ]; then
				while mountpoint -q "$key"; do umount "$key" 2>/dev/null || umount -l "$key" 2>/dev/null || break; done
				# Not empty: something else on the machine uses it now (e.g. other netns in /run/netns); it is
				# no longer ours to remove.
				rmdir "$key" 2>/dev/null || log "note: $key is in use by something else now, left in place"
			fi
			;;
		esac
	done < <(awk '{ print length($2) " " $0 }' "$LEDGER" | sort -rn | cut -d' ' -f2-)
	[ "$ok" = 1 ] && rm -f "$LEDGER"
	true
}

# teardown_all: the whole sequence. Order matters: processes first (a live kubelet would recreate what we remove),
# then mounts (they pin namespaces), then network, iptables, cgroups, host settings.
teardown_all() {
	stop_daemon prometheus 10
	stop_nodes_gracefully
	stop_daemon registry 10
	for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_daemon "$c" 10; done
	kill_leftover_processes
	release_mounts
	remove_network
	remove_iptables
	remove_cgroups
	restore_host
	rm -f "$S/cluster.env"
}
