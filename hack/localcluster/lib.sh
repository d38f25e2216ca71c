# shellcheck shell=bash
# lib.sh: shared settings and helpers for the local two-node cluster scripts (sourced, never run).
#
# Everything the cluster writes lives under $S (MESHBENCH_CLUSTER_DIR). The state dir is deliberately OUTSIDE the
# repository: CI clones the repo into a fresh folder on the same machine, and a new clone must still find (and clean
# up) what an earlier, possibly killed, run left behind.

set -euo pipefail

LC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$LC_DIR/../.." && pwd)
S=${MESHBENCH_CLUSTER_DIR:-/var/lib/meshbench/localcluster}
S=${S%/}

# --- versions (the stamp files under $S/bin/stamps embed these; change one and that component rebuilds) ---
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
CNI_VERSION=v1.9.1
COREDNS_VERSION=v1.15.0

# --- topology ---
NODE1=node1
NODE2=node2
NODE1_IP=172.30.0.1 # on the host side of the veth; also the apiserver advertise/bind address
NODE2_IP=172.30.0.2 # eth0 inside netns mb-node2
NODE_NET=172.30.0.0/24
NETNS2=mb-node2
VETH2=mbnode2
BRIDGE=mbcni0 # node1's bridge in the host netns; node2 has its own mbcni0 inside mb-node2
NODE1_POD_CIDR=10.244.0.0/24
NODE2_POD_CIDR=10.244.1.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
DNS_IP=10.96.0.10
APISERVER_URL=https://$NODE1_IP:6443
PROM_ADDR=127.0.0.1:19090
PROM_URL=http://$PROM_ADDR

# --- registry and images ---
# A real OCI registry (Debian's docker-registry, distribution 2.8.2) on node1's address, which both nodes reach: every
# image the cluster runs is PUSHED there and PULLED by the nodes' containerd (registry config in conf/, never
# `ctr import`), the same path a user's cluster takes. Plain HTTP on a private address, declared as such to containerd
# (hosts.toml) and to the pushers (-insecure / --insecure), as kind's local-registry recipe does.
REGISTRY_ADDR=$NODE1_IP:5000
REGISTRY_PREFIX=$REGISTRY_ADDR/meshbench # the tool's localcluster profile default spec.images.registry
# Both nodes run on this host, so every image the cluster pulls is built for its platform only; meshbench's own images
# too (`meshbench images push --platform`; a user's push builds linux/amd64 and linux/arm64 by default).
NODE_PLATFORM=linux/$(uname -m | sed -e 's/^x86_64$/amd64/' -e 's/^aarch64$/arm64/' -e 's/^armv7l$/arm\/v7/')
# Harness-built images (non-latest tags => IfNotPresent). meshbench's own images (meshbench-agent, meshbench) are
# pushed by `meshbench images push --registry $REGISTRY_PREFIX` and tagged with the tool's version (see up.sh).
IMG_PAUSE=$REGISTRY_PREFIX/pause:dev
IMG_IPERF3=$REGISTRY_PREFIX/iperf3:dev
IMG_COREDNS=$REGISTRY_PREFIX/coredns:dev
IMG_TOOLBOX=$REGISTRY_PREFIX/toolbox:dev   # busybox with every applet: test pods that need a shell
IMG_POSTGRES=$REGISTRY_PREFIX/postgres:dev # Debian's PostgreSQL with the official image's entrypoint contract

# --- host-wide names that are ours no matter which state dir created them (the cleanup sweeps these) ---
OUR_CGROUPS=(kubepods kubepods.slice mb-node2)
OUR_CHAIN_RE='^(KUBE-|CNI-)'
# Host directories the node mount namespaces need as mount points; created (and later removed) only if missing.
# /var/lib/kubelet: kubelet 1.37 hardcodes /var/lib/kubelet/device-plugins/kubelet.sock whatever its --root-dir;
# a tmpfs per node keeps the two kubelets from fighting over that socket and keeps it off the host.
NODE_MNT_DIRS=(/run/containerd /var/lib/cni /var/lib/kubelet)

