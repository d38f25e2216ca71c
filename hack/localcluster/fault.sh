#!/usr/bin/env bash
# fault.sh: inject a fault into one daemon of the RUNNING local cluster (the fault-matrix e2e tests, make faults).
#
#   fault.sh stop NAME            stop the daemon (SIGTERM, then SIGKILL), keeping what it needs to start again
#   fault.sh start NAME           start it again exactly as it ran (same command line, same namespaces); for
#                                 kube-apiserver and prometheus, return once it is ready again (up to 120 s)
#   fault.sh restart NAME SECONDS stop, stay down SECONDS, start again
#   fault.sh alive NAME           exit 0 when the daemon runs
#
# NAME is a daemon of $S/run/pids (kube-apiserver, prometheus, kubelet-node2, ...). The command line is taken from
# the running process (/proc/PID/cmdline) at stop time and kept in $S/run/fault/NAME.cmd, so a start never guesses
# flags that up.sh owns; node daemons are started again inside their node's namespaces (ns_cmd). down.sh removes
# $S/run with everything else, and cluster-up starts any daemon a killed test left stopped.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage() { die "usage: fault.sh stop|start|alive NAME | restart NAME SECONDS"; }

saved() { echo "$S/run/fault/$1.cmd"; }

fault_stop() {
	local name=$1 f pid
	f=$(pidfile "$name")
	[ -f "$f" ] || die "no pid file for $name (is the cluster up? daemons: $(ls "$S/run/pids" 2>/dev/null | sed 's/\.pid$//' | tr '\n' ' '))"
	pid=$(cat "$f")
	pid_is_ours "$pid" || die "$name (pid $pid) is not running"
	mkdir -p "$S/run/fault"
	cp "/proc/$pid/cmdline" "$(saved "$name")"
	stop_daemon "$name" 3 # a fault, not a shutdown: SIGKILL after 3 s
}

fault_start() {
	local name=$1 cmd=() node
	[ -f "$(saved "$name")" ] || die "$name was not stopped by fault.sh: nothing to start"
	daemon_alive "$name" && { log "$name already runs"; return 0; }
	mapfile -d '' -t cmd <"$(saved "$name")"
	NS_CMD=()
	case "$name" in
	kubelet-* | kube-proxy-* | containerd-*)
		node=${name#*-}
		node=${node#proxy-}
		ns_cmd "$node"
		;;
	esac
	start_daemon "$name" "${NS_CMD[@]}" "${cmd[@]}"
	rm -f "$(saved "$name")"
	log "started $name again (pid $(cat "$(pidfile "$name")"))"
	# The fault is the time the daemon was down: what comes after it must meet the daemon as up.sh left it.
	case "$name" in
	kube-apiserver)
		wait_for 120 "kube-apiserver /readyz" bash -c '[ "$(curl -sf --max-time 5 --cacert "$1/pki/ca.crt" --cert "$1/pki/admin.crt" --key "$1/pki/admin.key" "$2/readyz")" = ok ]' _ "$S" "$APISERVER_URL"
		;;
	prometheus) wait_for 120 "prometheus /-/ready" curl -sf --max-time 3 -o /dev/null "$PROM_URL/-/ready" ;;
	esac
}

[ $# -ge 2 ] || usage
case "$1" in
stop) fault_stop "$2" ;;
start) fault_start "$2" ;;
restart)
	[ $# -eq 3 ] || usage
	fault_stop "$2"
	sleep "$3"
	fault_start "$2"
	;;
alive) daemon_alive "$2" ;;
*) usage ;;
esac
