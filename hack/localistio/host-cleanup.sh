# shellcheck shell=bash
# host-cleanup.sh: remove every piece of host state the local Istio harness can leave behind, also after a kill -9
# (sourced by istio-up.sh and istio-down.sh; needs lib.sh). Never matches anything by process name alone.
#
#   processes   istio-cni agents (pid files, then any process running a binary from $ISTIO_BIN)
#   mounts      tmpfs mbistio-* (normally only inside the agents' private mount namespaces)
#   netfilter   in the host netns and in node2's netns: iptables chains ISTIO_* (legacy and nft backends, v4/v6,
#               with the rules that jump to them), nftables tables istio-ambient-{nat,mangle,raw}, ipsets istio-inpod-probes*
#   pods        the same netfilter state inside every pod netns of both nodes (an ambient pod's capture rules:
#               the agents do not remove them on SIGTERM, and without ztunnel they black-hole the pod's traffic)
#   files       ZDS sockets and agent credentials under $ISTIO_RUN; /host and /run/secrets if we created them

stop_agents() {
	local node f pid i
	for node in "${NODES[@]}"; do
		f=$(agent_pidfile "$node")
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		if pid_is_istio "$pid"; then
			kill -TERM "$pid" 2>/dev/null || true # the agent removes its host rules, ipset and pod rules on SIGTERM
			for ((i = 0; i < 150; i++)); do pid_is_istio "$pid" || break; sleep 0.1; done
			if pid_is_istio "$pid"; then
				kill -KILL "$pid" 2>/dev/null || true
				log "stopped istio-cni agent on $node (pid $pid, SIGKILL after 15s)"
			else
				log "stopped istio-cni agent on $node (pid $pid)"
			fi
		fi
		rm -f "$f"
	done
	# anything else still running one of our binaries (a killed run's agents whose pid files were lost)
	for pid in $(istio_procs); do
		kill -KILL "$pid" 2>/dev/null && log "killed leftover $(readlink "/proc/$pid/exe" 2>/dev/null || echo process) (pid $pid)"
	done
	true
}

# clean_netfilter: ISTIO_* iptables chains, istio nft tables and istio ipsets in the current netns.
# Careful: merely listing a table with iptables-legacy instantiates it (an empty legacy table that cannot be removed
# again without unloading kernel modules), so only tables that already exist are looked at: legacy ones from
# /proc/net/ip{,6}_tables_names, iptables-nft ones from `nft list tables`.
clean_netfilter() {
	local ipt t chains c rule tables
	for ipt in iptables-legacy ip6tables-legacy iptables-nft ip6tables-nft; do
		command -v "$ipt" >/dev/null || continue
		case $ipt in
		iptables-legacy) tables=$(cat /proc/net/ip_tables_names 2>/dev/null || true) ;;
		ip6tables-legacy) tables=$(cat /proc/net/ip6_tables_names 2>/dev/null || true) ;;
		iptables-nft) tables=$(nft list tables 2>/dev/null | awk '$2 == "ip" { print $3 }') ;;
		ip6tables-nft) tables=$(nft list tables 2>/dev/null | awk '$2 == "ip6" { print $3 }') ;;
		esac
		for t in $tables; do
			case $t in nat | mangle | raw | filter) ;; *) continue ;; esac
			chains=$("$ipt" -w 5 -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^ISTIO_/ { print $2 }')
			[ -n "$chains" ] || continue
			# rules elsewhere that jump to our chains
			"$ipt" -w 5 -t "$t" -S 2>/dev/null | awk '$1 == "-A" && $2 !~ /^ISTIO_/ && / -j ISTIO_/' | while read -r rule; do
				# shellcheck disable=SC2086
				"$ipt" -w 5 -t "$t" ${rule/-A/-D} || true
			done
			for c in $chains; do "$ipt" -w 5 -t "$t" -F "$c" || true; done
			for c in $chains; do "$ipt" -w 5 -t "$t" -X "$c" || true; done
			echo "$ipt/$t:$(echo $chains | tr ' ' ',')"
		done
	done
	if command -v nft >/dev/null; then
		for t in $(nft list tables 2>/dev/null | awk '$2 == "inet" && $3 ~ /^istio-/ { print $3 }'); do
			nft delete table inet "$t" && echo "nft:inet/$t"
		done
	fi
	if command -v ipset >/dev/null; then
		for t in $(ipset list -n 2>/dev/null | grep '^istio-inpod-probes' || true); do
			ipset destroy "$t" && echo "ipset:$t"
		done
	fi
	true
}

# clean_pod_netns NODE: clean_netfilter in every pod netns of NODE (they live in the node's mount namespace).
clean_pod_netns() {
	local node=$1 mntns
	mntns=$(node_mntns "$node")
	[ -e "$mntns" ] || return 0
	nsenter --mount="$mntns" -- bash -c "$(declare -f clean_netfilter)"'
		for n in /run/netns/*; do
			[ -e "$n" ] || continue
			out=$(nsenter --net="$n" bash -c "$(declare -f clean_netfilter); clean_netfilter" 2>/dev/null | tr "\n" " ")
			[ -z "$out" ] || echo "$(basename "$n"): $out"
		done' 2>/dev/null || true
}

host_cleanup() {
	local node out d m
	stop_agents
	for node in "${NODES[@]}"; do
		out=$(clean_pod_netns "$node" | tr '\n' ';')
		[ -z "$out" ] || log "removed ambient capture rules from pod netns on $node: $out"
	done
	for m in $(awk '$9 ~ /^mbistio-/ { print $5 }' /proc/self/mountinfo | sort -r); do
		umount -l "$m" && log "unmounted leftover $m"
	done
	for node in "${NODES[@]}"; do
		node_netns_exists "$node" || continue
		out=$(in_node_netns "$node" bash -c "$(declare -f clean_netfilter); clean_netfilter" | tr '\n' ' ')
		[ -z "$out" ] || log "removed leftover netfilter state on $node: $out"
	done
	# Keep the $ZDS_DIR directory itself: running ztunnel pods have it bind-mounted (hostPath), and a new directory
	# at the same path would be invisible to them.
	find "$ISTIO_RUN" -mindepth 1 -maxdepth 1 ! -name ztunnel -exec rm -rf {} + 2>/dev/null || true
	find "$ZDS_DIR" -mindepth 1 -delete 2>/dev/null || true
	mkdir -p "$ISTIO_RUN/pids" "$ZDS_DIR"
	if [ -f "$ISTIO_DIR/created-dirs" ]; then
		for d in $(sort -ru "$ISTIO_DIR/created-dirs"); do
			mountpoint -q "$d" || rmdir "$d" 2>/dev/null || true
		done
		rm -f "$ISTIO_DIR/created-dirs"
	fi
	true
}