export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false
export PATH=$PATH:/usr/sbin:/sbin

T_START=$(date +%s.%N)

# log prints a progress line with the seconds since the script started.
log() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $T_START" | bc)" "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$(date +%s.%N) - $T_START" | bc | xargs printf '%.1f'; }

# shellcheck source=hack/heartbeat.sh
source "$REPO_ROOT/hack/heartbeat.sh" # with_heartbeat WHAT CMD...: a progress line every minute while CMD runs
require_root() { [ "$(id -u)" = 0 ] || die "must run as root (network namespaces, mounts, iptables, cgroups)"; }

# node_* map a node name to its per-node settings.
node_ip() { [ "$1" = "$NODE1" ] && echo "$NODE1_IP" || echo "$NODE2_IP"; }
node_pod_cidr() { [ "$1" = "$NODE1" ] && echo "$NODE1_POD_CIDR" || echo "$NODE2_POD_CIDR"; }
node_sock() { echo "$S/run/$1/containerd.sock"; }
node_mntns() { echo "$S/run/ns/$1.mnt"; }
# ns_cmd NODE: the nsenter prefix for a node's daemons (node2 also joins its network namespace).
ns_cmd() {
	local node=$1
	NS_CMD=(nsenter --mount="$(node_mntns "$node")" --wd="$S")
	[ "$node" = "$NODE2" ] && NS_CMD+=(--net="/run/netns/$NETNS2")
	true
}

# node_exec NODE CMD...: run CMD inside the node's mount namespace (and node2's network namespace), with the working
# directory kept (nsenter would otherwise run in / and relative paths would break).
node_exec() {
	local node=$1
	shift
	local args=(--mount="$(node_mntns "$node")" --wd="$S")
	[ "$node" = "$NODE2" ] && args+=(--net="/run/netns/$NETNS2")
	nsenter "${args[@]}" -- "$@"
}

ctr_node() {
	local node=$1
	shift
	ctr --address "$(node_sock "$node")" --namespace k8s.io "$@"
}

# ---------------------------------------------------------------------------------------------------------------
# Process bookkeeping. Every daemon gets $S/run/pids/NAME.pid and $S/logs/NAME.log. A pid is only ever signalled
# when its command line still mentions the state dir, so a recycled pid can never hit somebody else's process.

pidfile() { echo "$S/run/pids/$1.pid"; }

# cmdline_of PID: the NUL-separated command line as one space-separated string (empty if gone).
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true; }

pid_is_ours() {
	local pid=$1
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	case "$(cmdline_of "$pid")" in *"$S/"*) return 0 ;; esac
	return 1
}

# start_daemon NAME CMD...: start CMD detached (own session, no inherited stdio) and record its pid. nsenter and
# setsid exec their target, so $! is the daemon's own pid.
start_daemon() {
	local name=$1
	shift
	mkdir -p "$S/run/pids" "$S/logs"
	setsid "$@" </dev/null >>"$S/logs/$name.log" 2>&1 9>&- &
	echo $! >"$(pidfile "$name")"
}

daemon_alive() {
	local f
	f=$(pidfile "$1")
	[ -f "$f" ] && pid_is_ours "$(cat "$f")"
}

# stop_daemon NAME [GRACE_SECONDS]: SIGTERM, wait, SIGKILL; removes the pid file either way.
stop_daemon() {
	local name=$1 grace=${2:-10} f pid i
	f=$(pidfile "$name")
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if pid_is_ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < grace * 10; i++)); do
			pid_is_ours "$pid" || break
			sleep 0.1
		done
		if pid_is_ours "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			log "stopped $name (pid $pid, SIGKILL after ${grace}s)"
		else
			log "stopped $name (pid $pid)"
		fi
	fi
	rm -f "$f"
}

