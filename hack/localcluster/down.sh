#!/usr/bin/env bash
# down.sh (make cluster-down): stop the local cluster and remove everything it created on the host (processes,
# mounts, namespaces, links, routes, iptables chains, cgroups, sysctl changes, directories). Works the same after
# a clean up, a failed up, or a kill -9 of everything; running it twice is fine. $S/bin (the build cache) is kept.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=teardown.sh
source "$LC_DIR/teardown.sh"

require_root
if [ ! -d "$S" ]; then
	log "no state dir $S: sweeping host-wide leftovers only"
	mkdir -p "$S"
fi
exec 9>"$S/.lock"
flock -n 9 || die "another cluster-up/cluster-down is running on $S"
teardown_all
# Free the disk (data is recreated on every up anyway); the build cache in $S/bin stays.
[ -z "$(our_mounts)" ] && rm -rf --one-file-system "$S"/{data,run,logs,pki,kubeconfig,conf,build}
log "cluster down ($(elapsed)s); run 'make cluster-check-clean' to verify nothing is left"
