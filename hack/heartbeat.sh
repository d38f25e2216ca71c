# shellcheck shell=bash
# heartbeat.sh: with_heartbeat, for every script `make demo` runs (sourced, never run): hack/install-deps.sh,
# hack/localcluster/demo.sh, and through hack/localcluster/lib.sh every cluster and local-Istio script. A newcomer's
# first `make demo` waits on cold builds, package installs and downloads for many minutes; none of them may be silent
# for more than a minute (hack/mk's TestDemoLongStepsHaveHeartbeat checks that each one runs under it).

# with_heartbeat WHAT CMD...: run CMD and, while it runs, print a line every MB_HEARTBEAT seconds (default 60) saying
# WHAT is still running and for how long: a cold `go build` of Kubernetes or Istio is silent for 5-30 minutes, and a
# newcomer must not take that for a hang. The line goes through the sourcing script's `log` when it has one, else it
# carries the wall-clock time. The ticker stops with CMD, and on its own if this shell dies; it holds none of the
# scripts' lock fds (8: istio-up, 9: cluster up/down).
with_heartbeat() {
	local what=$1 t0=$SECONDS hb rc=0
	shift
	(
		while sleep "${MB_HEARTBEAT:-60}" && kill -0 $$ 2>/dev/null; do
			_heartbeat_line "... still $what ($((SECONDS - t0)) s so far)"
		done
	) 8>&- 9>&- &
	hb=$!
	"$@" || rc=$?
	kill "$hb" 2>/dev/null || true
	wait "$hb" 2>/dev/null || true
	return "$rc"
}

_heartbeat_line() {
	if declare -F log >/dev/null; then
		log "$1"
	else
		printf '[%s] %s\n' "$(date +%H:%M:%S)" "$1" >&2
	fi
}