# wait_for SECONDS DESCRIPTION CMD...: poll CMD every 0.2s; a line every minute while it waits (never silent longer).
wait_for() {
	local secs=$1 what=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		((i == 0 || i % 300)) || log "... still waiting for $what ($((i / 5)) s so far, at most ${secs}s)"
		sleep 0.2
	done
	die "timed out after ${secs}s waiting for $what"
}

# ---------------------------------------------------------------------------------------------------------------
# The host ledger ($S/host-ledger) remembers host state that existed BEFORE the cluster touched it: sysctl values
# and directories we had to create. It survives a killed run, so the next up/down can restore exactly the original
# state; it is deleted once everything is restored.

LEDGER="$S/host-ledger"

ledger_has() { [ -f "$LEDGER" ] && grep -q "^$1 $2 " "$LEDGER"; }
ledger_add() { mkdir -p "$S" && echo "$1 $2 $3" >>"$LEDGER"; }

# set_sysctl KEY VALUE [NETNS]: host sysctls are recorded (first value only) before being changed.
set_sysctl() {
	local key=$1 val=$2 path cur
	path=/proc/sys/${key//.//}
	[ -e "$path" ] || die "sysctl $key does not exist (is br_netfilter available?)"
	cur=$(cat "$path")
	ledger_has sysctl "$key" || ledger_add sysctl "$key" "$cur"
	[ "$cur" = "$val" ] || echo "$val" >"$path"
}

# record_sysctl KEY: remember a host sysctl that a cluster component (not this script) may change, so down can put
# it back: kubelet sets vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1 (and checks a few more).
record_sysctl() {
	local path=/proc/sys/${1//.//}
	[ -e "$path" ] || return 0
	ledger_has sysctl "$1" || ledger_add sysctl "$1" "$(cat "$path")"
}
KUBE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
	kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max
	net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait)

# make_host_dir DIR: mkdir -p, recording every path component we created.
make_host_dir() {
	local d=$1 missing=() p
	p=$d
	while [ ! -e "$p" ]; do
		missing+=("$p")
		p=$(dirname "$p")
	done
	for ((i = ${#missing[@]} - 1; i >= 0; i--)); do
		mkdir "${missing[$i]}"
		ledger_has dir "${missing[$i]}" || ledger_add dir "${missing[$i]}" created
	done
}

# ---------------------------------------------------------------------------------------------------------------
# Discovery helpers shared by cleanup and check-clean.

# our_procs: pids of processes we started, found without pid files: anything running a binary from $S/bin, and
# containerd / shims / prometheus / docker-registry / runc / nsenter / unshare whose arguments point into the state dir (shims carry
# "-address $S/run/<node>/containerd.sock"). Never matched by name alone.
our_procs() {
	local p pid exe
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		[ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case "$exe" in
		"$S/bin/"*) echo "$pid" ;;
		*/containerd | */containerd-shim-runc-v2 | */containerd-shim* | */prometheus | */docker-registry | */runc | */nsenter | */unshare)
			pid_is_ours "$pid" && echo "$pid"
			;;
		esac
	done
}

# our_cgroup_dirs: every cgroup directory of ours, in each v1 hierarchy and the unified tree.
our_cgroup_dirs() {
	local h c
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		for c in "${OUR_CGROUPS[@]}"; do
			[ -d "$h$c" ] && echo "$h$c"
		done
	done
	true
}

# our_mounts: host mount points under the state dir, deepest first.
our_mounts() {
	awk -v s="$S/" '{ mp=$5; gsub(/\\040/, " ", mp); if (index(mp, s) == 1 || mp"/" == s) print mp }' /proc/self/mountinfo |
		awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

# our_chains IPT TABLE: chain names of ours in one table.
our_chains() {
	"$1" -w 5 -t "$2" -S 2>/dev/null | awk '$1 == "-N" { print $2 }' | grep -E "$OUR_CHAIN_RE" || true
}

iptables_cmds() {
	local c
	for c in iptables ip6tables; do command -v "$c" >/dev/null && echo "$c"; done
	true
}
