#!/usr/bin/env bash
# check-clean.sh (make cluster-check-clean): after cluster-down, prove nothing of the cluster is left on the host.
# Lists every category it checks; exits 1 (loudly) if anything remains. Read-only: changes nothing.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

FAILED=0
# check CATEGORY OUTPUT: OUTPUT empty => clean.
check() {
	local what=$1 out=$2
	if [ -z "$out" ]; then
		printf '  clean     %s\n' "$what"
	else
		printf '  LEFTOVER  %s:\n' "$what"
		# shellcheck disable=SC2001
		echo "$out" | sed 's/^/              /'
		FAILED=1
	fi
}

echo "checking that the local cluster ($S) left nothing behind:"

check "processes started from the state dir (pid files, shims by -address, binaries in \$S/bin)" \
	"$(our_procs | while read -r p; do echo "pid $p: $(cmdline_of "$p" | cut -c1-160)"; done)"

check "containerd shims of our containerds" \
	"$(for p in /proc/[0-9]*; do
		case "$(readlink "$p/exe" 2>/dev/null)" in */containerd-shim*) ;; *) continue ;; esac
		c=$(cmdline_of "${p#/proc/}")
		case "$c" in *"-address $S/"*) echo "pid ${p#/proc/}: $c" ;; esac
	done)"

check "pid files" "$(ls "$S"/run/pids/*.pid 2>/dev/null || true)"

check "mounts under the state dir (overlay, shm, tmpfs, nsfs, bind)" "$(our_mounts)"

check "node mount-namespace tmpfs mounts on the host" \
	"$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 2) ~ /^mb-node/) print $5 " (" $(i + 1) " " $(i + 2) ")"; break } }' /proc/self/mountinfo)"

check "network namespaces (mb-node2, pod netns cni-*)" "$(ls -1 /run/netns 2>/dev/null | grep -E "^($NETNS2|cni-)" || true)"

check "links (veth $VETH2, bridge $BRIDGE, CNI pod veths)" \
	"$(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1 | grep -E "^($VETH2|$BRIDGE|veth[0-9a-f]{8})$" || true)"

check "routes and addresses for 10.244.0.0/16 and 172.30.0.0/24" \
	"$( (ip route show; ip -o addr show) 2>/dev/null | grep -E '10\.244\.|172\.30\.0\.' || true)"

iptables_leftovers() {
	local ipt t
	for ipt in $(iptables_cmds); do
		for t in filter nat mangle raw; do
			"$ipt" -w 5 -t "$t" -S 2>/dev/null | grep -E -- "^-N (KUBE-|CNI-)|-(j|g) (KUBE-|CNI-)" | sed "s/^/$ipt -t $t: /" || true
		done
	done
}
check "iptables/ip6tables chains and jumps KUBE-* / CNI-* (incl. KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) in filter/nat/mangle/raw" \
	"$(iptables_leftovers)"

check "cgroups (/kubepods*, /mb-node2) in every v1 hierarchy and the unified tree" "$(our_cgroup_dirs)"

check "host directories created for the node namespaces or by kubelet/containerd" \
	"$(for d in "${NODE_MNT_DIRS[@]}" /var/log/pods /var/log/containers /var/lib/kubelet /var/lib/containerd /run/containerd /opt/containerd /etc/cni/net.d; do [ -e "$d" ] && echo "$d"; done | sort -u)"

check "host ledger (sysctls / directories not yet restored)" "$([ -f "$LEDGER" ] && cat "$LEDGER" || true)"

check "cluster.env" "$([ -f "$S/cluster.env" ] && echo "$S/cluster.env" || true)"

check "listeners on the cluster's ports (2379-2381, 5000, 6443, 10248-10259, 19090)" \
	"$(ss -Hltnp 2>/dev/null | grep -E '(127\.0\.0\.1|172\.30\.0\.[12]|0\.0\.0\.0|\*|\[::\]):(2379|2380|2381|5000|6443|10248|10249|10250|10256|10257|10259|19090) ' || true)"

printf '  (info)    sysctls now:'
for k in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables "${KUBE_SYSCTLS[@]}"; do
	[ -e "/proc/sys/${k//.//}" ] && printf ' %s=%s' "$k" "$(cat "/proc/sys/${k//.//}")"
done
echo
echo "  (info)    build cache kept in $S/bin ($(du -sh "$S/bin" 2>/dev/null | cut -f1))"
if [ "$FAILED" = 1 ]; then
	echo "NOT CLEAN: leftovers listed above (run 'make cluster-down', which also clears a killed run)" >&2
	exit 1
fi
echo "clean"
